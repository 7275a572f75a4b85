"""Integer matmuls on the int8 cube.

torch-mlir imports an ONNX `MatMulInteger` without zero points as a
`linalg.matmul` of i8 operands into i32, and other integer matmuls as a sign
extension of each operand, a `linalg.matmul` accumulating in i64 and a
truncation of the result to i32. Either becomes one `ascend.matmul` i8 x i8
-> i32: the extension of a run-time int8 tensor is only recorded
(`Tensor.widened`, made on the device only if something else reads it), a
constant operand whose values fit int8 is fractalized on the host, and the
truncation is the i32 result itself (the cube's i32 accumulator wraps as
the truncation would).
Zero points never reach this point: `onnx_matmul_integer` rewrites them into
a correction of the result.
"""

from __future__ import annotations

import numpy as np

from npu.dialects.ascend import fractalized_shape
from npu.dialects.ascend_int8 import matmul_blocks
from npu.passes.linalg_to_ascend.emitter import Buf
from npu.passes.linalg_to_ascend.structure import (Structured, UnsupportedOp, element_name,
                                                   tensor_shape)
from npu.passes.linalg_to_ascend.values import Tensor
from npu.reference import fractalize
from npu.target import get_target

INT_RESULTS = ("i32", "i64")
CONTRACTION_NAMES = ("linalg.matmul", "linalg.batch_matmul")


def _body_names(op) -> list[str]:
    return [o.name for o in op.regions[0].blocks[0].operations]


