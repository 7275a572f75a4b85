"""Matmuls on the cube, and the layout choice around them.

Operands are cast to f16 and fractalized to Nz (constant weights on the host
at compile time, so they arrive laid out); the f32 Nz result stays Nz while
only matmuls consume it (cast to f16 in its Nz shape) and is defractalized
once, lazily, for the first consumer that needs row-major data
(`Converter.nd`). Transposed operands (Gemm transB, attention's K^T) are
transposed on the host when constant, by `ascend.transpose` otherwise.
"""

from __future__ import annotations

import math

import numpy as np
from mlir import ir

from npu.dialects.ascend import fractalized_shape
from npu.passes.linalg_to_ascend.structure import (Structured, UnsupportedOp, element_name, tensor_shape,
                                    to_loop_space)
from npu.passes.linalg_to_ascend.elementwise import BodyLowering, Unreadable
from npu.passes.linalg_to_ascend.emitter import Buf, i64_array
from npu.passes.linalg_to_ascend.values import Tensor
from npu.ir import NUMPY_DTYPES
from npu.reference import fractalize
from npu.target import get_target


def is_zero(array: np.ndarray) -> bool:
    return bool(np.all(array == 0))


def _within_f16(array: np.ndarray) -> bool:
    """Every value finite and within f16's range (none becomes inf), from the
    extremes: counting the values past it element by element took 0.2 CPU s
    of BERT-12's 85M weights. (NaN extremes compare False: counted then.)"""
    if not array.size:
        return True
    return bool(-F16_MAX <= array.min()) and bool(array.max() <= F16_MAX)


F16_MAX = 65504.0  # the largest finite f16


class _Synthetic:
    """A dictionary key for a tensor the conversion makes (a transposed operand)."""


