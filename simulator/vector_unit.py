"""The vector unit: lane-wise ops with repeat, mask and strides; vconv;
cross-lane reductions; vdup; vnchwconv.

Lane `e` of repeat `r` of an operand with element size `s` is at byte
`addr + r*rep_stride*32 + ((e*s)//32)*blk_stride*32 + (e*s)%32`; a repeat
covers `vector_bytes / widest element` lanes and the first `mask` are active.

Arithmetic (each op's numerics and rounding) is in `vector_numerics`.

Cost: `repeat * target.vector_cycles(cce.vector_class(op))` cycles of the
pipe plus `vector_latency` until the result lands (vnchwconv: its own
per-repeat rate).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from npu.dialects.cce import VECTOR_AXPY, VECTOR_FMA, vector_class
from npu.simulator import access, compiled
from npu.simulator.instruction import Access, DecodeContext, Instr, np_dtype
from npu.simulator.memory import Memory
from npu.simulator.vector_numerics import BINARY, ROUND_MODES, SCALAR, UNARY, converter, fma_round


# (esize, block, repeat, mask, rep_only, strides) -> (pattern, lo, hi, idx):
# a lane layout depends on nothing else, so the instructions of every loop and
# layer that share one build it once (BERT-base x12 on 32 cores decodes 8.9k
# operands' lanes, 1.5 profiled s, from a few hundred layouts). Like
# `access.from_bursts`, equal patterns are then one object.
_LANES: dict[tuple, tuple] = {}
_LANES_KEPT = 4096


class Lanes:
    """One operand's active lanes, in lane order, as element offsets."""

    def __init__(self, ctx: DecodeContext, index: int, prefix: str | None, repeat: int,
                 mask: int, lanes: int, rep_only: bool = False):
        info = ctx.operands[index]
        t = ctx.target
        block = t.vector_block_bytes
        s = info.esize
        self.index, self.dtype, self.esize = index, info.dtype, s
        if rep_only:  # vcadd/vcmax destination: one element per repeat
            strides = (ctx.int(f"{prefix}_rep_stride"),)
        else:
            strides = (ctx.int(f"{prefix}_blk_stride"), ctx.int(f"{prefix}_rep_stride"))
            if strides[0] < 0 or strides[1] < 0:
                raise ctx.fail(f"has negative strides for '{prefix}'")
        key = (s, block, repeat, mask, rep_only, strides)
        layout = _LANES.get(key)
        if layout is None:
            if len(_LANES) >= _LANES_KEPT:
                _LANES.clear()
            layout = _LANES[key] = _layout(s, block, repeat, mask, rep_only, strides)
        self.pattern, self.lo, self.hi, self.idx = layout

    def get(self, mems: list[Memory], addrs: list[int]) -> np.ndarray:
        arr = mems[self.index].typed[self.dtype]
        base = addrs[self.index] // self.esize
        if self.idx is None:
            return arr[base + self.lo:base + self.hi]
        return arr[self.idx + base]

    def put(self, mems: list[Memory], addrs: list[int], values: np.ndarray) -> None:
        arr = mems[self.index].typed[self.dtype]
        base = addrs[self.index] // self.esize
        if self.idx is None:
            arr[base + self.lo:base + self.hi] = values
        else:
            arr[self.idx + base] = values


