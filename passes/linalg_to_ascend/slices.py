"""`tensor.extract_slice`, `tensor.insert_slice` and `tensor.concat` as
`ascend.slice` / `ascend.insert_slice` (Slice, Split, Concat, Pad's copy).

Static offsets, sizes and strides only (what torch-mlir emits for constant
starts/ends/axes/steps). A rank-reducing extract_slice is a slice of the full
rank followed by a reshape view. A concat is one insert_slice per operand
into the result's buffer; an all-constant one was folded on the host before
it got here.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from npu.ir import NUMPY_DTYPES
from npu.passes.linalg_to_ascend.emitter import Buf, i64_array
from npu.passes.linalg_to_ascend.structure import UnsupportedOp, tensor_shape
from npu.passes.linalg_to_ascend.values import Tensor


def _static(op: ir.Operation, name: str) -> list[int]:
    values = list(ir.DenseI64ArrayAttr(op.attributes[name]))
    if any(v == ir.ShapedType.get_dynamic_size() or v == ir.ShapedType.get_dynamic_stride_or_offset()
           for v in values) or len(op.operands) > 2:
        raise UnsupportedOp(op, f"'{name}' computed at run time (only constant slices compile)")
    return [int(v) for v in values]


class SliceLowering:
    """Mixed into the Converter (uses its nd / dest / tensors / em)."""

    def extract_slice(self, op: ir.Operation) -> None:
        loc = self.loc(op)
        offsets, sizes, strides = (_static(op, f"static_{k}") for k in ("offsets", "sizes", "strides"))
        src = self.nd(op.operands[0], loc)
        shape = tuple(tensor_shape(op.results[0]))
        if list(sizes) == list(src.shape) and all(s == 1 for s in strides):
            self.tensors[op.results[0]] = Tensor(shape, src.dtype, nd=self.em.reshape(src, shape, loc))
            return
        out = self.dest(op.results[0], sizes, src.dtype, loc)
        self.em.op("ascend.slice", [src, out], loc, offsets=i64_array(offsets),
                   strides=i64_array(strides))
        self.tensors[op.results[0]] = Tensor(shape, src.dtype, nd=self.em.reshape(out, shape, loc))

    def insert_slice(self, op: ir.Operation) -> None:
        loc = self.loc(op)
        offsets, sizes, strides = (_static(op, f"static_{k}") for k in ("offsets", "sizes", "strides"))
        if any(s != 1 for s in strides):
            raise UnsupportedOp(op, f"insert_slice with strides {strides} (only unit strides)")
        shape = tuple(tensor_shape(op.results[0]))
        out = self._filled(op.operands[1], op.results[0], shape, loc)
        src = self.nd(op.operands[0], loc)
        self.em.op("ascend.insert_slice", [self.em.reshape(src, sizes, loc), out], loc,
                   offsets=i64_array(offsets))
        self.tensors[op.results[0]] = Tensor(shape, out.dtype, nd=out)

    def concat(self, op: ir.Operation) -> None:
        loc = self.loc(op)
        axis = ir.IntegerAttr(op.attributes["dim"]).value
        shape = tuple(tensor_shape(op.results[0]))
        parts = [self.nd(v, loc) for v in op.operands]
        out = self.dest(op.results[0], shape, parts[0].dtype, loc)
        start = 0
        for part in parts:
            if part.shape[axis]:
                offsets = [start if d == axis else 0 for d in range(len(shape))]
                self.em.op("ascend.insert_slice", [part, out], loc, offsets=i64_array(offsets))
            start += part.shape[axis]
        self.tensors[op.results[0]] = Tensor(shape, out.dtype, nd=out)

    def _filled(self, init: ir.Value, result: ir.Value, shape, loc: str) -> Buf:
        """The buffer of `result` holding `init` (insert_slice's destination)."""
        t = self.tensors[init]
        out = self.dest(result, shape, t.dtype, loc)
        if t.is_constant:
            flat = np.asarray(t.array).reshape(-1)
            if flat.size and np.all(flat == flat[0]):
                one = self.em.constant(np.full([1] * len(shape), flat[0], NUMPY_DTYPES[t.dtype]))
                self.em.op("ascend.broadcast", [one, out], loc)
                return out
        src = self.nd(init, loc)
        self.em.op("ascend.insert_slice", [src, out], loc, offsets=i64_array([0] * len(shape)))
        return out
