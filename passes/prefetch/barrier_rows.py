"""Host-constant rows loaded right after a chip barrier (a fused row
group's parameter rows: a layernorm's gamma and beta), moved before the
barrier (mixed into `PrefetchPass`).

Why: `npu-lower-fused` loads a group's `row` operands once, before its
chunks, as its first loads. After a chip barrier they held MTE2 ahead of
the rows the first chunk waits for (BERT-base seq 128 on 32 cores: ln2's
gamma and beta, 2 x 3 KB, 98 cycles of MTE2 on the last core). No op
writes a host constant, so the load may stay in flight through the
barrier (docs/multicore.md, "Loads through the barrier"): issued just
before it, it streams while the cores arrive, and the flag across the
barrier that `npu-insert-sync` pairs for its consumer finds it landed.
`rows.py` does the same for a matmul's bias row, in the matmul's own
placement; a row group has no weights to join.

With them (`barrier-inputs`) go the first chunk's loads of GM no core
writes in the phase before the barrier (ln2's residual rows: ln1's output,
written phases earlier), into a chunk buffer allocated after the barrier
(no earlier use of its bytes to wait for) apart from the bytes the loads
left behind write (BERT seq 128 on 32 cores: ln2's phase 1,929 -> 1,893
cycles, ln1's 3,302 -> 3,238). The later chunks' such loads into the same
buffers follow, where every core's bytes of them over the chip's bus
outweigh a GM latency (`_later_pays`): BERT seq 512 on 32 cores, ln1's
phase 6,564 -> 5,474 cycles, ln2's 6,522 -> 5,598.
"""

from __future__ import annotations

from mlir import ir

from npu.analysis.access import AccessAnalysis, is_access_op
from npu.analysis.byte_ranges import may_overlap
from npu.analysis.pipe_work import instruction_cycles
from npu.ir import (VIEW_OPS, block_dim, constant_int, defining_op, int_attr, is_block_argument,
                    is_memref, memory_space, memref_bytes, view_root, walk)

from .facts import outruns_bus
from .guard_rows import opening_rows
from .parts import L1_ROOMS, _sole_constant_row

# A row's buffer may be written again after the opening (a conv's bias by its
# broadcast); False: only rows whose buffer nothing else writes (as before).
LATER_WRITERS = True

# What may lie between the barrier and a group's parameter loads: index
# arithmetic, views and allocs (the group's preparation) and other such loads.
_PREPARATION = ("memref.alloc", "cce.copy_gm_to_ub") + tuple(VIEW_OPS)
# Ops whose GM operands they read only (besides copies from GM and views).
_GM_READERS = ("memref.load", "hivm.load_gm_scalar")