def _layout(s: int, block: int, repeat: int, mask: int, rep_only: bool,
            strides: tuple[int, ...]) -> tuple:
    """(pattern, first element, one past the last, element index or None)."""
    if rep_only:
        elems = np.arange(repeat, dtype=np.int64) * strides[0]
    else:
        blk, rep = strides
        e = np.arange(mask, dtype=np.int64) * s
        lane_bytes = (e // block) * blk * block + e % block
        byte = (np.arange(repeat, dtype=np.int64)[:, None] * rep * block + lane_bytes[None, :])
        elems = (byte // s).ravel()
    pattern = access.from_elements(elems, s)
    return pattern, pattern.lo // s, pattern.hi // s, None if pattern.dense else pattern.elem_idx


class VectorOp(Instr):
    """Shared decoding: repeat, mask, lanes, cost class."""

    def __init__(self, ctx: DecodeContext, op_class: str, n_operands: int):
        if tuple(o.space for o in ctx.operands) != ("ub",) * n_operands:
            raise ctx.fail(f"expects {n_operands} operand(s) in ub, got "
                           f"({', '.join(o.space for o in ctx.operands)})")
        super().__init__(ctx, "V")
        t = ctx.target
        self.repeat = ctx.int("repeat")
        if not 1 <= self.repeat <= t.max_repeat:
            raise ctx.fail(f"has repeat {self.repeat}; the target allows 1..{t.max_repeat}")
        self.lanes = t.lanes(max(o.esize for o in ctx.operands))
        self.ub_align = t.granule("ub")
        self.occupancy = self.repeat * t.vector_cycles(op_class)
        self.latency = t.vector_latency

    def read_mask(self, ctx: DecodeContext) -> int:
        mask = ctx.int("mask")
        if not 1 <= mask <= self.lanes:
            raise ctx.fail(f"has mask {mask}; a repeat of this type has 1..{self.lanes} lanes")
        return mask

    def set_accesses(self, reads: list[Lanes], writes: list[Lanes]) -> None:
        self.accesses = tuple([Access(l.index, l.pattern, False, self.ub_align) for l in reads]
                              + [Access(l.index, l.pattern, True, self.ub_align) for l in writes])


# The ufuncs `_cengine.vec_op` runs inline on dense fp16 views (csrc/vecops.c:
# numpy's bits without a ufunc call, ~0.5 us each on a 128-lane repeat), by op code.
COMPILED_OPS = {np.add: 0, np.subtract: 1, np.multiply: 2, np.divide: 3, np.maximum: 4,
                np.minimum: 5}


def compiled_op(ufunc, dtype: str, dst: np.ndarray, src0: np.ndarray, src1, scalar=None):
    """`ufunc(src0, src1 or scalar, dst)` as a `_cengine.VecOp` when this run
    uses the compiled pieces and it takes the op (fp16) and views, else None."""
    code = COMPILED_OPS.get(ufunc)
    make = getattr(compiled.engine(), "vec_op", None)
    if code is None or dtype != "f16" or make is None:
        return None
    bits = 0 if scalar is None else int(np.asarray(scalar, dtype=np.float16).view(np.uint16))
    return make(code, dst, src0, src1, bits)


class Binary(VectorOp):
    def __init__(self, ctx: DecodeContext):
        super().__init__(ctx, vector_class(ctx.cce_name), 3)
        if len({o.dtype for o in ctx.operands}) != 1:
            raise ctx.fail("needs one element type for dst, src0 and src1")
        mask = self.read_mask(ctx)
        self.dst = Lanes(ctx, 0, "dst", self.repeat, mask, self.lanes)
        self.src0 = Lanes(ctx, 1, "src0", self.repeat, mask, self.lanes)
        self.src1 = Lanes(ctx, 2, "src1", self.repeat, mask, self.lanes)
        self.fn = BINARY[ctx.cce_name]
        self.set_accesses([self.src0, self.src1], [self.dst])
        # Fast path: all three operands are plain slices (the common case).
        self.dense = (self.dst.idx is None and self.src0.idx is None and self.src1.idx is None)
        self.slices = (ctx.operands[0].dtype, ctx.operands[0].esize, self.dst.lo, self.src0.lo,
                       self.src1.lo, self.dst.hi - self.dst.lo)

    def compute(self, mems: list[Memory], addrs: list[int]) -> None:
        if self.dense:
            dt, s, dlo, alo, blo, cnt = self.slices
            z = addrs[0] // s + dlo
            x = addrs[1] // s + alo
            y = addrs[2] // s + blo
            # ufuncs handle overlapping in/out operands (in-place vector ops) correctly.
            self.fn(mems[1].typed[dt][x:x + cnt], mems[2].typed[dt][y:y + cnt],
                    out=mems[0].typed[dt][z:z + cnt])
            return
        self.dst.put(mems, addrs, self.fn(self.src0.get(mems, addrs), self.src1.get(mems, addrs)))

    def bound(self, mems: list[Memory], addrs: list[int]):
        if not self.dense:
            return super().bound(mems, addrs)
        views = (self.src0.get(mems, addrs), self.src1.get(mems, addrs), self.dst.get(mems, addrs))
        op = compiled_op(self.fn, self.slices[0], views[2], views[0], views[1])
        # `out` positional: a partial with a keyword builds a dict on every call.
        return op if op is not None else partial(self.fn, *views)


class MultiplyAdd(VectorOp):
    """vmadd (dst = src0*dst + src1), vmla (dst = src0*src1 + dst) and vaxpy
    (dst = scalar*src + dst): dst is read as well as written; one rounding."""

    def __init__(self, ctx: DecodeContext):
        name = ctx.cce_name
        axpy = name == VECTOR_AXPY
        super().__init__(ctx, vector_class(name), 2 if axpy else 3)
        if len({o.dtype for o in ctx.operands}) != 1:
            raise ctx.fail("needs one element type for all operands")
        mask = self.read_mask(ctx)
        self.dst = Lanes(ctx, 0, "dst", self.repeat, mask, self.lanes)
        if axpy:
            self.srcs = [Lanes(ctx, 1, "src", self.repeat, mask, self.lanes)]
            self.scalar = np_dtype(ctx.operands[1].dtype)(ctx.float("scalar"))
        else:
            self.srcs = [Lanes(ctx, i + 1, f"src{i}", self.repeat, mask, self.lanes)
                         for i in range(2)]
        self.form = name
        self.set_accesses(self.srcs + [self.dst], [self.dst])

    def compute(self, mems: list[Memory], addrs: list[int]) -> None:
        d = self.dst.get(mems, addrs)
        vals = [l.get(mems, addrs) for l in self.srcs]
        if self.form == "cce.vmadd":
            out = fma_round(vals[0], d, vals[1])
        elif self.form == "cce.vmla":
            out = fma_round(vals[0], vals[1], d)
        else:
            out = fma_round(np.full_like(d, self.scalar), vals[0], d)
        self.dst.put(mems, addrs, out)


class Unary(VectorOp):
    """Unary, scalar (`dst = src op scalar`) and vconv share the dst/src shape."""

    def __init__(self, ctx: DecodeContext):
        name = ctx.cce_name
        super().__init__(ctx, vector_class(name), 2)
        mask = self.read_mask(ctx)
        self.dst = Lanes(ctx, 0, "dst", self.repeat, mask, self.lanes)
        self.src = Lanes(ctx, 1, "src", self.repeat, mask, self.lanes)
        dst_t, src_t = ctx.operands[0].dtype, ctx.operands[1].dtype
        if name == "cce.vconv":
            mode = ctx.str("round_mode")
            if mode not in ROUND_MODES:
                raise ctx.fail(f"has unknown round_mode '{mode}' (one of {', '.join(ROUND_MODES)})")
            if src_t == dst_t:
                raise ctx.fail(f"converts {src_t} to itself")
            self.fn = converter(src_t, dst_t, mode)
        else:
            if dst_t != src_t:
                raise ctx.fail("needs one element type for dst and src")
            if name in SCALAR:
                scalar = np_dtype(src_t)(ctx.float("scalar"))
                ufunc = SCALAR[name]
                self.fn = lambda x, s=scalar, f=ufunc: f(x, s)
                # Fast path: a ufunc straight from the source slice into the destination.
                if self.dst.idx is None and self.src.idx is None:
                    self.direct = (ufunc, scalar, src_t, ctx.operands[0].esize, self.dst.lo,
                                   self.src.lo, self.dst.hi - self.dst.lo)
            else:
                self.fn = UNARY[name]
        self.set_accesses([self.src], [self.dst])

    direct: tuple | None = None

    def compute(self, mems: list[Memory], addrs: list[int]) -> None:
        if self.direct is not None:
            ufunc, scalar, dt, s, dlo, slo, cnt = self.direct
            z = addrs[0] // s + dlo
            x = addrs[1] // s + slo
            ufunc(mems[1].typed[dt][x:x + cnt], scalar, out=mems[0].typed[dt][z:z + cnt])
            return
        self.dst.put(mems, addrs, self.fn(self.src.get(mems, addrs)))

    def bound(self, mems: list[Memory], addrs: list[int]):
        if self.direct is None:
            return super().bound(mems, addrs)
        ufunc, scalar, dt = self.direct[:3]
        src, dst = self.src.get(mems, addrs), self.dst.get(mems, addrs)
        op = compiled_op(ufunc, dt, dst, src, None, scalar)
        return op if op is not None else partial(ufunc, src, scalar, dst)


class Dup(VectorOp):
    def __init__(self, ctx: DecodeContext):
        super().__init__(ctx, "simple", 1)
        mask = self.read_mask(ctx)
        self.dst = Lanes(ctx, 0, "dst", self.repeat, mask, self.lanes)
        dt = np_dtype(ctx.operands[0].dtype)
        value = ctx.float("scalar")
        self.value = dt(int(value)) if ctx.operands[0].dtype in ("i8", "i32") else dt(value)
        self.set_accesses([], [self.dst])

    def compute(self, mems: list[Memory], addrs: list[int]) -> None:
        self.dst.put(mems, addrs, self.value)


class Reduce(VectorOp):
    """vcadd / vcmax: each repeat's active lanes reduce to one dst element."""

    def __init__(self, ctx: DecodeContext):
        super().__init__(ctx, "reduce", 2)
        if ctx.operands[0].dtype != ctx.operands[1].dtype:
            raise ctx.fail("needs one element type for dst and src")
        self.mask = self.read_mask(ctx)
        self.src = Lanes(ctx, 1, "src", self.repeat, self.mask, self.lanes)
        self.dst = Lanes(ctx, 0, "dst", self.repeat, 1, self.lanes, rep_only=True)
        self.reduction = ctx.cce_name
        self.set_accesses([self.src], [self.dst])

    def compute(self, mems: list[Memory], addrs: list[int]) -> None:
        x = self.src.get(mems, addrs).reshape(self.repeat, self.mask)
        if self.reduction == "cce.vcadd":
            out = x.astype(np.float32).sum(axis=1).astype(x.dtype)
        elif self.reduction == "cce.vcmax":
            out = x.max(axis=1)
        else:
            out = x.min(axis=1)
        self.dst.put(mems, addrs, out)


CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
       "gt": np.greater, "ge": np.greater_equal}


class Compare(VectorOp):
    """vcmp: dst (i8) lane = 1 where `src0 <predicate> src1`, else 0; lanes
    by the widest operand (the sources), the i8 destination packed densely."""

    def __init__(self, ctx: DecodeContext):
        super().__init__(ctx, "simple", 3)
        dst_t, a_t, b_t = (o.dtype for o in ctx.operands)
        if dst_t != "i8" or a_t != b_t:
            raise ctx.fail("compares two sources of one type into an i8 destination")
        pred = ctx.str("predicate")
        if pred not in CMP:
            raise ctx.fail(f"has unknown predicate '{pred}'")
        self.fn = CMP[pred]
        mask = self.read_mask(ctx)
        self.dst = Lanes(ctx, 0, "dst", self.repeat, mask, self.lanes)
        self.src0 = Lanes(ctx, 1, "src0", self.repeat, mask, self.lanes)
        self.src1 = Lanes(ctx, 2, "src1", self.repeat, mask, self.lanes)
        self.set_accesses([self.src0, self.src1], [self.dst])

    def compute(self, mems: list[Memory], addrs: list[int]) -> None:
        with np.errstate(invalid="ignore"):
            result = self.fn(self.src0.get(mems, addrs), self.src1.get(mems, addrs))
        self.dst.put(mems, addrs, result.astype(np.int8))


class Select(VectorOp):
    """vsel: dst lane = src0 where the i8 cond lane is non-zero, else src1
    (the unselected value is never read into the result)."""

    def __init__(self, ctx: DecodeContext):
        super().__init__(ctx, "simple", 4)
        dst_t, cond_t, a_t, b_t = (o.dtype for o in ctx.operands)
        if cond_t != "i8" or not dst_t == a_t == b_t:
            raise ctx.fail("selects between two sources of the destination's type by an i8 cond")
        mask = self.read_mask(ctx)
        self.dst = Lanes(ctx, 0, "dst", self.repeat, mask, self.lanes)
        self.cond = Lanes(ctx, 1, "cond", self.repeat, mask, self.lanes)
        self.src0 = Lanes(ctx, 2, "src0", self.repeat, mask, self.lanes)
        self.src1 = Lanes(ctx, 3, "src1", self.repeat, mask, self.lanes)
        self.set_accesses([self.cond, self.src0, self.src1], [self.dst])

    def compute(self, mems: list[Memory], addrs: list[int]) -> None:
        cond = self.cond.get(mems, addrs) != 0
        self.dst.put(mems, addrs, np.where(cond, self.src0.get(mems, addrs),
                                           self.src1.get(mems, addrs)))


class Nchwconv(VectorOp):
    """vnchwconv: per repeat, 16 rows of one 32-byte block in, the transpose out.

    A pure permutation of elements, so it moves (rather than computes with)
    uninitialised bytes, like a copy.
    """

    moves = True

    def __init__(self, ctx: DecodeContext):
        if tuple(o.space for o in ctx.operands) != ("ub", "ub"):
            raise ctx.fail("expects dst and src in ub")
        Instr.__init__(self, ctx, "V")
        t = ctx.target
        self.repeat = ctx.int("repeat")
        if not 1 <= self.repeat <= t.max_repeat:
            raise ctx.fail(f"has repeat {self.repeat}; the target allows 1..{t.max_repeat}")
        dst, src = ctx.operands
        if dst.dtype != src.dtype or dst.esize not in (2, 4):
            raise ctx.fail("transposes 2- or 4-byte elements of one type")
        rows, block = t.fractal, t.vector_block_bytes
        s = src.esize
        self.rows, self.per_row, self.dtype, self.esize = rows, block // s, src.dtype, s
        src_off, dst_off = ctx.ints("src_offsets"), ctx.ints("dst_offsets")
        if len(src_off) != rows or len(dst_off) != rows:
            raise ctx.fail(f"needs {rows} src_offsets and {rows} dst_offsets")
        r = np.arange(self.repeat, dtype=np.int64)[:, None, None]
        col = np.arange(self.per_row, dtype=np.int64)[None, None, :]

        def elems(offsets: list[int], rep_stride: int) -> np.ndarray:
            rows_at = np.asarray(offsets, np.int64)[None, :, None] * block
            return ((r * rep_stride * block + rows_at) // s + col).ravel()

        self.src_idx = elems(src_off, ctx.int("src_rep_stride"))
        self.dst_idx = elems(dst_off, ctx.int("dst_rep_stride"))
        src_pat = access.from_elements(self.src_idx, s)
        dst_pat = access.from_elements(self.dst_idx, s)
        align = t.granule("ub")
        self.accesses = (Access(1, src_pat, False, align), Access(0, dst_pat, True, align))
        self.occupancy = self.repeat * t.vnchwconv_cycles_per_repeat
        self.latency = t.vector_latency

    def compute(self, mems: list[Memory], addrs: list[int]) -> None:
        s = self.esize
        src_arr = mems[1].typed[self.dtype]
        dst_arr = mems[0].typed[self.dtype]
        m = src_arr[self.src_idx + addrs[1] // s].reshape(self.repeat, self.rows, self.per_row)
        if self.per_row == self.rows:
            out = m.transpose(0, 2, 1)
        else:  # 4-byte: row t of S^T goes in halves to rows 2t and 2t+1
            halves = self.rows // self.per_row
            out = m.reshape(self.repeat, halves, self.per_row, self.per_row).transpose(0, 3, 1, 2)
        dst_arr[self.dst_idx + addrs[0] // s] = out.ravel()


def decoders() -> dict:
    table: dict = {name: Binary for name in BINARY}
    table.update({name: Unary for name in list(SCALAR) + list(UNARY) + ["cce.vconv"]})
    table.update({name: MultiplyAdd for name in VECTOR_FMA + (VECTOR_AXPY,)})
    table.update({"cce.vdup": Dup, "cce.vcadd": Reduce, "cce.vcmax": Reduce, "cce.vcmin": Reduce,
                  "cce.vnchwconv": Nchwconv, "cce.vcmp": Compare, "cce.vsel": Select})
    return table
