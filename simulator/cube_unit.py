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

import numpy as np

from npu.simulator import access
from npu.simulator.instruction import Access, DecodeContext, Instr
from npu.simulator.memory import Memory

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
        m1, n1, k1, e, ne = self.m1, self.n1, self.k1, self.edge, self.n_edge
        na, nb, nc = self.sizes
        a_at, b_at, c_at = (addrs[0] // self.operands[0].esize, addrs[1] // self.operands[1].esize,
                            addrs[2] // self.operands[2].esize)
        a_raw = mems[0].typed[self.in_dtype][a_at:a_at + na]
        b_raw = mems[1].typed[self.in_dtype][b_at:b_at + nb]
        # Zz: block (i, j) row-major inside; Zn: block (j, l) column-major inside.
        # One conversion each straight into the row-major operand of one product.
        acc_type = np.int32 if self.in_dtype == "i8" else np.float32
        a = a_raw.reshape(m1, n1, e, ne).transpose(0, 2, 1, 3).astype(acc_type, order="C")
        b = b_raw.reshape(n1, k1, e, ne).transpose(0, 3, 1, 2).astype(acc_type, order="C")
        prod = a.reshape(m1 * e, n1 * ne) @ b.reshape(n1 * ne, k1 * e)
        c_view = mems[2].typed[self.out_dtype][c_at:c_at + nc]
        # Nz: block (i, l) at fractal index l*m1 + i, row-major inside.
        out = prod.reshape(m1, e, k1, e).transpose(2, 0, 1, 3)
        c_nz = c_view.reshape(k1, m1, e, e)
        if self.accumulate and c_view.dtype == acc_type:
            c_nz += out
        elif self.accumulate:
            c_nz[...] = (c_nz.astype(acc_type) + out).astype(c_view.dtype)
        else:
            c_nz[...] = out


def decoders() -> dict:
    return {"cce.mad": Mad}
