"""Weight loads after a run of ops on disjoint shares of the cores (mixed
into `PrefetchPass`).

Why: npu-split-cores runs independent ops side by side, each under an
`scf.if` on its own share of the cores (BERT's Q, K and V projections on
cores 0-7, 8-15 and 16-23). A load cloned after the last of them runs on
every core, but on the cores of an earlier share MTE2 first passes the
later guards' entry flags, which npu-insert-sync places outside them
(it cannot tell that no core runs two of them): there MTE2 waited for
the core's last store before loading. Measured at seq 128 (32 cores):
out_proj's prefetched slot loaded from 12,083 to 13,588 on core 0, where
q_proj's last load ended at 9,750 and its last store at 12,080, and that
held the chip barrier after the projections until 14,312.

So the loads of the previous op's tail go into each guard of the run,
after its op (on its cores they follow that op's last load as on one
core), and after the run under a guard of the cores in none of them.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, scf

from npu.ir import ancestors, block_dim, block_idx_value, constant_int, defining_op

from .facts import is_guard

# arith.cmpi predicates (their enum values) on non-negative indices.
_CMP = {0: lambda a, b: a == b, 1: lambda a, b: a != b, 2: lambda a, b: a < b,
        3: lambda a, b: a <= b, 4: lambda a, b: a > b, 5: lambda a, b: a >= b,
        6: lambda a, b: a < b, 7: lambda a, b: a <= b, 8: lambda a, b: a > b,
        9: lambda a, b: a >= b}
_BINARY = {"arith.andi": lambda a, b: a & b, "arith.ori": lambda a, b: a | b,
           "arith.xori": lambda a, b: a ^ b, "arith.addi": lambda a, b: a + b,
           "arith.subi": lambda a, b: a - b, "arith.muli": lambda a, b: a * b,
           "arith.divui": lambda a, b: a // b if b else None,
           "arith.remui": lambda a, b: a % b if b else None}


def _value(v: ir.Value, blk: ir.Value, core: int, depth: int = 0) -> int | None:
    """`v` computed on core `core` from the block index and constants, or
    None when it depends on anything else."""
    if v == blk:
        return core
    known = constant_int(v)
    if known is not None:
        return known
    op = defining_op(v)
    if op is None or depth > 16:
        return None
    if op.name == "arith.cmpi":
        a, b = (_value(x, blk, core, depth + 1) for x in op.operands)
        pred = ir.IntegerAttr(op.attributes["predicate"]).value
        return None if a is None or b is None or pred not in _CMP else int(_CMP[pred](a, b))
    if op.name in _BINARY:
        a, b = (_value(x, blk, core, depth + 1) for x in op.operands)
        return None if a is None or b is None else _BINARY[op.name](a, b)
    return None


def guard_cores(guard: ir.Operation, cores: int) -> frozenset[int] | None:
    """The cores (of `cores`) that run the then-branch of `guard`, an
    `scf.if` whose condition is arithmetic on the block index; None when
    it is not."""
    blk = block_idx_value(guard)
    if blk is None:
        return None
    taken = set()
    for core in range(cores):
        value = _value(guard.operands[0], blk, core)
        if value is None:
            return None
        if value:
            taken.add(core)
    return frozenset(taken)


class ShareRuns:
    """Finding the run of share guards that ends the previous op, and the
    condition of the cores outside it (`self.facts`: the pass's cache)."""

    def _guard_cores(self, guard: ir.Operation, cores: int) -> frozenset[int] | None:
        """`guard_cores`, once per guard and pass run (`self._guards`, set by
        the pass): the pass never erases a guard or changes its condition,
        and evaluating it per core for each share that asked was 0.1 CPU s
        of BERT-12's on 32 cores."""
        key = (guard, cores)
        found = self._guards.get(key, self)
        if found is self:
            found = self._guards[key] = guard_cores(guard, cores)
        return found

    def _share_run(self, tops: list[ir.Operation], prev: int, least: int = 2
                   ) -> list[tuple[int, frozenset[int]]] | None:
        """(index, cores) of each guard in the run of top-level share guards
        that ends at `tops[prev]` (back to the last chip barrier or working
        op that is no guard), when they are at least two on pairwise
        disjoint cores; else None."""
        if prev < 0 or not is_guard(tops[prev]):
            return None
        func = tops[prev].parent.operation
        cores = block_dim(func)
        run: list[tuple[int, frozenset[int]]] = []
        seen: set[int] = set()
        for k in range(prev, -1, -1):
            op = tops[k]
            if op.name == "cce.sync_all":
                break
            if not self.facts.works(op):
                continue
            if not is_guard(op):
                break
            mine = self._guard_cores(op, cores)
            if mine is None or mine & seen:
                break
            seen |= mine
            run.append((k, mine))
        return list(reversed(run)) if len(run) >= least else None

    def _runs_on(self, loop: ir.Operation, cores: int) -> frozenset[int]:
        """The cores that run `loop`: its top-level share guard's (a matmul
        on some of the cores), else all."""
        top = ([loop] + list(ancestors(loop)))[-1]
        mine = self._guard_cores(top, cores) if is_guard(top) else None
        return frozenset(range(cores)) if mine is None else mine

    def _fits_run(self, c, run: list[tuple[int, frozenset[int]]], cores: int) -> bool:
        """Every guard of `run` on cores that run `c`'s loop: a clone of its
        loads computes its slice from the block index, out of the weights'
        bounds on a core that has none."""
        mine = self._runs_on(c.loop, cores)
        return all(g <= mine for _, g in run)

    def _outside_guard(self, c, run: list[tuple[int, frozenset[int]]], blk: ir.Value,
                       cores: int) -> tuple[scf.IfOp | None, list[ir.Operation]]:
        """At the insertion point, an `scf.if` (no else) on the cores in none
        of the run's guards that run `c`'s loop (a peeled row group's rest
        on core 4 beside its blocks on 0-3, before a matmul on cores 0-7:
        5-7), or None when there are none, and the ops made."""
        inside = frozenset().union(*(g for _, g in run))
        mine = self._runs_on(c.loop, cores)
        rest = [k for k in range(cores) if k not in inside and k in mine]
        if not rest:
            return None, []
        return cores_guard(rest, blk, cores)

    def _emit_run(self, c, allocs: list[ir.Operation], parts: list, gap: int,
                  run: list[tuple[int, frozenset[int]]], tops: list[ir.Operation],
                  collector) -> None:
        """`parts` (of the tail of `tops[gap]`, the run's last guard) cloned
        into each guard of `run` after its op and, after the run, under a
        guard of the cores in none of them; `allocs` move before the run's
        first guard. `tops` and `collector` follow the top-level inserts."""
        issue = tops[gap + 1]
        blk = block_idx_value(issue)
        with issue.context, issue.location, ir.InsertionPoint(issue):
            outside, made = self._outside_guard(c, run, blk, block_dim(issue.parent.operation))
        if outside is not None:
            # Into the guard only (no allocs): the top-level ops made are the
            # guard's (listing the block to find them was 0.07 CPU s of BERT-12's).
            self._emit(c, [], parts, issue, at=outside.then_block.operations[0].operation)
            collector.inserted(gap + 1, made)
            tops[gap + 1:gap + 2] = made + [issue]
        for k, _ in run:
            guard = tops[k]
            self._emit(c, [], parts, guard, at=_terminator(guard))
            self.facts.forget(guard)
            # Ops were only added to the guard (its own kept their
            # accesses): re-deriving them all cost 0.5 CPU s of BERT-12 on
            # 32 cores (36 guards, 7,200 accesses).
            collector.changed(k, same_accesses=True)
        first = run[0][0]
        for alloc in allocs:
            alloc.move_before(tops[first])
        if allocs:
            collector.inserted(first, list(allocs))
            tops[first:first] = list(allocs)


def _terminator(guard: ir.Operation) -> ir.Operation:
    """The `scf.yield` that ends a guard's then-block."""
    block = guard.regions[0].blocks[0]
    return block.operations[len(block.operations) - 1].operation


def cores_guard(cores: list[int], blk: ir.Value,
                 total: int) -> tuple[scf.IfOp, list[ir.Operation]]:
    """At the insertion point, an `scf.if` (no else) on the cores `cores`
    (a run of consecutive ones, or any set: one range test per run), and
    every op it made there, in order (the condition's, then the `scf.if`)."""
    ranges: list[list[int]] = []
    for c in cores:
        if ranges and ranges[-1][1] == c:
            ranges[-1][1] = c + 1
        else:
            ranges.append([c, c + 1])
    index = ir.IndexType.get()
    made: list[ir.Operation] = []

    def value(op) -> ir.Value:
        made.append(op.operation)
        return op.result

    cond = None
    for lo, hi in ranges:
        terms = []
        if lo > 0:
            terms.append(value(arith.CmpIOp(arith.CmpIPredicate.uge, blk,
                                            value(arith.ConstantOp(index, lo)))))
        if hi < total:
            terms.append(value(arith.CmpIOp(arith.CmpIPredicate.ult, blk,
                                            value(arith.ConstantOp(index, hi)))))
        term = terms[0] if len(terms) == 1 else value(arith.AndIOp(*terms))
        cond = term if cond is None else value(arith.OrIOp(cond, term))
    guard = scf.IfOp(cond, [], has_else=False)
    made.append(guard.operation)
    with ir.InsertionPoint(guard.then_block):
        scf.YieldOp([])
    return guard, made