class BarrierRows:
    """Moves host-constant UB loads that open a phase before its chip
    barrier (`self.constants`, `_rows_fit`, `_move_rows` and
    `self.l1_room` come from `PrefetchPass` and `RowLoads`)."""

    def _barrier_rows(self, func: ir.Operation, tops: list[ir.Operation], collector) -> None:
        bound = L1_ROOMS.index(self.l1_room)
        for barrier in [op for op in tops if op.name == "cce.sync_all"]:
            k = tops.index(barrier)
            rows = self._opening_rows(tops, k)
            inputs, written = self._settled_inputs(tops, k) if self.barrier_inputs else ([], [])
            last = max((tops.index(r, k) for r in rows), default=k)
            fit = not rows or self._rows_fit(func, rows, collector, k, last, bound)
            # An input's alloc is live from its own place on either way:
            # from the barrier to there, beside the rows.
            made = min((tops.index(defining_op(view_root(r.operands[1])), k) for r in inputs),
                       default=k)
            if inputs and fit and self._rows_fit(func, rows + inputs, collector, k, made, bound):
                rows = rows + inputs + self._later_inputs(func, tops, k, inputs, written, rows)
            if rows and fit:
                self._move_rows(rows, barrier, tops, collector, k)
        self._guarded_rows(func, tops, collector)  # the rows in a guard (`guard_rows.py`)

    def _opening_rows(self, tops: list[ir.Operation], barrier: int) -> list[ir.Operation]:
        """The GM -> UB copies of host constants among the ops right after
        `tops[barrier]` that prepare the next op (up to its first other
        instruction or region), each the only such copy into a
        function-level alloc (`guard_rows.opening_rows`: a conv's bias,
        which its broadcast on V writes again later)."""
        if not LATER_WRITERS:
            found = []
            for op in tops[barrier + 1:]:
                if not (op.name in _PREPARATION or op.name.startswith("arith.")):
                    break
                if _sole_constant_row(op, self.constants, op):
                    found.append(op)
            return found
        return opening_rows(tops[barrier + 1:], self.constants)

    def _settled_inputs(self, tops: list[ir.Operation], barrier: int
                        ) -> tuple[list[ir.Operation], list]:
        """The other GM -> UB copies among the ops `_opening_rows` looks at
        whose GM bytes no op of the phase before `tops[barrier]` (on any
        core) may write, into a function-level alloc made after the barrier,
        apart from the UB bytes the copies before them there write; and the
        hulls that phase's ops may write (`_gm_writes`)."""
        start = max((k for k in range(barrier) if tops[k].name == "cce.sync_all"), default=-1)
        written = [h for top in tops[start + 1:barrier] for h in _gm_writes(top)]
        analysis = AccessAnalysis(self.target)
        later = set(tops[barrier + 1:])
        copies, found = [], []
        for op in tops[barrier + 1:]:
            if not (op.name in _PREPARATION or op.name.startswith("arith.")):
                break
            if op.name != "cce.copy_gm_to_ub":
                continue
            alloc = defining_op(view_root(op.operands[1]))
            hull = _gm_hull(op.operands[0])
            if (view_root(op.operands[0]) not in self.constants and hull is not None
                    and alloc is not None and alloc.name == "memref.alloc" and alloc in later
                    and not any(w is None or _hulls_meet(hull, w) for w in written)
                    and not any(may_overlap(b, a, analysis)
                                for c in copies for a in analysis.access(c).writes
                                for b in analysis.access(op).writes)):
                found.append(op)
            copies.append(op)
        return found, written

    def _later_inputs(self, func: ir.Operation, tops: list[ir.Operation], barrier: int,
                      inputs: list[ir.Operation], written: list, rows: list[ir.Operation]
                      ) -> list[ir.Operation]:
        """The later chunks' loads of settled GM (`_settled_inputs`' kind)
        into the same buffers as `inputs`, up to the next barrier: top-level
        GM -> UB copies whose GM bytes no core writes from the phase before
        the barrier up to the copy, and whose UB bytes no op between the
        barrier and the copy touches; when they pay (`_later_pays`, or
        `_tail_holds` for them, `inputs` and the parameter `rows` moved with
        them). `written`: the hulls the phase before the barrier may write."""
        if not outruns_bus(block_dim(func), self.target, "gm_to_ub"):
            return []
        allocs = {defining_op(view_root(c.operands[1])) for c in inputs}
        written = list(written)
        # the row group's ops (its location) end the search: later copies are others'
        where = self.facts.location(inputs[0])
        end = barrier + 1
        for k in range(barrier + 1, len(tops)):
            if tops[k].name == "cce.sync_all":
                break
            if self.facts.location(tops[k]) == where:
                end = k + 1
        analysis = AccessAnalysis(self.target)
        touched = []  # UB ranges the ops after the barrier read or write
        found = []
        for op in tops[barrier + 1:end]:
            if op.name == "cce.copy_gm_to_ub" and op not in inputs \
                    and defining_op(view_root(op.operands[1])) in allocs:
                hull = _gm_hull(op.operands[0])
                dst = analysis.access(op).writes
                if (hull is not None and not any(w is None or _hulls_meet(hull, w) for w in written)
                        and not any(may_overlap(t, d, analysis) for t in touched for d in dst)):
                    found.append(op)
                    continue
            written.extend(_gm_writes(op))
            for o in walk(op):
                if is_access_op(o):
                    acc = analysis.access(o)
                    touched.extend(r for r in acc.reads + acc.writes if r.space == "ub")
        pays = self._later_pays(func, found) or (
            found and self._tail_holds(tops, barrier, rows + inputs + found))
        return found if pays else []

    def _later_pays(self, func: ir.Operation, later: list[ir.Operation]) -> bool:
        """Whether moving `later` before the barrier pays (on more cores
        than the chip's GM bus serves at their movers' rate, `_later_inputs`
        asks first: then a row group's phase, every core loading and storing
        at once, is bound by the bus, and the bus time these loads take
        there comes off it): when that time, every core's bytes over the bus, exceeds one GM
        latency of the path: what a load still in flight at the release
        may hold the first chunk's loads behind it (MTE2 runs in order).
        BERT seq 512 on 32 cores: ln1's second chunk of residual rows (24 KB
        a core, 655 bus cycles) and ln2's last two (27 KB, 737): 87,918 ->
        85,904 cycles. Not on 8 cores (ln2's chunks pipeline on MTE2, and
        its first waited for the later ones: 243,581 -> 244,206), nor seq
        128 on 32 (6 KB a core, 164 bus cycles: 38,671 -> 38,908)."""
        if not later:
            return False
        t = self.target
        path = t.path("gm_to_ub")
        cores = block_dim(func)
        moved = sum(int_attr(c, "n_burst") * int_attr(c, "burst_len") for c in later)
        return cores * moved * t.vector_block_bytes / t.gm_chip_bytes_per_cycle > path.latency

    def _tail_holds(self, tops: list[ir.Operation], barrier: int,
                    moved: list[ir.Operation]) -> bool:
        """Whether the phase before `tops[barrier]` ends with MTE2 idle long
        enough for `moved` to land before its cores arrive: its last op that
        does work loads, and its tail after its last load (`OpFacts.tail_span`:
        the last load's landing, the last mads, the drain) covers their
        mover time and one GM latency. Then they cost the phase nothing, and
        each chunk's loads after the barrier no longer wait behind the
        previous chunk's flag (BERT seq 128 on 32 cores: ln2's second chunk
        after ffn_out's drain, the phase 1,653 -> 1,634 cycles; ln1's after
        out_proj's phase, whose tail carries the weights of ffn_in, not)."""
        k = barrier - 1
        while k >= 0 and not self.facts.works(tops[k]):
            k -= 1
        if k < 0:
            return False
        facts = self.facts(tops[k])
        t = self.target
        need = sum(instruction_cycles(c, t) for c in moved) + t.path("gm_to_ub").latency
        return facts.loads > 0 and facts.tail_span >= need


