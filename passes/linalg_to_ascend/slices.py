"""`tensor.extract_slice`, `tensor.insert_slice` and `tensor.concat` as
`ascend.slice` / `ascend.insert_slice` (Slice, Split, Concat, Pad's copy).

Static offsets, sizes and strides only (what torch-mlir emits for constant
starts/ends/axes/steps). A rank-reducing extract_slice is a slice of the full
rank followed by a reshape view. A concat is one insert_slice per operand
into the result's buffer; an all-constant one was folded on the host before
it got here.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np
from mlir import ir

from npu.ir import NUMPY_DTYPES
from npu.passes.linalg_to_ascend.emitter import Buf, i64_array
from npu.passes.linalg_to_ascend.structure import UnsupportedOp, tensor_shape
from npu.passes.linalg_to_ascend.values import Tensor


# Readers of a concat that take it in NCHW order (a reshape, then a transpose):
# its parts, converted once each, are inserted there (`canonicalize/shuffles.py`).
RESHAPES = ("tensor.expand_shape", "tensor.collapse_shape", "tensor.reshape", "linalg.transpose")


def _static(op: ir.Operation, name: str) -> list[int]:
    values = list(ir.DenseI64ArrayAttr(op.attributes[name]))
    if any(v == ir.ShapedType.get_dynamic_size() or v == ir.ShapedType.get_dynamic_stride_or_offset()
           for v in values) or len(op.operands) > 2:
        raise UnsupportedOp(op, f"'{name}' computed at run time (only constant slices compile)")
    return [int(v) for v in values]


def _whole_block_rows(box, strides) -> bool:
    """Whether the rows of an i8 box are at least one 32-byte block, so
    npu-lower-slices copies them as they are (shorter rows need the gather,
    which moves 2- and 4-byte elements). Conservative: the last dim alone."""
    return bool(box) and strides[-1] == 1 and box[-1] >= 32


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
        narrow = src.dtype == "i8" and not _whole_block_rows(sizes, strides)
        wide_src = self._widened(src, loc) if narrow else src
        wide_out = self.em.alloc(sizes, "f16", loc) if narrow else out
        self.em.op("ascend.slice", [wide_src, wide_out], loc, offsets=i64_array(offsets),
                   strides=i64_array(strides))
        if narrow:
            self.em.op("ascend.cast", [wide_out, out], loc, round_mode='"rint"')
        self.tensors[op.results[0]] = Tensor(shape, src.dtype, nd=self.em.reshape(out, shape, loc))

    def _widened(self, buf: Buf, loc: str) -> Buf:
        """An i8 (bool) tensor as f16 (exact): the element gather of short
        rows moves 2- and 4-byte elements only."""
        wide = self.em.alloc(buf.shape, "f16", loc)
        self.em.op("ascend.cast", [buf, wide], loc, round_mode='"rint"')
        return wide

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
        if self._concat_blocks(op, axis, shape, loc):
            return
        parts = [self.nd(v, loc) for v in op.operands]
        out = self.dest(op.results[0], shape, parts[0].dtype, loc)
        narrow = out.dtype == "i8" and not all(
            _whole_block_rows(p.shape, [1] * len(shape)) for p in parts)
        target = self.em.alloc(shape, "f16", loc) if narrow else out
        start = 0
        for part in parts:
            if part.shape[axis]:
                offsets = [start if d == axis else 0 for d in range(len(shape))]
                part = self._widened(part, loc) if narrow else part
                self.em.op("ascend.insert_slice", [part, target], loc, offsets=i64_array(offsets))
            start += part.shape[axis]
        if narrow:
            self.em.op("ascend.cast", [target, out], loc, round_mode='"rint"')
        self.tensors[op.results[0]] = Tensor(shape, out.dtype, nd=out)

    def _concat_blocks(self, op: ir.Operation, axis: int, shape: tuple, loc: str) -> bool:
        """A channel concat of conv maps held in NC1HWC0, each whole C1
        blocks: their blocks side by side in an NC1HWC0 result (which a conv
        reads as it is, `onnx_conv_sums`), not through NCHW and back. f16
        maps (what a conv reads) where every part has one, else f32 maps
        where every part is one (DenseNet's pool and 3x3 conv results, read
        by a BatchNorm in f32)."""
        parts = [self.tensors.get(v) for v in op.operands]
        if axis != 1 or len(shape) != 4 or any(t is None or t.shape[1] % 16 for t in parts):
            return False
        maps = [t.c1hwc0 if t.c1hwc0 is not None and t.c1hwc0.dtype == "f16" else t.half5
                for t in parts]
        if any(m is None for m in maps):
            if any(u.owner.name in RESHAPES for u in op.results[0].uses):
                return False  # read as NCHW (ShuffleNet's shuffle): its parts go there
            maps = [t.c1hwc0 if t.c1hwc0 is not None and t.c1hwc0.dtype == "f32" else None
                    for t in parts]
            if any(m is None for m in maps):
                return False
        dtype = maps[0].dtype
        size = 2 if dtype == "f16" else 4
        roots = [self.em.root(m) for m in maps]  # the allocs behind reshaped maps
        n, c, h, w = shape
        starts = [sum(t.shape[1] for t in parts[:k]) for k in range(len(parts))]
        raw: list[Buf] = []

        def view(k: int):
            def make() -> Buf:  # the result's bytes (made at the earliest part's alloc)
                if not raw:
                    raw.append(self.em.alloc([n * c * h * w * size], "i8", loc))
                if k < 0:  # an earlier concat's bytes: the prefix of these
                    return self.em.typed_view(raw[0], prefix.shape, "i8", loc)
                return self.em.typed_view(raw[0], roots[k].shape, dtype, loc, starts[k] * h * w * size)
            return make

        # Each part's producer writes straight into its blocks of the result
        # where its map is a temporary of this function (one image: a part's
        # blocks are one run of the result's); the others are copied in.
        # An earlier concat whose parts lead this one's (DenseNet: each
        # layer's input is the one before plus a new map) is the prefix of
        # its bytes, so no concat copies what an earlier one holds.
        # The earliest temporary first: the result's alloc goes there.
        prefix, held = self._concat_prefix(op, dtype) if n == 1 else (None, 0)
        temps = sorted((k for k, r in enumerate(roots) if k >= held
                        and self.em.alloc_index(r) is not None
                        and r.size == maps[k].size), key=lambda k: self.em.alloc_index(roots[k]))
        if prefix is not None:
            temps = sorted(temps + [-1], key=lambda k: self.em.alloc_index(
                prefix if k < 0 else roots[k]))
        placed = {}
        for k in temps if n == 1 else ():
            moved = self.em.retarget(prefix if k < 0 else roots[k], 0, view(k))
            if moved is None:
                continue
            if k < 0:
                placed.update({j: moved for j in range(held)})
                continue
            placed[k] = moved
            self._rename(roots[k], moved)
        out = (self.em.typed_view(raw[0], [n, c // 16, h, w, 16], dtype, loc) if raw
               else self.em.alloc([n, c // 16, h, w, 16], dtype, loc))
        for k, m in enumerate(maps):
            if k not in placed:  # (a retargeted root's reshapes follow it)
                self.em.op("ascend.insert_slice", [m, out], loc,
                           offsets=i64_array([0, starts[k] // 16, 0, 0, 0]))
        if raw:
            self.concat_bytes[raw[0].name] = (tuple(op.operands), dtype, raw[0])
        self.tensors[op.results[0]] = Tensor(shape, dtype, c1hwc0=out)
        return True

    def _concat_prefix(self, op: ir.Operation, dtype: str) -> tuple[Buf | None, int]:
        """The byte buffer of an earlier concat of this function whose parts
        are this one's first (the most of them), and their count; (None, 0)
        when there is none."""
        best: tuple[Buf | None, int] = (None, 0)
        operands = tuple(op.operands)
        for held, kind, buf in self.concat_bytes.values():
            if kind != dtype or self.em.alloc_index(buf) is None or len(held) <= best[1] or \
                    operands[:len(held)] != held or len(held) >= len(operands):
                continue  # (a retargeted buffer is no alloc any more)
            best = (buf, len(held))
        return best

    def _rename(self, old: Buf, new: Buf) -> None:
        """Every tensor held in `old` (an alloc the emitter retargeted) now in `new`."""
        for t in self.tensors.values():
            for f in fields(t):
                if getattr(t, f.name) is old:
                    setattr(t, f.name, new)

    def gather_generic(self, op: ir.Operation) -> bool:
        """A generic that only picks elements at affine indices (GatherGeneric)."""
        match = GatherGeneric(op, self.scalars).match()
        if match is None or match[0] not in self.tensors:
            return False
        value, offsets, strides = match
        loc = self.loc(op)
        src = self.nd(value, loc)
        shape = tuple(tensor_shape(op.results[0]))
        if any(s == 0 for s in strides):
            return False
        out = self.dest(op.results[0], shape, src.dtype, loc)
        self.em.op("ascend.slice", [src, out], loc, offsets=i64_array(offsets),
                   strides=i64_array(strides))
        self.tensors[op.results[0]] = Tensor(shape, src.dtype, nd=out)
        return True

    def _filled(self, init: ir.Value, result: ir.Value, shape, loc: str) -> Buf:
        """The buffer of `result` holding `init` (insert_slice's destination)."""
        t = self.tensors[init]
        out = self.dest(result, shape, t.dtype, loc)
        if t.is_constant:
            flat = np.asarray(t.array).reshape(-1)
            if flat.size and np.all(flat == flat[0]):
                one = self.em.constant(np.full([1] * len(shape), flat[0], NUMPY_DTYPES[t.dtype]))
                self.emit_broadcast(one, out, loc)
                return out
        src = self.nd(init, loc)
        self.em.op("ascend.insert_slice", [src, out], loc, offsets=i64_array([0] * len(shape)))
        return out


class GatherGeneric:
    """A `linalg.generic` whose body only yields `tensor.extract %src[...]`
    at indices `offset + stride * linalg.index d` (torch-mlir's Slice with a
    negative step: a reversal, then a positive-step slice): an ascend.slice."""

    def __init__(self, op: ir.Operation, scalars) -> None:
        self.op, self.scalars = op, scalars

    def match(self):
        """(source value, offsets, strides) or None."""
        body = self.op.regions[0].blocks[0]
        ops = list(body.operations)
        extract = ops[-1].operands[0].owner if len(ops[-1].operands) == 1 else None
        extract = getattr(extract, "operation", extract)
        if getattr(extract, "name", "") != "tensor.extract":
            return None
        if any(o.name not in ("linalg.index", "arith.subi", "arith.addi", "arith.constant",
                              "arith.muli", "tensor.extract", "linalg.yield") for o in ops):
            return None
        offsets, strides = [], []
        out_shape = tensor_shape(self.op.results[0])
        for j, v in enumerate(list(extract.operands)[1:]):
            term = self._affine(v)
            if term is not None and term[2] is None and j < len(out_shape) and out_shape[j] == 1:
                term = (term[0], 1, j)  # a constant index into a size-1 loop
            if term is None or term[2] != j:  # source dim j must follow loop j
                return None
            offsets.append(term[0])
            strides.append(term[1])
        maps = [str(a) for a in self.op.attributes["indexing_maps"]]
        rank = len(offsets)
        if rank != len(tensor_shape(self.op.results[0])) or len(set(maps)) != 1:
            return None
        return extract.operands[0], offsets, strides

    def _affine(self, v):
        """(offset, stride, loop dim) of an index expression, or None."""
        owner = v.owner
        if isinstance(owner, ir.Block):
            return None
        owner = getattr(owner, "operation", owner)
        if v in self.scalars:
            return (int(self.scalars[v]), 0, None)
        if owner.name == "linalg.index":
            return (0, 1, ir.IntegerAttr(owner.attributes["dim"]).value)
        if owner.name == "arith.constant":
            return (int(ir.IntegerAttr(owner.attributes["value"]).value), 0, None)
        if owner.name in ("arith.addi", "arith.subi", "arith.muli"):
            a, b = self._affine(owner.operands[0]), self._affine(owner.operands[1])
            if a is None or b is None:
                return None
            if owner.name == "arith.muli":
                if a[2] is not None and b[2] is not None:
                    return None
                c, t = (b[0], a) if b[2] is None else (a[0], b)
                return (t[0] * c, t[1] * c, t[2])
            sign = 1 if owner.name == "arith.addi" else -1
            if a[2] is not None and b[2] is not None:
                return None
            return (a[0] + sign * b[0], a[1] + sign * b[1], a[2] if a[2] is not None else b[2])
        return None
