"""npu-lower-slices: ascend.slice / ascend.insert_slice -> cce copies.

Both ops move elements between two GM tensors along an affine index map:
slice reads `in[offsets + i * strides]` into a contiguous `out`, insert_slice
writes a contiguous `in` into a box of `out`. The map is first cut into
*runs*: the trailing dims that are contiguous on both sides merge into one
run of L elements, the dims before it are looped over (`RunMap`).

Two forms, chosen per op:
  * rows (L >= one 32-byte block): every run moves GM -> UB -> GM in whole
    blocks; a run that is not a whole number of blocks ends with one block
    moved back to end at the run's end (overlap: a few elements copied twice,
    identical), so no copy ever touches an element outside its run and
    neighbouring runs of other inputs (Concat) are never clobbered. Runs of
    whole blocks go in groups that share one packed UB buffer: each side is
    one copy of strided bursts when the GM starts are a whole number of
    blocks apart (Split of a hidden dim of 32+ floats), else one copy per run
    issued back to back; a slice of 64 rows of 200 f32 out of 300 takes
    2,468 cycles against 23,733 with a load and a store per row.
  * gather (short runs, negative or non-unit innermost strides): GM has no
    alignment but UB does, so elements cannot be shifted by copies alone.
    The touched part of the source is loaded once, every element expanded to
    its own block (`vnchwconv`), the output assembled block by block with UB
    copies, compacted and stored (`transpose_general`'s element gather); for
    insert_slice the whole output is loaded too, so the elements outside the
    box keep their value. 2- and 4-byte types, tensors that fit UB.
Anything else (1-byte short runs, too large for UB) is a located error.
"""

from __future__ import annotations

import math

import numpy as np
from mlir import ir

from npu import ir as nir
from npu.analysis.slice_runs import RunMap, op_runs, run_map
from npu.dialects.ascend import INSERT_SLICE, SLICE, SLICE_OPS, slice_indices
from npu.kernels.cce_build import copy, core_part, delinearize, for_pieces, for_range, lin, sub
from npu.kernels.run_copies import RunCopies
from npu.passes.base import Pass, PassError, ub_fraction_option
from npu.passes.applies import OnOps
from npu.passes.transpose_general import compact_blocks, expand_to_blocks, halving_fit
from npu.costmodel.vector.tiling import plan_chunks, round_down, round_up