def _gm_hull(value: ir.Value) -> tuple[ir.Value, int, int] | None:
    """(function argument, first byte, end) that GM memref `value` lies in:
    its innermost `memref.view` of an argument at a constant byte shift (a
    workspace tensor), else the whole argument; None when neither."""
    while (op := defining_op(value)) is not None and op.name != "memref.view":
        if op.name not in VIEW_OPS:
            return None
        value = op.operands[0]
    if op is None:
        return (value, 0, memref_bytes(value.type)) if is_block_argument(value) else None
    shift = constant_int(op.operands[1])
    if shift is None or defining_op(op.operands[0]) is not None:
        return None
    return op.operands[0], shift, shift + memref_bytes(op.results[0].type)


def _gm_writes(top: ir.Operation) -> list[tuple[ir.Value, int, int] | None]:
    """The hulls of the GM operands of every op in `top` but those that only
    read them (copies from GM, `_GM_READERS`, views): what the ops may write
    (None: anything). Every other op counts, cce or not (a scalar
    `memref.store`)."""
    return gm_hulls(top, writes_only=True)


def gm_hulls(top: ir.Operation, writes_only: bool = False
             ) -> list[tuple[ir.Value, int, int] | None]:
    """The hulls of the GM operands of every op in `top` (views aside), of
    the ops that may write them only with `writes_only` (`_gm_writes`)."""
    return [_gm_hull(v) for op in walk(top)
            if op.name not in VIEW_OPS and not (writes_only and (
                op.name.startswith("cce.copy_gm_to_") or op.name in _GM_READERS))
            for v in op.operands if is_memref(v.type) and memory_space(v.type) == "gm"]


def _hulls_meet(a: tuple[ir.Value, int, int], b: tuple[ir.Value, int, int]) -> bool:
    return a[0] == b[0] and a[1] < b[2] and b[1] < a[2]

