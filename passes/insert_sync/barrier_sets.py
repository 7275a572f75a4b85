"""MTE2's sets before a chip barrier moved into the first loop after it,
behind that loop's first loads (`npu-insert-sync` precise mode, `barrier-sets`).

Why: loads before a chip barrier stream on through it (a core arrives once
its pipes but MTE2 have drained), and each consumer after the barrier of a
load before it gets a flag pair whose set goes right before the barrier
(`precise._sink`: after the run of loads). A set holds its pipe until
everything issued before it has landed, so MTE2 then idles one GM latency
after the last streamed load before the first load after the barrier
issues: BERT seq 128 on 32 cores, core 30 loads ffn_out's A 184 cycles into
its phase, behind ffn_out's bias row (192 bytes) and the sets for it and
for the weight slots before it. Those consumers (the slots' MTE1 loads, the
bias add in the drain) come after the loop's own first wait on MTE2 (its
first A chunk) anyway: their sets, issued right after the loop's first set
on MTE2, fire when that chunk has landed, and MTE2 goes on from the
release to that chunk without a pause. BERT seq 128 on 32 cores: ffn_out's
phase 9,265 -> 9,137 cycles.

Taken only where it cannot deadlock or reorder pairs: the sets are the run
of `set_flag`s with src MTE2 right before the barrier; the first op after
the barrier that issues on MTE2 is a one-trip `scf.for` (its body runs
once: a set there is set once), reached without a wait on MTE2; in the
loop's body, the ops before its first MTE2 set issue loads only (copies
GM -> on chip, directly or under `scf.if`) and index arithmetic, no wait;
and no other set of a moved set's (src, dst, event) lies between its old
place and its new one (the loop's own set of the same flag, the anchor,
stays before the moved one, and the waits take them in turn).
"""

from __future__ import annotations

from mlir import ir

from npu.analysis.pipe_work import trip_count
from npu.ir import int_attr, str_attr, walk

SET, WAIT, BARRIER = "cce.set_flag", "cce.wait_flag", "cce.sync_all"
PIPE_BARRIER = "cce.pipe_barrier"
MOVER = "MTE2"
_LOADS = ("cce.copy_gm_to_l1", "cce.copy_gm_to_ub")
# copies on chip that the scan lets pass too: they wait for nothing MTE2 sets
_ON_CHIP = ("cce.copy_ub_to_l1",)


def sink_barrier_sets(block: ir.Block) -> int:
    """Move the sets as the module docstring says in `block` (a function
    body); returns how many moved."""
    tops = [o.operation for o in block.operations]
    moved = 0
    for k, barrier in enumerate(tops):
        if barrier.name != BARRIER:
            continue
        run = []
        j = k - 1
        while j >= 0 and (_pure(tops[j]) or tops[j].name == SET and str_attr(tops[j], "src") == MOVER):
            if tops[j].name == SET:
                run.insert(0, tops[j])
            j -= 1
        if not run:
            continue
        anchor = _loop_anchor(tops[k + 1:], {_flag(s) for s in run})
        if anchor is None or _crossed(run, anchor):
            continue
        for s in run:
            s.move_after(anchor)
            anchor = s
        moved += len(run)
    return moved


def _loop_anchor(after: list[ir.Operation], flags: set) -> ir.Operation | None:
    """The first MTE2 set in the body of the first op of `after` that issues
    on MTE2, when that op is a one-trip loop reached without a wait on MTE2
    and without a chip barrier, nor a pipe barrier on a pipe that waits for
    one of the moved sets' `flags` before it (the scalar unit would stop
    there until that pipe drains, and the pipe waits for the set issued
    after: a deadlock; DenseNet's concats on 8 cores, a load before one
    barrier and its store after it, the set moved past the next barrier),
    and its body issues only loads before that set."""
    waiting: set = set()  # pipes that wait for a moved set before the anchor
    for op in after:
        inside = list(walk(op))  # read twice below
        if not any(o.name.startswith("cce.copy_gm_to_") or
                   (o.name == SET and str_attr(o, "src") == MOVER) for o in inside):
            for o in inside:
                if o.name == WAIT and _flag(o) in flags:
                    waiting.add(str_attr(o, "dst"))
                if (o.name == WAIT and str_attr(o, "dst") == MOVER or o.name == BARRIER
                        or o.name == PIPE_BARRIER and str_attr(o, "pipe") in waiting | {"ALL"}):
                    return None
            continue
        if op.name == "scf.for" and trip_count(op) == 1:
            body = [x.operation for x in op.regions[0].blocks[0].operations]
        elif op.name == "scf.if":  # a one-trip loop inlined (`own_tiles.inline_marked`)
            body = after[after.index(op):]
        else:
            return None
        for o in body:
            if o.name == SET and str_attr(o, "src") == MOVER:
                return o
            if o.name == SET:  # another pipe's set (after the own tiles' copies) waits for nothing
                continue
            if o.name in _LOADS or _pure(o) or (o.name == "scf.if" and all(
                    x.name in _LOADS + _ON_CHIP or x.name in ("scf.if", "scf.yield") or _pure(x)
                    for x in walk(o))):
                continue
            return None
        return None
    return None


def _crossed(run: list[ir.Operation], anchor: ir.Operation) -> bool:
    """Whether a set of one of `run`'s flags lies between the run and
    `anchor` (the anchor aside: the moved sets follow it). Their waits may:
    they take the sets in turn, and MTE2 issues only loads up to the anchor."""
    flags = {_flag(s) for s in run}
    block_ops = [o.operation for o in run[-1].block.operations]
    if anchor.block == run[-1].block:  # the loop inlined: the ops between, at top level
        between = [x for o in block_ops[block_ops.index(run[-1]) + 1:block_ops.index(anchor)]
                   for x in walk(o)]
        return any(x.name == SET and _flag(x) in flags for x in between)
    loop = anchor.parent
    while loop is not None and loop.block != run[-1].block:
        loop = loop.parent
    between = [x for o in block_ops[block_ops.index(run[-1]) + 1:block_ops.index(loop)]
               for x in walk(o)]
    body = [o.operation for o in anchor.block.operations]
    between += [x for o in body[:body.index(anchor)] for x in walk(o)]
    return any(x.name == SET and _flag(x) in flags for x in between)


def _pure(op: ir.Operation) -> bool:
    """Index arithmetic, views and allocs: nothing any pipe issues."""
    return op.name.startswith(("arith.", "memref."))


def _flag(op: ir.Operation) -> tuple[str, str, int]:
    return str_attr(op, "src"), str_attr(op, "dst"), int_attr(op, "event")