class LowerSlices(Pass):
    name = "npu-lower-slices"
    summary = ("Lower ascend.slice / insert_slice: whole-block row copies GM->UB->GM, short "
               "or strided rows by an element gather in UB")
    handles = SLICE_OPS
    acts_on = OnOps("slice or insert_slice", handles)  # every option: the program has one
    options = (ub_fraction_option(0.25, "fraction of UB one group of rows may use (0.25: two "
                                  "groups in flight, for npu-double-buffer)"),)

    def run(self, module: ir.Operation) -> None:
        self.lower_each(module, erase=True)

    def lower(self, op: ir.Operation) -> None:
        src, dst = op.operands
        in_shape, out_shape = nir.memref_shape(src), nir.memref_shape(dst)
        elem = nir.memref_element(src)
        for v in (src, dst):
            if not nir.is_contiguous(v):
                raise PassError(f"operand of type {v.type} is not contiguous (row-major, dense)", op)
        offsets = nir.int_array_attr(op, "offsets")
        if op.name == SLICE:
            why = slice_indices(in_shape, out_shape, offsets, nir.int_array_attr(op, "strides"))
        else:
            why = slice_indices(out_shape, in_shape, offsets, [1] * len(offsets), big="output")
        runs = op_runs(op)
        if why:
            raise PassError(why, op)
        if int(np.prod(in_shape if op.name == INSERT_SLICE else out_shape)) == 0:
            return
        es = nir.element_bytes(elem)
        self.es, self.elem = es, elem
        self.block = self.target.granule("ub") // es
        self.chunk = max(self.block, round_down(int(self.target.capacity("ub") * self.ub_fraction)
                                                // es, self.block))
        flat_src, flat_dst = nir.flatten_memref(src), nir.flatten_memref(dst)
        share = core_part(op)
        if share is not None:
            self.core_share(op, runs, flat_src, flat_dst, *share)
        elif runs.length >= self.block:
            self.rows(runs, flat_src, flat_dst)
        elif es in (2, 4):
            self.gather(op, runs, in_shape, out_shape, flat_src, flat_dst)
        else:
            raise PassError(f"{op.name} of {elem} with rows of {runs.length} elements (under one "
                            "32-byte block) needs the element gather, which handles 2- and 4-byte "
                            "types", op)

    def gather(self, op: ir.Operation, runs: RunMap, in_shape: list[int], out_shape: list[int],
               src: ir.Value, dst: ir.Value) -> None:
        """The element gather, of the whole op when it fits UB, else of
        chunks of the leading dims the op takes whole (same size on both
        sides, offset 0, stride 1): a MaxPool's ceil-mode padding, [1, 832,
        4, 4] into [1, 832, 4, 8], is 832 gathers of one channel. A chunk is
        a whole number of blocks on both sides (the last one ends at the
        tensors' ends), so no chunk's store touches another's elements."""
        try:
            Gather(self, op, runs, in_shape, out_shape).emit(src, dst)
            return
        except PassError as refusal:
            first_refusal = refusal
        offsets = nir.int_array_attr(op, "offsets")
        strides = nir.int_array_attr(op, "strides") if op.name == SLICE else [1] * len(offsets)
        k = 0
        while (k < len(in_shape) - 1 and in_shape[k] == out_shape[k] and offsets[k] == 0
               and strides[k] == 1):
            k += 1
        batch = int(np.prod(in_shape[:k], dtype=np.int64))
        inner_in, inner_out = (int(np.prod(s[k:], dtype=np.int64)) for s in (in_shape, out_shape))
        step = math.lcm(self.block // math.gcd(inner_in, self.block),
                        self.block // math.gcd(inner_out, self.block))

        def chunk_gather(n: int) -> Gather:
            box, big = (in_shape, out_shape) if op.name == INSERT_SLICE else (out_shape, in_shape)
            r = run_map([n] + box[k:], [n] + big[k:], [0] + offsets[k:], [1] + strides[k:],
                        box_is_src=op.name == INSERT_SLICE)
            return Gather(self, op, r, [n] + in_shape[k:], [n] + out_shape[k:])

        found = halving_fit(batch, step, chunk_gather)
        if found is None:
            raise first_refusal
        per, full = found

        def chunk(start, n: int) -> None:
            g = full if n == per else chunk_gather(n)
            g.emit(sub(src, lin((start, inner_in)), n * inner_in),
                   sub(dst, lin((start, inner_out)), n * inner_out))
        for_pieces(plan_chunks(batch, per, 1), chunk)

    def core_share(self, op: ir.Operation, r: RunMap, src: ir.Value, dst: ir.Value, parts: int,
                   part: ir.Value) -> None:
        """This core's share of a single run that npu-split-cores cut into
        `parts` equal pieces of whole blocks (`nir.CORE_PART_ATTR`)."""
        if int(np.prod(r.lead, dtype=np.int64)) != 1 or r.length % (parts * self.block):
            raise PassError(f"{nir.CORE_PART_ATTR}: cuts one run of whole {self.block}-element "
                            f"blocks into {parts} equal pieces; this op moves "
                            f"{int(np.prod(r.lead, dtype=np.int64))} runs of {r.length}", op)
        share = r.length // parts
        first = lin((part, share))
        for_pieces(plan_chunks(share, self.chunk, self.block), lambda start, length: self.move(
            src, dst, r.src_base, r.dst_base, lin((first, 1), (start, 1)), length))

    def move(self, src: ir.Value, dst: ir.Value, s0, d0, start, length: int) -> None:
        RunCopies(self.target, self.elem, self.chunk).move(src, dst, s0, d0, start, length)

    def rows(self, r: RunMap, src: ir.Value, dst: ir.Value) -> None:
        """Rows of at least one block (`npu.kernels.run_copies`)."""
        RunCopies(self.target, self.elem, self.chunk).rows(r, src, dst)


class Gather:
    """The element gather in UB (module docstring) for one op."""

    def __init__(self, p: LowerSlices, op: ir.Operation, runs: RunMap, in_shape, out_shape):
        self.p, self.op, self.runs = p, op, runs
        self.b, self.es, self.elem = p.block, p.es, p.elem
        self.rows = p.target.fractal
        self.n_in = int(np.prod(in_shape, dtype=np.int64))
        self.n_out = int(np.prod(out_shape, dtype=np.int64))
        self.insert = op.name == INSERT_SLICE
        lead = runs.lead + [runs.length]
        src_coef = runs.src_coef + [1]
        # The source elements the op reads: load only that window.
        lo = runs.src_base + sum(min(0, (n - 1) * c) for n, c in zip(lead, src_coef))
        hi = runs.src_base + sum(max(0, (n - 1) * c) for n, c in zip(lead, src_coef))
        alloc_end = round_up(self.n_in, self.b)  # GM arguments and temporaries are whole granules
        self.load = min(round_up(hi - lo + 1, self.b), alloc_end)
        self.lo = max(0, min(lo, alloc_end - self.load))
        # One pass, nothing to double-buffer: twice the share of a group of rows.
        budget = int(p.target.capacity("ub") * min(1.0, 2 * p.ub_fraction))
        if self.ub_bytes() > budget:
            raise PassError(f"{op.name} with rows of {runs.length} elements needs the element "
                            f"gather, which holds the tensors in UB ({self.ub_bytes()} bytes, "
                            f"budget {budget})", op)

    def _expanded_blocks(self, count: int) -> int:
        return -(-count // self.rows) * self.rows

    def ub_bytes(self) -> int:
        g = self.p.target.granule("ub")
        out_blocks = self._expanded_blocks(self.n_out) // self.b
        total = (self.load * self.es + self._expanded_blocks(self.load) * g
                 + round_up(self.n_out, self.b) * self.es + self._expanded_blocks(self.n_out) * g
                 + (2 * out_blocks + 2) * g)
        return total

    def emit(self, src: ir.Value, dst: ir.Value) -> None:
        g, b, es, elem = self.p.target.granule("ub"), self.b, self.es, self.elem
        inp = nir.alloc([self.load], elem, "ub")
        copy("cce.copy_gm_to_ub", sub(src, self.lo, self.load), inp, 1, self.load * es // g)
        expanded = nir.alloc([self._expanded_blocks(self.load) * b], elem, "ub")
        expand_to_blocks(self.p, inp, expanded, self.load, es)
        padded_out = round_up(self.n_out, b)
        assembled = nir.alloc([self._expanded_blocks(self.n_out) * b], elem, "ub")
        if self.insert:  # the elements outside the box keep their value
            old = nir.alloc([padded_out], elem, "ub")
            copy("cce.copy_gm_to_ub", sub(dst, 0, padded_out), old, 1, padded_out * es // g)
            expand_to_blocks(self.p, old, assembled, self.n_out, es)
        self.assemble(expanded, assembled)
        groups = self._expanded_blocks(self.n_out) // self.rows
        out = nir.alloc([(2 * (groups * self.rows // b) + 2) * b], elem, "ub")
        compact_blocks(self.p, assembled, out, groups, es)
        copy("cce.copy_ub_to_gm", sub(out, 0, padded_out), sub(dst, 0, padded_out), 1,
             padded_out * es // g)

    def assemble(self, expanded: ir.Value, assembled: ir.Value) -> None:
        """Each run (or, for a run of one element with a stride, each row of
        the last lead dim) is one UB copy of one-block bursts."""
        r, b = self.runs, self.b
        lead, sc, dc = list(r.lead), list(r.src_coef), list(r.dst_coef)
        n, s_step, d_step = r.length, 1, 1
        if r.length == 1 and lead and sc[-1] > 0 and dc[-1] == 1:
            n, s_step, d_step = lead.pop(), sc.pop(), dc.pop()  # strided innermost dim: gaps
        elif r.length == 1 and lead and dc[-1] == 1 and sc[-1] < 0:
            pass  # reversed innermost dim: one copy per element
        count = int(np.prod(lead, dtype=np.int64)) if lead else 1
        src_base, dst_base = r.src_base - self.lo, r.dst_base

        def row(i) -> None:
            index = delinearize(i, lead) if lead else []
            s0 = lin((src_base, b), *[(ix, c * b) for ix, c in zip(index, sc)])
            d0 = lin((dst_base, b), *[(ix, c * b) for ix, c in zip(index, dc)])
            span = ((n - 1) * s_step + 1) * b
            copy("cce.copy_ub_to_ub", sub(expanded, s0, span), sub(assembled, d0, n * d_step * b),
                 n if s_step != 1 else 1, 1 if s_step != 1 else n * b // b,
                 src_gap=s_step - 1 if s_step != 1 else 0, dst_gap=0)

        for_range(count, row)