class MatmulLowering:
    """Mixed into `Converter` (uses its tensors, emitter, nd and dest)."""

    def host_f16(self, array: np.ndarray) -> np.ndarray:
        """A constant operand cast to f16 for the cube. Values past f16's
        range become inf: one located warning for the op (numpy's own
        RuntimeWarning is no diagnostic and names nothing)."""
        with np.errstate(over="ignore", invalid="ignore"):
            half = array.astype(np.float16)
        over = 0 if _within_f16(array) else int(np.count_nonzero(np.isinf(half) & np.isfinite(array)))
        if over:
            self.warn(f"{over} of {array.size} values of a constant matmul operand exceed the f16 "
                      f"range (|x| > 65504, largest {float(np.nanmax(np.abs(array))):.3g}) and become "
                      "inf on the cube")
        return half

    def nz16(self, value: ir.Value, matrix_shape, loc: str, clean: bool = False) -> Buf:
        """`value` (viewed as `matrix_shape` = [batch?, R, C]) in Nz f16 for
        the cube; `clean`: its padding rows must be zeros (they are the
        matmul's K), so an Nz result with dirty padding goes through ND."""
        t = self.tensors[value]
        dirty = clean and t.dirty_rows
        if t.nz16 is not None and t.nz_nd_shape == tuple(matrix_shape) and not dirty:
            return t.nz16
        nz_shape = fractalized_shape(matrix_shape)
        if t.array is not None:
            host = fractalize(self.host_f16(t.array.reshape(matrix_shape)), nz_shape)
            t.nz16 = self.em.constant(host)
        elif t.nz is not None and t.nz_nd_shape == tuple(matrix_shape) and not dirty:
            t.nz16 = self.em.alloc(nz_shape, "f16", loc)
            self.em.op("ascend.cast", [t.nz, t.nz16], loc, round_mode='"rint"')
        else:
            src = self.em.reshape(self.nd(value, loc), matrix_shape, loc)
            if src.dtype != "f16":
                half = self.em.alloc(matrix_shape, "f16", loc)
                self.em.op("ascend.cast", [src, half], loc, round_mode='"rint"')
                src = half
            out = self.em.alloc(nz_shape, "f16", loc)
            self.em.op("ascend.fractalize", [src, out], loc)
            if dirty:  # not cached: the dirty-padded cast stays the M operands' copy
                return out
            t.nz16 = out
        t.nz_nd_shape = t.nz_nd_shape or tuple(matrix_shape)
        return t.nz16

    # -- matmul ----------------------------------------------------------------
    def _contraction(self, op, s: Structured) -> bool:
        """A generic whose body is out + a * b over one reduction loop."""
        body = op.regions[0].blocks[0]
        names = [o.name for o in body.operations]
        return (len(s.inputs) == 2 and len(s.outputs) == 1 and len(s.reduction_dims) == 1
                and names == ["arith.mulf", "arith.addf", "linalg.yield"])

    def matmul(self, op, s: Structured) -> None:
        loc = self.loc(op)
        a_map, b_map, c_map = s.maps
        if None in a_map + b_map + c_map or len(s.reduction_dims) != 1:
            raise UnsupportedOp(op, "contraction maps are not plain permutations over one reduction")
        k = s.reduction_dims[0]
        batch = [d for d in c_map if d in a_map and d in b_map]
        ms = [d for d in c_map if d in a_map and d not in b_map]
        ns = [d for d in c_map if d in b_map and d not in a_map]
        if len(ms) != 1 or len(ns) != 1 or c_map != batch + ms + ns:
            raise UnsupportedOp(op, "contraction is not [batch..., M, N] = A[batch..., M, K] x B[batch..., K, N]")
        m, n = ms[0], ns[0]
        sizes = s.loop_sizes
        nb = int(np.prod([sizes[d] for d in batch])) if batch else 1
        lead = [nb] if nb > 1 else []  # batch loops collapse to one; a batch of 1 is a matmul
        if self.int8_matmul(op, s, batch, m, n, k, lead):
            return
        a_nz = self._cube_operand(op, s.inputs[0], a_map, batch + [m, k], lead + [sizes[m], sizes[k]], loc)
        b_nz = self._cube_operand(op, s.inputs[1], b_map, batch + [k, n], lead + [sizes[k], sizes[n]],
                                  loc, clean=True)
        c_nd_shape = tuple(lead + [sizes[m], sizes[n]])
        c = self.em.alloc(fractalized_shape(c_nd_shape), "f32", loc)
        self.em.op("ascend.batch_matmul" if lead else "ascend.matmul", [a_nz, b_nz, c], loc)
        result = op.results[0]
        out_dtype = element_name(result)
        if out_dtype != "f32":
            raise UnsupportedOp(op, f"matmul result type {out_dtype}: the cube accumulates in f32")
        t = Tensor(tuple(tensor_shape(result)), "f32", nz=c, nz_loc=loc)
        t.nz_nd_shape = c_nd_shape
        self.tensors[result] = t
        init = self.tensors.get(s.outputs[0])
        if init is not None and not (init.is_constant and is_zero(init.array)):
            acc = self.nd(result, loc)
            total = self.dest(result, t.shape, "f32", loc)
            self.em.op("ascend.add", [acc, self.nd(s.outputs[0], loc), total], loc)
            self.tensors[result] = Tensor(t.shape, "f32", nd=total)

    def _cube_operand(self, op, value, op_map, want_dims, matrix_shape, loc,
                      clean: bool = False) -> Buf:
        t = self.tensors[value]
        missing = [d for d in want_dims if d not in op_map]
        if missing:
            raise UnsupportedOp(op, f"a matmul operand broadcast along batch loops {missing}")
        perm = [op_map.index(d) for d in want_dims]
        if perm == sorted(perm) and perm == list(range(len(perm))):
            return self.nz16(value, matrix_shape, loc, clean)
        if t.is_constant:
            host = Tensor(t.shape, t.dtype, array=np.ascontiguousarray(np.transpose(t.array, perm)))
        else:
            src = self.nd(value, loc)
            out = self.em.alloc([src.shape[p] for p in perm], src.dtype, loc)
            self.em.op("ascend.transpose", [src, out], loc, permutation=i64_array(perm))
            host = Tensor(out.shape, out.dtype, nd=out)
        key = _Synthetic()
        self.tensors[key] = host
        return self.nz16(key, matrix_shape, loc)


    # -- elementwise ops between matmuls stay in Nz ------------------------------
    def elementwise_in_nz(self, op, s: Structured) -> bool:
        """An elementwise generic over matmul results (bias add, GELU between
        the two FFN matmuls) runs on their Nz buffers: elementwise ops do not
        care about the order of elements, so no defractalize / fractalize pair
        is needed. Only when the matrices are whole fractals (Nz has no
        padding whose values would change), every tensor operand is an
        Nz-only matmul result read with the identity map or a constant, and
        the output map is the identity. Rows that are not whole fractals
        (ViT's 197 tokens) qualify: the op then also computes the padding
        rows (from zeros), which only matter where the result is a matmul's
        K (`nz16` with `clean`: through ND then). Returns False (nothing
        emitted) otherwise."""
        n = len(s.loop_sizes)
        f = get_target().fractal
        if n < 2 or len(s.outputs) != 1 or len(op.results) != 1:
            return False
        rows, cols = s.loop_sizes[-2:]
        batch = int(np.prod(s.loop_sizes[:-2], dtype=np.int64))
        identity = list(range(n))
        dtype = element_name(op.results[0])  # f32, or i32 after an int8 matmul
        if cols % f or s.maps[-1] != identity or dtype not in ("f32", "i32"):
            return False
        matrix = tuple(([batch] if batch > 1 else []) + [rows, cols])
        flat = self._rows_of_nz(s, cols)
        if flat:  # rows regrouped over several dims ([1, H, W, C]): one matrix of their rows
            matrix, batch = (flat, cols), 1
        kinds = []
        for v, m in zip(s.inputs, s.maps):
            t = self.tensors.get(v)
            if v in self.scalars or (t is not None and t.is_constant):
                kinds.append("host")
            elif (t is not None and t.nd is None and t.nz is not None and m == identity
                  and t.nz_nd_shape == matrix):
                kinds.append("nz")
            else:
                return False
        if "nz" not in kinds:
            return False
        loc = self.loc(op)
        nz_shape = tuple(fractalized_shape(matrix))
        args = []
        for v, m, kind in zip(s.inputs, s.maps, kinds):
            if kind == "nz":
                args.append(self.tensors[v].nz)
            elif v in self.scalars:
                args.append(self.scalars[v])
            else:
                array, lead = to_loop_space(self.tensors[v].array, m, n), tuple(s.loop_sizes[:-2])
                if flat:  # a row broadcast stays one row; anything else is the whole matrix
                    array = (array.reshape(1, -1) if math.prod(array.shape[:-1]) == 1
                             else np.broadcast_to(array, s.loop_sizes).reshape(matrix))
                    lead = ()
                args.append(self._nz_constant(array, matrix, nz_shape, lead, dtype))
        body = op.regions[0].blocks[0]
        lowering = BodyLowering(self.em, loc, len(nz_shape), self.scalar)
        (term,) = lowering.run(body, args + [Unreadable()], [list(body.operations)[-1].operands[0]])
        if not isinstance(term, Buf) or term.shape != nz_shape:
            full = self.em.alloc(nz_shape, dtype, loc)
            self.em.op("ascend.broadcast", [lowering.buffer(term, dtype), full], loc)
            term = full
        t = Tensor(tuple(tensor_shape(op.results[0])), dtype, nz=term, nz_loc=loc,
                   dirty_rows=rows % f != 0)
        t.nz_nd_shape = matrix
        self.tensors[op.results[0]] = t
        return True

    def _rows_of_nz(self, s: Structured, cols: int) -> int:
        """The rows of the 2-D Nz matmul result an elementwise op over more
        than two loop dims reads (its rows regrouped by `reshape_nz`), when
        all its dims but the last are that result's rows; else 0."""
        rows = math.prod(s.loop_sizes[:-1])
        if len(s.loop_sizes) < 3 or math.prod(s.loop_sizes[:-2]) == 1:
            return 0
        for v in s.inputs:
            t = self.tensors.get(v)
            if t is not None and t.nd is None and t.nz is not None and t.nz_nd_shape == (rows, cols):
                return rows
        return 0

    def _nz_constant(self, array: np.ndarray, matrix, nz_shape, lead: tuple[int, ...],
                     dtype: str = "f32") -> float | Buf:
        """A constant (loop-space shape, broadcastable) in the Nz order of
        `matrix`: a scalar, or the whole matrix broadcast and fractalized on
        the host. A bias row could stay a [N1, 1, 1, 16] vector, but the
        vector lowerings broadcast along outer axes slice by slice: on a
        128x256x1024 FFN the full constant measured 129k cycles against 150k
        (row vector) and 147k (the ND path with defractalize/fractalize).
        `lead`: the loop sizes before the matrix's two (the constant may
        broadcast along them too)."""
        flat = array.reshape(-1)
        if np.all(flat == flat[0]):
            return flat[0].item()
        rows, cols = matrix[-2:]
        if array.shape[-2] == 1:  # a row broadcast: the padding rows too (they are dirty
            rows = nz_shape[-3] * nz_shape[-1]  # anyway), so the constant stays one row
        full = np.broadcast_to(array, tuple(lead) + (rows, cols)).reshape(matrix[:-2] + (rows, cols))
        return self.em.constant(fractalize(full.astype(NUMPY_DTYPES[dtype]), nz_shape))
