"""The IR side of `npu-prefetch` (mixed into `PrefetchPass`): weight copies
of a loop's first iteration cloned, cut to their parts, before an op; the
loop's own copies guarded to skip that iteration."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, scf

from npu.ir import VIEW_OPS, clone_into, constant_int, create_op, defining_op, int_attr
from npu.ir import memref_shape, subview, top_level
from npu.analysis.pipe_work import trip_count
from npu.passes.base import B_AHEAD_ATTR, PassError

from .facts import _guarded, is_guard
from .parts import Candidate, Part


class EmitParts:
    """Clones and guards of the chosen weight copies."""

    def _emit(self, c: Candidate, allocs: list[ir.Operation], parts: list[Part],
              issue: ir.Operation, at: ir.Operation | None = None) -> list[ir.Operation]:
        """Move `allocs` before `issue` (a top-level op) and clone there, or
        before `at` (an op nested in a top-level op before `issue`: a share
        guard's terminator), the loop's first iteration of each part's copy
        (with its index arithmetic and views, the induction variable
        replaced by the lower bound), cut to the part's bursts. Returns the
        top-level ops now before `issue`."""
        loop = c.loop
        body = loop.regions[0].blocks[0]
        iv = body.arguments[0]
        # (`c.body` may still hold slot allocs moved out by an earlier call:
        # those are never cloned, see `slot_allocs`)
        if c.body is None:
            c.body = [o.operation for o in body.operations]
        body_ops = c.body
        if c.body_set is None:  # (a list's `in` compared every op of a large body)
            c.body_set = set(body_ops)
        body_set = c.body_set
        made: list[ir.Operation] = []
        point = issue if at is None else at
        with loop.context, loop.location:
            with ir.InsertionPoint(point):
                first = arith.ConstantOp(ir.IndexType.get(), constant_int(loop.operands[0]))
            if at is None:
                made.append(first.operation)
            for alloc in allocs:
                alloc.move_before(issue)
                made.append(alloc)
            slot_allocs = {a for a, _ in c.slots}
            order = _Order(issue)
            # Each part's chain is found before any clone goes in: inserting
            # one makes MLIR number the function's block again at the next
            # `is_before_in_block` (0.1 CPU s of BERT-12's on 32 cores).
            chains = []
            for part in parts:
                copy = part.copy
                needed: set[ir.Operation] = set()
                # Views and index arithmetic between `issue` and the loop (on
                # many cores, a core's slice of the weights: subviews at the
                # block index, npu-split-cores) are cloned too.
                outside: set[ir.Operation] = set()
                pending = list(copy.operands)
                while pending:
                    op = defining_op(pending.pop())
                    if op is None or op in needed or op in outside or op in slot_allocs:
                        continue
                    if op in body_set:
                        needed.add(op)
                    elif order.after(op):
                        if not (op.name in VIEW_OPS or op.name.startswith("arith.")):
                            raise PassError(f"npu-prefetch: a weight copy's operand is made by "
                                            f"'{op.name}' after the point its load moves to", op)
                        outside.add(op)
                    else:
                        continue
                    pending.extend(op.operands)
                chains.append((sorted(outside, key=order.key)
                               + [o for o in body_ops if o in needed] + [copy]))
            for part, chain in zip(parts, chains):
                copy = part.copy
                with ir.InsertionPoint(point):
                    clones = clone_into(chain, {iv: first.result}, set())
                    whole = clones[-1]
                    n = int_attr(copy, "n_burst")
                    if (part.first, part.end) != (0, n):
                        clones.remove(whole)
                        clones.extend(_cut(whole, part.first, part.end))
                        whole.erase()
                if at is None:
                    made.extend(clones)
        return made

    @staticmethod
    def _guard(c: Candidate, slots, rests: list[Part]) -> None:
        """The loop's own copies of `slots` run from its second iteration on:
        each run of loads (GM copies with only index arithmetic and views
        between them) holding one goes into `scf.if later { the run } else
        { the run without them }` (with `rests`, the bursts of a copy not
        prefetched, in its place there). The run stays whole in both branches: a
        guard around the weight copy alone would split it, and the flag
        sync insertion sets after a copy before the guard would hold MTE2
        until that copy landed (about 350 cycles per iteration in BERT's
        ffn_out), where one flag after the run lets the loads overlap."""
        loop = c.loop
        body = loop.regions[0].blocks[0]
        iv = body.arguments[0]
        guarded = {copy for _, copies in slots for copy in copies}
        runs: list[list[ir.Operation]] = [[]]
        for child in body.operations:
            op = child.operation
            if op.name.startswith("cce.copy_gm_to_"):
                runs[-1].append(op)
            elif op.name.startswith("cce.") or len(op.regions) or op.name == "memref.alloc":
                runs.append([])  # anything but index arithmetic and views ends a run
        with loop.context, loop.location:
            for run in runs:
                if not any(op in guarded for op in run):
                    continue
                last = run[-1]
                with ir.InsertionPoint(last):
                    later = arith.CmpIOp(arith.CmpIPredicate.ne, iv, loop.operands[0]).result
                    guard = scf.IfOp(later, [], has_else=True)
                with ir.InsertionPoint(guard.else_block):
                    for op in run:
                        if op not in guarded:
                            clone_into([op], {}, set())
                        for rest in (r for r in rests if r.copy == op):
                            if (rest.first, rest.end) == (0, int_attr(op, "n_burst")):
                                clone_into([op], {}, set())
                            else:
                                _cut(op, rest.first, rest.end)
                    scf.YieldOp([])
                with ir.InsertionPoint(guard.then_block):
                    end = scf.YieldOp([]).operation
                for op in run:
                    op.move_before(end)


class _Order:
    """Program order in the function of a top-level op `issue`, by MLIR's
    own order within the function's block (`is_before_in_block`) and, for
    nested ops (a guard's few ops), their positions among their siblings.
    Numbering the whole block for each `_emit` took 0.25 CPU s of BERT-12's
    on 32 cores (60 emits over 30k top-level ops)."""

    def __init__(self, issue: ir.Operation):
        self.func = issue.parent.operation
        self.issue = issue.operation

    def _place(self, op: ir.Operation) -> tuple[ir.Operation, tuple[int, ...]]:
        """`op`'s top-level ancestor and the positions of `op` and its
        ancestors below it in their blocks, outermost first."""
        path = []
        while (parent := op.parent.operation) != self.func:
            siblings = [o.operation for r in parent.regions for b in r.blocks
                        for o in b.operations]
            path.append(siblings.index(op))
            op = parent
        return op, tuple(reversed(path))

    def key(self, op: ir.Operation) -> "_Position":
        """Sorts ops in program order."""
        return _Position(*self._place(op))

    def after(self, op: ir.Operation) -> bool:
        """`op` does not come before `issue`: it does not dominate an op
        inserted before `issue`. Only its top-level ancestor is asked for:
        listing the siblings on the way (`_place`) cost a loop body's
        thousands of ops per operand of a copy."""
        op = top_level(op)
        return op == self.issue or self.issue.is_before_in_block(op)


class _Position:
    """A place in program order: (top-level op, positions nested below it)."""

    def __init__(self, top: ir.Operation, path: tuple[int, ...]):
        self.top, self.path = top, path

    def __lt__(self, other: "_Position") -> bool:
        if self.top == other.top:
            return self.path < other.path
        return self.top.is_before_in_block(other.top)


def fold_one_trip_guards(tops: list[ir.Operation], collector, facts) -> None:
    """`EmitParts._guard`'s `scf.if later` in a loop of one trip (a core's
    one C tile), top-level or in a lone top-level core guard (a classifier's
    fc on 21 of 32 cores, `_lone_guard`), replaced by its else branch: the later iterations
    do not exist, but npu-insert-sync cannot tell, and held the readers of
    the guarded copies' buffers (B's L0B loads, B prefetched before the
    barrier) behind the flag of the run's other copies (A's). `collector`
    and `facts` (the pass's `FactsCache`) are told of each op changed."""
    for k, top in enumerate(tops):
        loops = [top] if top.name == "scf.for" else [
            o for o in _guarded(top) if o.name == "scf.for"] if _lone_guard(tops, k, facts) else []
        changed = False
        for loop in loops:
            if B_AHEAD_ATTR not in loop.attributes or trip_count(loop) != 1:
                continue
            body = loop.regions[0].blocks[0]
            guards = [o.operation for o in body.operations if _is_later(o.operation, loop)]
            if not guards:
                continue
            dead = [o for g in guards for region in g.regions[:1] for b in region.blocks
                    for o in b.operations] + guards
            collector.erasing(k, [o.operation for o in dead])
            for g in guards:
                cond = defining_op(g.operands[0])
                for o in list(g.regions[1].blocks[0].operations)[:-1]:
                    o.operation.move_before(g)
                g.erase()
                if not list(cond.results[0].uses):
                    cond.erase()
            changed = True
        if changed:
            collector.changed(k)
            facts.forget(top)


def _lone_guard(tops: list[ir.Operation], k: int, facts) -> bool:
    """Whether `tops[k]` is a core guard with no other working guard beside
    it in its phase (not one of a run of shares: their twins' loops keep
    their guarded copies, `twins.py`)."""
    if not is_guard(tops[k]):
        return False
    for step in (-1, 1):
        j = k + step
        while 0 <= j < len(tops) and tops[j].name != "cce.sync_all" and not facts.works(tops[j]):
            j += step
        if 0 <= j < len(tops) and tops[j].name != "cce.sync_all" and is_guard(tops[j]):
            return False
    return True


def _is_later(op: ir.Operation, loop: ir.Operation) -> bool:
    """An `scf.if` with an else branch on `iv != lower bound` of `loop`."""
    if op.name != "scf.if" or len(op.regions) < 2 or not op.regions[1].blocks:
        return False
    cond = defining_op(op.operands[0])
    return (cond is not None and cond.name == "arith.cmpi"
            and int_attr(cond, "predicate") == 1  # ne
            and cond.operands[0] == loop.regions[0].blocks[0].arguments[0]
            and cond.operands[1] == loop.operands[0])


def _cut(copy: ir.Operation, first: int, end: int) -> list[ir.Operation]:
    """Bursts [first, end) of a copy whose views' first dimension is its
    bursts, as a new copy (with its views) at the insertion point."""
    made = []
    views = []
    for v in copy.operands:
        shape = memref_shape(v)
        views.append(subview(v, [first] + [0] * (len(shape) - 1), [end - first] + shape[1:]))
        made.append(defining_op(views[-1]))
    made.append(create_op(copy.name, views, **{
        "n_burst": end - first, "burst_len": int_attr(copy, "burst_len"),
        "src_gap": int_attr(copy, "src_gap"), "dst_gap": int_attr(copy, "dst_gap")}))
    return made