class Int8MatmulLowering:
    """Mixed into `Converter` (uses its tensors, emitter and nd)."""

    def widening(self, op, s: Structured) -> bool:
        """An elementwise generic that only sign-extends a run-time int8 tensor
        read by contractions alone: recorded as that tensor (`Tensor.widened`),
        nothing emitted. False (nothing recorded) otherwise."""
        if _body_names(op) != ["arith.extsi", "linalg.yield"] or len(s.inputs) != 1:
            return False
        src = self.tensors.get(s.inputs[0])
        n = len(s.loop_sizes)
        if src is None or src.is_constant or src.dtype != "i8" or any(
                m != list(range(n)) for m in s.maps):
            return False
        result = op.results[0]
        if not all(u.owner.name in CONTRACTION_NAMES for u in result.uses):
            return False
        self.tensors[result] = Tensor(tuple(tensor_shape(result)), element_name(result),
                                      widened=s.inputs[0])
        return True

    def truncation_of_int8_matmul(self, op, s: Structured) -> bool:
        """`trunci` i64 -> i32 of an int8 matmul's result: that i32 result."""
        if _body_names(op) != ["arith.trunci", "linalg.yield"] or len(s.inputs) != 1:
            return False
        src = self.tensors.get(s.inputs[0])
        if src is None or src.dtype != "i32" or src.nz is None or \
                element_name(op.results[0]) != "i32":
            return False
        self.tensors[op.results[0]] = src
        return True

    def int8_of_nz(self, op, s: Structured) -> bool:
        """`fptosi` to int8 of a matmul result held only in Nz (f32): rounded
        toward zero to f16 in Nz (a cast `npu-fuse` joins to the matmul's
        epilogue), defractalized as f16 (half the bytes of f32, and an f16
        row of 3072 fits UB where an f32 one does not; the epilogue absorbs
        it as a row-major store) and narrowed to int8 in ND, where the next
        int8 matmul's fractalize reads it. Truncating to f16 first never
        crosses an integer, and anything f16 holds beyond the int8 range
        saturates as the value itself would: the same int8 as fptosi."""
        if _body_names(op) != ["arith.fptosi", "linalg.yield"] or len(s.inputs) != 1:
            return False
        t = self.tensors.get(s.inputs[0])
        n = len(s.loop_sizes)
        if t is None or t.nd is not None or t.nz is None or t.dtype != "f32" or \
                element_name(op.results[0]) != "i8" or any(m != list(range(n)) for m in s.maps):
            return False
        loc = self.loc(op)
        half = self.em.alloc(t.nz.shape, "f16", loc)
        self.em.op("ascend.cast", [t.nz, half], loc, round_mode='"trunc"')
        nd_half = self.em.alloc(t.nz_nd_shape, "f16", loc)
        self.em.op("ascend.defractalize", [half, nd_half], loc)
        shape = tuple(tensor_shape(op.results[0]))
        out = self.dest(op.results[0], t.nz_nd_shape, "i8", loc)
        self.em.op("ascend.cast", [nd_half, out], loc, round_mode='"trunc"')
        self.tensors[op.results[0]] = Tensor(shape, "i8", nd=self.em.reshape(out, shape, loc))
        return True

    def int8_matmul(self, op, s: Structured, batch: list[int], m: int, n: int, k: int,
                    lead: list[int]) -> bool:
        """[batch..., M, N] = A[batch..., M, K] x B[batch..., K, N] with integer
        operands and result, on the int8 cube; False for a float matmul."""
        result = op.results[0]
        if element_name(result) not in INT_RESULTS:
            return False
        loc = self.loc(op)
        sizes = s.loop_sizes
        a_map, b_map, _ = s.maps
        a = self._int8_operand(op, s.inputs[0], a_map, batch + [m, k],
                               lead + [sizes[m], sizes[k]], "A", loc)
        b = self._int8_operand(op, s.inputs[1], b_map, batch + [k, n],
                               lead + [sizes[k], sizes[n]], "B", loc)
        c_nd_shape = tuple(lead + [sizes[m], sizes[n]])
        c = self.em.alloc(fractalized_shape(c_nd_shape), "i32", loc)
        self.em.op("ascend.batch_matmul" if lead else "ascend.matmul", [a, b, c], loc)
        init = self.tensors.get(s.outputs[0])
        if init is None or not init.is_constant or np.any(init.array != 0):
            raise UnsupportedOp(op, "an integer matmul accumulating into a non-zero tensor")
        t = Tensor(tuple(tensor_shape(result)), "i32", nz=c, nz_loc=loc)
        t.nz_nd_shape = c_nd_shape
        self.tensors[result] = t
        return True

    def _int8_operand(self, op, value, op_map, want_dims, matrix_shape, which: str,
                      loc: str) -> Buf:
        """An operand in the int8 cube's Nz form: A in 16 x 32 blocks, B in
        32 x 16 (B only as a host constant)."""
        t = self.tensors[value]
        if any(d not in op_map for d in want_dims):
            raise UnsupportedOp(op, "an integer matmul operand broadcast along batch loops")
        perm = [op_map.index(d) for d in want_dims]
        rows, cols = matrix_shape[-2:]
        a_block, b_block, _ = matmul_blocks(("i8", "i8", "i32"), get_target())
        block = a_block if which == "A" else b_block
        nz_shape = list(matrix_shape[:-2]) + [-(-cols // block[1]), -(-rows // block[0])] + \
            list(block)
        if t.is_constant:
            array = np.transpose(t.array, perm).reshape(matrix_shape)
            if array.min(initial=0) < -128 or array.max(initial=0) > 127:
                raise UnsupportedOp(op, f"an integer matmul's constant {which} operand has "
                                    "values outside int8")
            return self.em.constant(fractalize(array.astype(np.int8), nz_shape))
        source = t.widened if t.widened is not None else value if t.dtype == "i8" else None
        if source is None or perm != list(range(len(perm))):
            raise UnsupportedOp(op, f"an integer matmul's {which} operand must be an int8 "
                                "tensor in row-major order")
        if which == "B":
            raise UnsupportedOp(op, "an integer matmul's B operand computed at run time (only "
                                "constant weights are laid out for the int8 cube)")
        if cols % 2:
            raise UnsupportedOp(op, f"an int8 A operand with an odd K ({cols}): the int8 "
                                "fractalize moves bytes in pairs")
        src = self.em.reshape(self.nd(source, loc), matrix_shape, loc)
        out = self.em.alloc(nz_shape, "i8", loc)
        self.em.op("ascend.fractalize", [src, out], loc)
        return out
