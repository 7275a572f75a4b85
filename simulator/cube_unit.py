"""The cube unit: `cce.mad` on fractal operands.

A (m x n) is read from L0A in Zz, B (n x k) from L0B in Zn, C (m x k) is
read (when accumulating) and written in L0C in Nz; see dialects/README.md.
fp16 x fp16 products are exact; one mad sums them in float64 and rounds the
sum to fp32 once, then adds it to C in fp32 when accumulating. Each fp16
product has at most 22 significant bits, so the float64 sum is exact unless
the products' magnitudes span more than about 2^20 (subnormal products
beside large ones); its summation order (the BLAS kernel's, which depends
on the shapes and on the host CPU) then does not show in the fp32 result,
and the same mad gives the same bits on every machine and in every tiling
of its columns. (An fp32 matmul did not: fused and unfused siblings, and
the pinned digests, differed between hosts.) int8 x int8 accumulates exactly in int32.

Cost: ceil(m/16) * ceil(k/16) * ceil(n/16) block products (n steps by 32
for int8) at `Target.cube_cycles`, plus `mad_latency`.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from npu.simulator import access, compiled
from npu.simulator.instruction import Access, DecodeContext, Instr
from npu.simulator.memory import Memory

# (m1, n1, k1, edge, n_edge, input type) -> conversion and product buffers
_SCRATCH: dict[tuple, "_Scratch"] = {}

# float64 value of every fp16 bit pattern, indexed by the pattern
F16_TO_F64 = np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float64)
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
        # int8 blocks are 16x16x32 products at the target's int8 rate.
        self.occupancy = (t.cube_cycles_int8(self.blocks) if self.in_dtype == "i8"
                          else t.cube_cycles(self.blocks))
        self.latency = t.mad_latency

    def compute(self, mems: list[Memory], addrs: list[int]) -> None:
        self.product(self._scratch(), *self._views(mems, addrs))

    def bound(self, mems: list[Memory], addrs: list[int]):
        cengine = compiled.engine()
        if cengine is not None and self.in_dtype == "f16" and self.out_dtype == "f32":
            return partial(self.product_compiled, cengine.f16_to_f64, cengine.round_into_f32,
                           self._scratch(), *self._views(mems, addrs))
        return partial(self.product, self._scratch(), *self._views(mems, addrs))

    def product_compiled(self, to_f64, round_into, s: "_Scratch", a_rm: np.ndarray,
                         b_cols: np.ndarray, c_cols: np.ndarray) -> None:
        """`product` of fp16 into fp32 with the conversions compiled
        (`csrc/cubeconv.c`: no table, the same bits): a 512 KB table take
        misses the cache once products run between mads (2048^3: 46 us a
        mad in the run against 15 us alone)."""
        to_f64(s.a4, a_rm)
        to_f64(s.b4, b_cols)
        np.matmul(s.a2d, s.b3, out=s.wide)
        round_into(c_cols, s.wide, self.accumulate)

    def product(self, s: "_Scratch", a_rm: np.ndarray, b_cols: np.ndarray,
                c_cols: np.ndarray) -> None:
        """C (Nz) = or += A (Zz) x B (Zn), given as views (`_views`): each
        operand converted once, straight into the layout the product reads
        (fp16 through a table), and one product per 16-column block of C,
        written in C's own Nz order, so nothing is moved after the product."""
        if self.in_dtype == "f16":
            np.take(F16_TO_F64, a_rm, out=s.a4, mode="clip")  # every index is in the table
            np.take(F16_TO_F64, b_cols, out=s.b4, mode="clip")
        else:
            np.copyto(s.a4, a_rm, casting="unsafe")
            np.copyto(s.b4, b_cols, casting="unsafe")
        np.matmul(s.a2d, s.b3, out=s.wide)
        if s.prod is None:  # int32: the exact sum is C's type
            if self.accumulate:
                np.add(c_cols, s.wide, out=c_cols)
            else:
                np.copyto(c_cols, s.wide)
            return
        if c_cols.dtype == s.prod.dtype and not self.accumulate:
            np.copyto(c_cols, s.wide)  # fp32: one rounding of the exact sum
            return
        np.copyto(s.prod, s.wide)  # fp32: one rounding of the exact sum
        if not self.accumulate:
            np.copyto(c_cols, s.prod)
        elif c_cols.dtype == s.prod.dtype:
            np.add(c_cols, s.prod, out=c_cols)
        else:  # fp16 C: the sum in fp32, rounded to fp16
            c_cols[...] = (c_cols.astype(s.prod.dtype) + s.prod).astype(c_cols.dtype)

    def _views(self, mems: list[Memory], addrs: list[int]) -> tuple:
        """A (Zz, fp16 as its bit patterns) as (m1, e, n1, ne): row-major;
        B (Zn: block (j, l) column-major inside) as (k1, n1, ne, e): one
        row-major (n, 16) matrix per 16-column block of C; C (Nz: block
        (i, l) at l*m1 + i, row-major inside) as (k1, m*16, 16), the same
        blocks' rows."""
        m1, n1, k1, e, ne = self.m1, self.n1, self.k1, self.edge, self.n_edge
        na, nb, nc = self.sizes
        a_at, b_at, c_at = (addrs[0] // self.operands[0].esize, addrs[1] // self.operands[1].esize,
                            addrs[2] // self.operands[2].esize)
        a_raw = mems[0].typed[self.in_dtype][a_at:a_at + na]
        b_raw = mems[1].typed[self.in_dtype][b_at:b_at + nb]
        if self.in_dtype == "f16":  # indices into F16_TO_F64
            a_raw, b_raw = a_raw.view(np.uint16), b_raw.view(np.uint16)
        c_view = mems[2].typed[self.out_dtype][c_at:c_at + nc]
        return (a_raw.reshape(m1, n1, e, ne).transpose(0, 2, 1, 3),
                b_raw.reshape(n1, k1, e, ne).transpose(1, 0, 3, 2),
                c_view.reshape(k1, m1 * e, e))

    def _scratch(self) -> "_Scratch":
        key = (self.m1, self.n1, self.k1, self.edge, self.n_edge, self.in_dtype)
        scratch = _SCRATCH.get(key)
        if scratch is None:
            scratch = _SCRATCH[key] = _Scratch(self.m1, self.n1, self.k1, self.edge, self.n_edge,
                                               self.in_dtype == "i8")
        return scratch


class _Scratch:
    """Operand and product buffers of one mad shape (shared by the mads with
    that shape)."""

    def __init__(self, m1: int, n1: int, k1: int, e: int, ne: int, integer: bool):
        # Operands and the sum in int32 (exact) or float64 (exact for fp16
        # products), the product rounded to fp32 (`prod`) unless int32.
        wide = np.int32 if integer else np.float64
        self.a4 = np.empty((m1, e, n1, ne), wide)  # A row-major
        self.a2d = self.a4.reshape(m1 * e, n1 * ne)
        # B as one (n, 16) matrix per 16-column block of C: one product per
        # block (a stacked matmul), written in C's Nz order, reads A from the
        # cache each time. 256x64x128: 78 us against 93 for one product and a
        # move. (With A over 256 KB in float64 the stack is slower, 128x512x256:
        # 1,043 against 725 us; fp16 A never is: L0A holds 32k elements.)
        self.b4 = np.empty((k1, n1, ne, e), wide)
        self.b3 = self.b4.reshape(k1, n1 * ne, e)
        self.wide = np.empty((k1, m1 * e, e), wide)  # the product in C's Nz order
        self.prod = None if integer else np.empty((k1, m1 * e, e), np.float32)


def decoders() -> dict:
    return {"cce.mad": Mad}
