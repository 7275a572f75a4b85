"""Runs of contiguous elements moved GM -> UB -> GM (a `RunMap`): what
npu-lower-slices does for rows of at least one 32-byte block, and what
npu-lower-transpose does for a permutation that keeps the last dim in
place (a channel shuffle in NCHW: whole H*W planes reordered).

GM has no alignment, UB has: every run lands at the start of a UB buffer
and moves as whole blocks. A run that is not a whole number of blocks ends
with one block moved back to end at the run's end (overlap: a few elements
copied twice, identical), so no copy ever writes an element outside its run
and neighbouring runs (another input of a Concat, another core's runs) are
never clobbered. Runs of whole blocks go in groups that share one packed UB
buffer: each side is one copy of strided bursts when the GM starts are a
whole number of blocks apart, else one copy per run issued back to back.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from npu import ir as nir
from npu.analysis.slice_runs import RunMap
from npu.costmodel.vector.tiling import plan_chunks
from npu.dialects.hivm import config_field
from npu.kernels.cce_build import Index, copy, delinearize, for_pieces, for_range, lin, sub
from npu.target import Target


class RunCopies:
    """Run copies of one element type; `chunk`: the most elements one UB
    buffer holds (whole blocks)."""

    def __init__(self, target: Target, elem: str, chunk: int):
        self.target, self.elem, self.chunk = target, elem, chunk
        self.es = nir.element_bytes(elem)
        self.block = target.granule("ub") // self.es

    def move(self, src: ir.Value, dst: ir.Value, s0, d0, start, length: int) -> None:
        """Elements [start, start + length) of a run at src[s0] -> dst[d0]
        through UB (whole blocks)."""
        g = self.target.granule("ub")
        buf = nir.alloc([length], self.elem, "ub")
        copy("cce.copy_gm_to_ub", sub(src, lin((s0, 1), (start, 1)), length), buf, 1,
             length * self.es // g)
        copy("cce.copy_ub_to_gm", buf, sub(dst, lin((d0, 1), (start, 1)), length), 1,
             length * self.es // g)

    def rows(self, r: RunMap, src: ir.Value, dst: ir.Value) -> None:
        """Every run of `r` (each at least one block long) from the flat
        `src` to the flat `dst`."""
        b = self.block
        lead = r.lead
        grouped = bool(lead) and r.length % b == 0 and r.length <= self.chunk
        outer = lead[:-1] if grouped else lead
        count = int(np.prod(outer, dtype=np.int64)) if outer else 1

        def starts(i):
            index = delinearize(i, outer) if outer else []
            return (lin((r.src_base, 1), *zip(index, r.src_coef)),
                    lin((r.dst_base, 1), *zip(index, r.dst_coef)))

        if grouped:  # runs of whole blocks: a group of rows shares one UB buffer
            rows, sc, dc = lead[-1], r.src_coef[-1], r.dst_coef[-1]
            per = max(1, min(rows, self.chunk // r.length))

            def group(s0, d0, first, n: int) -> None:
                buf = nir.alloc([n * r.length], self.elem, "ub")
                self.gm_side("cce.copy_gm_to_ub", src, lin((s0, 1), (first, sc)), sc, buf, n, r.length)
                self.gm_side("cce.copy_ub_to_gm", dst, lin((d0, 1), (first, dc)), dc, buf, n, r.length)

            def body(i) -> None:
                s0, d0 = starts(i)
                full, rest = divmod(rows, per)
                for_range(full, lambda q: group(s0, d0, lin((q, per)), per))
                if rest:
                    group(s0, d0, full * per, rest)
            for_range(count, body)
            return
        if count > 1 and r.length % b and r.length + b <= self.chunk:
            self.slots(r, src, dst)  # many runs not whole blocks: their loads back to back
            return
        plan = plan_chunks(r.length, self.chunk, b)

        def run(i) -> None:
            s0, d0 = starts(i)
            for_pieces(plan, lambda start, length: self.move(src, dst, s0, d0, start, length))
        for_range(count, run)

    def gm_side(self, name: str, gm: ir.Value, start, step: int, buf: ir.Value, n: int,
                length: int) -> None:
        """Move n runs of `length` elements (whole blocks) between GM, `step`
        elements apart from `start`, and the packed UB `buf`: one copy of n
        bursts when the GM starts are whole blocks apart (the gap fits its
        field), else one copy per run (issued back to back on the same queue)."""
        b, blocks = self.block, length // self.block
        to_ub = name == "cce.copy_gm_to_ub"
        gap = (step - length) // b if step % b == 0 and step >= length else -1
        field = "src_gap" if to_ub else "dst_gap"
        if n == 1 or 0 <= gap <= config_field("copy", field).max:
            view = sub(gm, start, (n - 1) * step + length) if n > 1 else sub(gm, start, length)
            gaps = {field: max(gap, 0) if n > 1 else 0}
            copy(name, view, buf, n, blocks, **gaps) if to_ub else copy(name, buf, view, n, blocks, **gaps)
            return

        def one(j) -> None:
            view = sub(gm, lin((start, 1), (j, step)), length)
            slot = sub(buf, lin((j, length)), length)
            copy(name, view, slot, 1, blocks) if to_ub else copy(name, slot, view, 1, blocks)
        for_range(n, one)

    def slots(self, r: RunMap, src: ir.Value, dst: ir.Value, first_run: Index = 0,
              runs: int | None = None) -> None:
        """Every run of `r` (at least one block) through
        UB slots: a group of runs, as many as fit `chunk`, is loaded (each
        run's whole blocks to its slot's start, its last block, moved back
        to end at the run's end, after them), then stored the same way. The
        loads of a group go back to back (their latency overlaps), unlike a
        load and a store per run (`rows`: 708 cycles a run of 144 bytes).
        `first_run`, `runs`: only those runs (flat index over the lead dims;
        a core's share)."""
        b, length = self.block, r.length
        main = length // b * b
        slot = main + (b if length % b else 0)
        count = runs if runs is not None else int(np.prod(r.lead, dtype=np.int64)) if r.lead else 1
        per = min(count, self.chunk // slot)

        def starts(i):
            index = delinearize(i, r.lead) if r.lead else []
            return (lin((r.src_base, 1), *zip(index, r.src_coef)),
                    lin((r.dst_base, 1), *zip(index, r.dst_coef)))

        if per == 0:  # runs longer than a buffer: each in whole-block pieces
            plan = plan_chunks(length, self.chunk, b)

            def run(i) -> None:
                s0, d0 = starts(lin((first_run, 1), (i, 1)))
                for_pieces(plan, lambda at, n: self.move(src, dst, s0, d0, at, n))
            for_range(count, run)
            return

        def pieces(at):
            """(GM offset in the run, UB offset in the slot, elements) of run i."""
            tail = [(length - b, lin((at, slot), (main, 1)), b)] if length % b else []
            return [(0, lin((at, slot)), main)] + tail

        def group(first, n: int) -> None:
            buf = nir.alloc([n * slot], self.elem, "ub")

            def load(k) -> None:
                s0, _ = starts(lin((first_run, 1), (first, 1), (k, 1)))
                for at, ub, size in pieces(k):
                    copy("cce.copy_gm_to_ub", sub(src, lin((s0, 1), (at, 1)), size),
                         sub(buf, ub, size), 1, size // b)

            def store(k) -> None:
                _, d0 = starts(lin((first_run, 1), (first, 1), (k, 1)))
                for at, ub, size in pieces(k):
                    copy("cce.copy_ub_to_gm", sub(buf, ub, size),
                         sub(dst, lin((d0, 1), (at, 1)), size), 1, size // b)
            for_range(n, load)
            for_range(n, store)

        full, rest = divmod(count, per)
        for_range(full, lambda q: group(lin((q, per)), per))
        if rest:
            group(full * per, rest)
