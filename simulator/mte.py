"""The data movers: burst copies per hardware path and the L1 -> L0A/L0B loads.

Cost of one instruction on its path: `latency + ceil(bytes / bytes_per_cycle)`,
both from the target's `Path`, bytes being those read. Copies move raw
bytes, except the L0C -> UB move that converts f32 to f16 (`Copy`); the
loads move whole fractals and may transpose each one (Nz -> Zn for L0B).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from npu.dialects.hivm import L0C_HALVING
from npu.simulator import access
from npu.simulator.errors import ALIGNMENT
from npu.simulator.instruction import Access, DecodeContext, Instr
from npu.simulator.memory import Memory
from npu.target import PATH_PIPES

COPY_PATHS = ("gm_to_l1", "gm_to_ub", "ub_to_gm", "ub_to_l1", "ub_to_ub", "l0c_to_ub")
LOAD_PATHS = ("l1_to_l0a", "l1_to_l0b")


def _set_cost(instr: Instr, ctx: DecodeContext, path: str, nbytes: int, n_bursts: int = 1) -> None:
    """The uncontended cost; a GM transfer's real data phase comes from the
    memory system when it starts (`memory_system.MemorySystem.transfer`)."""
    p = ctx.target.path(path)
    instr.path = path
    instr.nbytes = nbytes
    instr.occupancy = -(-nbytes // p.bytes_per_cycle)
    instr.latency = p.latency
    instr.rate = p.bytes_per_cycle
    if "gm" in (instr.src_space, instr.dst_space):
        instr.gm_operand = 0 if instr.src_space == "gm" else 1
        instr.n_bursts = n_bursts
        instr.occupancy += n_bursts * ctx.target.gm_burst_cycles


class _Transfer(Instr):
    """A move from operand 0 (in `src_space`) to operand 1 (in `dst_space`) on
    one path; subclasses set the byte patterns `src_pat` / `dst_pat`, the
    accesses and the cost."""

    moves = True

    def __init__(self, ctx: DecodeContext, path: str):
        src_space, dst_space = path.split("_to_")
        ctx.expect_operands(src_space, dst_space)
        super().__init__(ctx, PATH_PIPES[path])
        self.src_space, self.dst_space = src_space, dst_space

    def compute(self, mems: list[Memory], addrs: list[int]) -> None:
        views = self.views(mems, addrs)
        if views is None:
            self.move(mems, addrs)
        else:
            np.copyto(*views)

    def bound(self, mems: list[Memory], addrs: list[int]):
        views = self.views(mems, addrs)
        return partial(self.move, mems, addrs) if views is None else partial(np.copyto, *views)

    def views(self, mems: list[Memory], addrs: list[int]) -> tuple | None:
        """(destination, source) views whose copy is this move, or None."""
        raise NotImplementedError

    def move(self, mems: list[Memory], addrs: list[int]) -> None:
        """The move without cached views (source or destination bytes scattered)."""
        raise NotImplementedError

    def rows(self, data: np.ndarray, addr: int, pat) -> np.ndarray | None:
        """The bytes of `pat` at `addr` as (bursts, burst bytes), or None."""
        if pat.dense:
            n, burst = self.burst_shape
            return data[addr + pat.lo:addr + pat.hi].reshape(n, burst)
        return access.bursts_view(data, addr, pat)

    def read_src(self, mems: list[Memory], addrs: list[int]) -> np.ndarray:
        src, sa, sp = mems[0].data, addrs[0], self.src_pat
        if sp.dense:
            return src[sa:sa + sp.hi]
        rows = access.bursts_view(src, sa, sp)
        return rows if rows is not None else src[sp.byte_idx + sa]

    def write_dst(self, mems: list[Memory], addrs: list[int], values: np.ndarray) -> None:
        dst, da, dp = mems[1].data, addrs[1], self.dst_pat
        if dp.dense:
            dst[da:da + dp.hi] = values.reshape(-1)
            return
        rows = access.bursts_view(dst, da, dp)
        if rows is not None:
            rows[...] = values.reshape(rows.shape)
        else:
            dst[dp.byte_idx + da] = values.reshape(-1)


class Copy(_Transfer):
    """`cce.copy_<src>_to_<dst>`: n_burst bursts of burst_len 32-byte blocks.

    The L0C -> UB move may convert f32 to f16 on the way (`convert`,
    `hivm.L0C_CONVERSIONS`): each f32 rounded to the nearest f16, ties to
    even (numpy's astype(float16)), after max(x, 0) for "f32_to_f16_relu"; it writes half the bytes it reads
    (destination bursts of burst_len / 2 blocks, dst_gap in destination
    blocks). Its cost counts the bytes read: the path's rate is what the
    source delivers, converted or not."""

    def __init__(self, ctx: DecodeContext, path: str):
        super().__init__(ctx, path)
        t = ctx.target
        block = t.vector_block_bytes
        n_burst, burst_len = ctx.int("n_burst"), ctx.int("burst_len")
        src_gap, dst_gap = ctx.int("src_gap"), ctx.int("dst_gap")
        if n_burst < 1 or burst_len < 1 or src_gap < 0 or dst_gap < 0:
            raise ctx.fail(f"needs n_burst, burst_len >= 1 and gaps >= 0, got n_burst={n_burst} "
                           f"burst_len={burst_len} src_gap={src_gap} dst_gap={dst_gap}")
        mode = ctx.str("convert", "none") if path == "l0c_to_ub" else "none"
        self.convert = mode in L0C_HALVING
        self.relu = mode == "f32_to_f16_relu"  # max(x, 0) on the way
        if self.convert and burst_len % 2:
            raise ctx.fail(f"converts f32 to f16 in bursts of {burst_len} blocks: a converted "
                           "burst must be a whole number of destination blocks (even burst_len)")
        dst_len = burst_len // 2 if self.convert else burst_len
        burst = burst_len * block
        aligns = []
        for space, gap, length in ((self.src_space, src_gap, burst_len),
                                   (self.dst_space, dst_gap, dst_len)):
            g = t.granule(space)
            stride = (length + gap) * block
            if n_burst > 1 and stride % g:
                raise ctx.fail(f"puts bursts {stride} bytes apart in {space}, not a multiple of "
                               f"its {g}-byte granule", ALIGNMENT)
            if space == "l0c" and burst % g:
                raise ctx.fail(f"moves {burst}-byte bursts from l0c; an l0c burst must be a whole "
                               f"number of {g}-byte granules", ALIGNMENT)
            aligns.append(g)
        src_pat = access.from_bursts(n_burst, burst, (burst_len + src_gap) * block)
        dst_pat = access.from_bursts(n_burst, dst_len * block, (dst_len + dst_gap) * block)
        self.accesses = (Access(0, src_pat, False, aligns[0]), Access(1, dst_pat, True, aligns[1]))
        self.src_pat, self.dst_pat = src_pat, dst_pat
        self.burst_shape = (n_burst, burst)
        _set_cost(self, ctx, path, n_burst * burst, n_burst)

    def views(self, mems: list[Memory], addrs: list[int]) -> tuple | None:
        if self.convert:  # not a byte copy
            return None
        sp, dp = self.src_pat, self.dst_pat
        if sp.dense and dp.dense:  # both one run: plain slices
            sa, da = addrs[0], addrs[1]
            return mems[1].data[da + dp.lo:da + dp.hi], mems[0].data[sa + sp.lo:sa + sp.hi]
        src = self.rows(mems[0].data, addrs[0], sp)
        dst = self.rows(mems[1].data, addrs[1], dp)
        return None if src is None or dst is None else (dst, src)

    def move(self, mems: list[Memory], addrs: list[int]) -> None:
        values = self.read_src(mems, addrs)
        if self.convert:
            f32 = np.ascontiguousarray(values).reshape(-1).view(np.float32)
            if self.relu:
                f32 = np.maximum(f32, np.float32(0))
            values = f32.astype(np.float16).view(np.uint8)
        self.write_dst(mems, addrs, values)


class Load(_Transfer):
    """`cce.load_l1_to_l0a/l0b`: `repeat` fractals, optionally transposed each."""

    def __init__(self, ctx: DecodeContext, path: str):
        super().__init__(ctx, path)
        t = ctx.target
        self.edge = t.fractal
        frac = t.fractal_bytes(2)  # a fractal is 512 bytes for fp16 and int8 alike
        repeat = ctx.int("repeat")
        src_stride, dst_stride = ctx.int("src_stride"), ctx.int("dst_stride")
        self.transpose = ctx.bool("transpose")
        if repeat < 1 or src_stride < 0 or dst_stride < 0:
            raise ctx.fail(f"needs repeat >= 1 and strides >= 0, got repeat={repeat} "
                           f"src_stride={src_stride} dst_stride={dst_stride}")
        # cce: the operands' type; hivm: the word's b8 field (its loads are untyped)
        esize = 1 if ctx.bool("b8", False) else ctx.operands[0].esize
        if self.transpose and esize not in (1, 2):
            raise ctx.fail("can only transpose fractals of 1- or 2-byte elements")
        # A transposed fractal is read as rows x edge elements (16 x 16 fp16,
        # 32 x 16 int8: B's K0 x N0 block) and written as edge x rows (Zn).
        self.view_dtype = np.uint8 if esize == 1 else np.uint16
        self.rows_in = frac // (self.edge * esize)
        self.repeat, self.frac = repeat, frac
        src_pat = access.from_bursts(repeat, frac, src_stride * frac)
        dst_pat = access.from_bursts(repeat, frac, dst_stride * frac)
        self.src_pat, self.dst_pat = src_pat, dst_pat
        self.burst_shape = (repeat, frac)
        self.accesses = (Access(0, src_pat, False, t.granule(self.src_space)),
                         Access(1, dst_pat, True, t.granule(self.dst_space)))
        _set_cost(self, ctx, path, repeat * frac)

    def views(self, mems: list[Memory], addrs: list[int]) -> tuple | None:
        src = self.rows(mems[0].data, addrs[0], self.src_pat)
        dst = self.rows(mems[1].data, addrs[1], self.dst_pat)
        if src is None or dst is None:
            return None
        if self.transpose:  # each fractal transposed on its way
            e, r = self.edge, self.rows_in
            src = src.view(self.view_dtype).reshape(self.repeat, r, e).transpose(0, 2, 1)
            dst = dst.view(self.view_dtype).reshape(self.repeat, e, r)
        return dst, src

    def move(self, mems: list[Memory], addrs: list[int]) -> None:
        values = self.read_src(mems, addrs)
        if not self.transpose:
            self.write_dst(mems, addrs, values)
            return
        # Fractal by fractal, transposed straight into the destination when
        # its fractals form a strided view.
        e, n, r = self.edge, self.repeat, self.rows_in
        blocks = values.reshape(n, self.frac).view(self.view_dtype).reshape(n, r, e).transpose(0, 2, 1)
        dst = self._dst_fractals(mems[1].data, addrs[1])
        if dst is not None:
            dst[...] = blocks
        else:
            self.write_dst(mems, addrs, blocks.copy().view(np.uint8))

    def _dst_fractals(self, data: np.ndarray, addr: int) -> np.ndarray | None:
        """The destination fractals as an (n, edge, rows) view, or None."""
        dp = self.dst_pat
        rows = data[addr:addr + dp.hi].reshape(1, -1) if dp.dense else access.bursts_view(data, addr, dp)
        if rows is None:
            return None
        return rows.view(self.view_dtype).reshape(self.repeat, self.edge, self.rows_in)


def decoders() -> dict:
    table = {f"cce.copy_{p}": (lambda ctx, p=p: Copy(ctx, p)) for p in COPY_PATHS}
    table.update({f"cce.load_{p}": (lambda ctx, p=p: Load(ctx, p)) for p in LOAD_PATHS})
    return table
