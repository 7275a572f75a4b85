"""The cube unit: `cce.mad` on fractal operands.

A (m x n) is read from L0A in Zz, B (n x k) from L0B in Zn, C (m x k) is
read (when accumulating) and written in L0C in Nz; see dialects/README.md.
fp16 x fp16 products are exact in fp32 and accumulate in fp32 (numpy's fp32
matmul; the summation order differs from the hardware's, well within fp32
rounding); int8 x int8 accumulates exactly in int32.

Cost: ceil(m/16) * ceil(k/16) * ceil(n/16) block products (n steps by 32
for int8) at `Target.cube_cycles`, plus `mad_latency`.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from npu.simulator import access
from npu.simulator.instruction import Access, DecodeContext, Instr
from npu.simulator.memory import Memory

# (m1, n1, k1, edge, n_edge, input type) -> conversion and product buffers
_SCRATCH: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

# fp32 value of every fp16 bit pattern, indexed by the pattern
F16_TO_F32 = np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float32)
CUBE_TYPES = {("f16", "f16", "f32"), ("i8", "i8", "i32"), ("f16", "f16", "f16")}


class Mad(Instr):
    def __init__(self, ctx: DecodeContext):
        ctx.expect_operands("l0a", "l0b", "l0c")
        super().__init__(ctx, "M")
        t = ctx.target
        types = tuple(o.dtype for o in ctx.operands)
        if types not in CUBE_TYPES:
            raise ctx.fail(f"has unsupported operand types {types}: the cube computes "
                           f"f16 x f16 -> f32 and i8 x i8 -> i32")
        m, n, k = ctx.int("m"), ctx.int("n"), ctx.int("k")
        self.accumulate = ctx.bool("accumulate")
        edge = t.fractal
        n_edge = t.fractal_k_int8 if types[0] == "i8" else edge
        if m < 1 or n < 1 or k < 1:
            raise ctx.fail(f"needs positive m, n, k, got m={m} n={n} k={k}")
        # Whole fractals are read and written; partial edges are padding.
        self.m1, self.n1, self.k1 = -(-m // edge), -(-n // n_edge), -(-k // edge)
        self.edge, self.n_edge = edge, n_edge
        self.in_dtype, self.out_dtype = types[0], types[2]
        in_size, out_size = ctx.operands[0].esize, ctx.operands[2].esize
        a_bytes = self.m1 * self.n1 * edge * n_edge * in_size
        b_bytes = self.n1 * self.k1 * n_edge * edge * in_size
        c_bytes = self.m1 * self.k1 * edge * edge * out_size
        aligns = [t.granule(s) for s in ("l0a", "l0b", "l0c")]
        accesses = [Access(0, access.dense(a_bytes, in_size), False, aligns[0]),
                    Access(1, access.dense(b_bytes, in_size), False, aligns[1])]
        c_pat = access.dense(c_bytes, out_size)
        if self.accumulate:
            accesses.append(Access(2, c_pat, False, aligns[2]))
        accesses.append(Access(2, c_pat, True, aligns[2]))
        self.accesses = tuple(accesses)
        self.sizes = (a_bytes // in_size, b_bytes // in_size, c_bytes // out_size)
        self.blocks = self.m1 * self.k1 * -(-n // n_edge)
        self.occupancy = t.cube_cycles(self.blocks)
        self.latency = t.mad_latency

    def compute(self, mems: list[Memory], addrs: list[int]) -> None:
        self.product(*self._views(mems, addrs))

    def bound(self, mems: list[Memory], addrs: list[int]):
        return partial(self.product, *self._views(mems, addrs))

    def product(self, a_zz: np.ndarray, b_zn: np.ndarray, c_nz: np.ndarray) -> None:
        """C (Nz) = or += A (Zz) x B (Zn), given as views (`_views`)."""
        a, b, prod = self._scratch()
        # One conversion each straight into the row-major operands of one product
        # (fp16 A through a table: numpy converts 16-element runs slowly).
        if self.in_dtype == "f16":
            np.take(F16_TO_F32, a_zz, out=a)
        else:
            np.copyto(a, a_zz, casting="unsafe")
        np.copyto(b, b_zn, casting="unsafe")
        np.matmul(a.reshape(self.m1 * self.edge, -1), b.reshape(-1, self.k1 * self.edge), out=prod)
        # Nz: block (i, l) at fractal index l*m1 + i, row-major inside.
        out = prod.reshape(self.m1, self.edge, self.k1, self.edge).transpose(2, 0, 1, 3)
        if not self.accumulate:
            c_nz[...] = out
        elif c_nz.dtype == prod.dtype:
            c_nz += out
        else:
            c_nz[...] = (c_nz.astype(prod.dtype) + out).astype(c_nz.dtype)

    def _views(self, mems: list[Memory], addrs: list[int]) -> tuple:
        """A (Zz), B (Zn) as row-major-ordered views, C as its Nz fractals."""
        m1, n1, k1, e, ne = self.m1, self.n1, self.k1, self.edge, self.n_edge
        na, nb, nc = self.sizes
        a_at, b_at, c_at = (addrs[0] // self.operands[0].esize, addrs[1] // self.operands[1].esize,
                            addrs[2] // self.operands[2].esize)
        a_raw = mems[0].typed[self.in_dtype][a_at:a_at + na]
        if self.in_dtype == "f16":
            a_raw = a_raw.view(np.uint16)  # indices into F16_TO_F32
        b_raw = mems[1].typed[self.in_dtype][b_at:b_at + nb]
        c_view = mems[2].typed[self.out_dtype][c_at:c_at + nc]
        # Zz: block (i, j) row-major inside; Zn: block (j, l) column-major inside.
        return (a_raw.reshape(m1, n1, e, ne).transpose(0, 2, 1, 3),
                b_raw.reshape(n1, k1, e, ne).transpose(0, 3, 1, 2),
                c_view.reshape(k1, m1, e, e))

    def _scratch(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Operand and product buffers of this shape, shared by the mads that have it."""
        m1, n1, k1, e, ne = self.m1, self.n1, self.k1, self.edge, self.n_edge
        key = (m1, n1, k1, e, ne, self.in_dtype)
        bufs = _SCRATCH.get(key)
        if bufs is None:
            acc = np.int32 if self.in_dtype == "i8" else np.float32
            bufs = _SCRATCH[key] = (np.empty((m1, e, n1, ne), acc), np.empty((n1, ne, k1, e), acc),
                                    np.empty((m1 * e, k1 * e), acc))
        return bufs

def decoders() -> dict:
    return {"cce.mad": Mad}
