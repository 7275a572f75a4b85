"""`npu-split-cores`: one program over several AI cores, with chip barriers.

The function gets a last argument `%blk: index {npu.block_idx}` and the
attribute `npu.block_dim = P`. It stays one program (dialects/README.md,
"Whole programs on many cores"):

* every top-level ascend op gets its own split (`rules.SplitRules`): the largest
  core count up to the one asked for into which it cuts equally (`_best`),
  with 32-byte aligned slices of at least `min-bytes` of output per core
  (default: the bytes a GM transfer moves during its own latency, below which a
  core spends more time starting than moving); its operands become the slices
  core `%blk` owns (`memref.subview`s computed from `%blk`);
* a fused group (npu-fuse's row groups and matmul epilogues, npu-fuse-attention's
  attention) is cut before its lowering (`groups`): rows in chunks, a matmul's
  grid, attention's heads in runs; any other kernel (one already lowered, a
  group that does not cut evenly) runs on core 0;
* a horizontal group (npu-fuse-horizontal's Q, K and V as one matmul, where
  it pays on the cores) cuts each sibling's columns, every core computing
  its columns of all of them from one read of its rows of A (`qkv`);
* independent ops between two barriers (Q, K and V's projections) may run
  side by side instead, each over its own share of the cores, when the matmul
  cost model says so (`share`; `share=false` turns it off); such an op sits
  under `scf.if` on its cores, its slices indexed by the block index less
  its first core;
* `split-k` (for measuring; docs/multicore.md) splits the reduction of the
  matmul epilogue groups it names into partial matmuls and the group's own
  run (`split_k`) before any op is split;
* a rough estimate (`_estimate`) keeps the function on one core when the
  split cannot pay for its barriers (npu-lower lowers the one-core program);
* P is the largest count any op uses; an op on fewer cores sits under
  `scf.if %blk < n`, so the other cores skip to the next barrier;
* a `cce.sync_all` goes before an op exactly where it touches GM that an
  earlier op since the last barrier touched on another core, one of them
  writing (`barriers`): ops that cut a buffer the same way need none.

With `remarks` (or when some op runs on fewer cores than asked), a remark
says what each op chose, and why an op stays on fewer cores.
"""

from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import arith, scf

from npu import ir as nir
from npu.passes.applies import MANY_CORES, one_core_text
from npu.passes.base import Option, Pass, PassError

from npu.costmodel.attention.pattern import ATTENTION_ATTR
from npu.costmodel.conv.epilogue import CONV_EPILOGUE_ATTR
from npu.costmodel.fusion.epilogue import EPILOGUE_ATTR
from npu.costmodel.fusion.rows import FUSED_ATTR

from .barriers import Access, Unit, gm_operands, place
from .groups import apply_group, epilogue_matmuls, external, group_split, written
from . import alone, aligned, attention, channel_grid, idle_shares, peel, qkv, row_parts, share
from . import split_k
from .prefetched import NONE, Lookahead
from .rules import SplitRules, parse_grids
from .split import INERT, Split, apply, split_of

SYNC_ALL = "cce.sync_all"

CUBE_OPS = ("ascend.matmul", "ascend.batch_matmul", "ascend.conv2d")
# A matmul epilogue whose weights hold this many times C's bytes is split up
# when the group cannot be cut (`_dissolve_weight_bound_epilogues`): an estimate.
WEIGHT_BOUND = 8


def _cube_blocks(op: ir.Operation) -> int:
    """The op's 16x16x16 cube blocks: a conv's implicit matmul is
    (Ho*Wo/16) x (its weights' K1 x Cout1) per image."""
    if op.name == "ascend.conv2d":
        out, w = nir.memref_shape(op.operands[-1].type), nir.memref_shape(op.operands[1].type)
        if len(w) != 4:  # the NCHW contract form: not lowered, no estimate
            return 0
        return out[0] * -(-out[2] * out[3] // 16) * w[0] * w[1]
    a, b = (nir.memref_shape(v.type) for v in op.operands[:2])
    return math.prod(a[:-4]) * a[-3] * a[-4] * b[-4]


def _is_matmul(op: ir.Operation) -> bool:
    """A lone matmul or a matmul epilogue group."""
    return op.name == "ascend.matmul" or (op.name == "scf.execute_region"
                                          and EPILOGUE_ATTR in op.attributes)


def _roots(op: ir.Operation, written_only: bool = False) -> set:
    """The GM buffers an op or group reads and writes (or only writes)."""
    if op.name.startswith("ascend."):
        values = [op.operands[-1]] if written_only else list(op.operands)
    else:
        values = list(written(op)) if written_only else gm_operands(op)
    return {nir.view_root(v) for v in values}


def _bytes(v: ir.Value) -> int:
    return math.prod(nir.memref_shape(v.type)) * nir.element_bytes(nir.memref_element(v.type))


# Every option but `cores` applies to a split only (`why_one_core`).
_SPLIT = (MANY_CORES,)


class SplitCoresPass(Pass):
    name = "npu-split-cores"
    summary = "Split each function's work over the target's AI cores, with chip barriers"
    options = (
        Option("cores", int, 0, "cores to split over (0: all of the target's, and a function "
               "that runs on fewer says so only with remarks=true)", low=0),
        Option("min-bytes", int, -1, "least output bytes per core (-1: a GM transfer's latency "
               "worth of bytes; 0: no minimum)", needs=_SPLIT),
        Option("remarks", bool, False, "report each function's split as a remark", needs=_SPLIT),
        Option("estimate", bool, True, "keep a function on one core when the split's estimate "
               "is no better (false: split whatever it costs; for tests)", needs=_SPLIT),
        Option("share", bool, True, "run independent ops between two barriers side by side, each "
               "on its own share of the cores, when the model says it is faster (`share`)",
               needs=_SPLIT),
        Option("grids", str, "", "grids to take instead of the model's, to measure them: "
               "'MxNxK:PKxPM' (a matmul of that shape, when split over PK*PM cores: PK column "
               "parts x PM row parts of C, as the remarks print them) or 'attention:HPxQP' (head "
               "parts x query runs; 0xP: P flat runs of (head, query) rows crossing heads), "
               "joined by ';'; an entry no split takes is an error, and "
               "a function with a forced grid is split even where the estimate prefers one core",
               needs=_SPLIT),
        Option("split-k", str, "", "reductions to split, to measure them: 'MxNxK:PxL' (a matmul "
               "epilogue group whose matmul has that shape: P partial matmuls over equal runs of "
               "the reduction N write f32 sums to GM; the group reduces the last L 16-element "
               "blocks, adds the sums in a fixed order, then runs its epilogue; a chip barrier "
               "between where the grids need one), joined by ';'; an entry no group takes is "
               "an error. A group whose linear epilogue only a fused row group reads gets its "
               "sums added by that row group (no phase of their own, `split_k_rows`)",
               needs=_SPLIT),
        Option("split-k-model", bool, True, "split the reduction of a matmul epilogue group "
               "whose linear epilogue (bias adds, a defractalize to f32) only a fused row group "
               "reads, when the model says the phase saved beats the row group's added loads "
               "(`split_k_model`; groups `split-k` names keep its split)", needs=_SPLIT),
        Option("row-parts", bool, True, "store an intermediate Nz buffer whose every view is a "
               "row part of one height (a core's rows of C, written and read) row part by row "
               "part, each part's blocks contiguous in GM (`row_parts`)", needs=_SPLIT),
    )

    def why_one_core(self, module: ir.Operation | None) -> str | None:
        """Its options other than `cores` apply when it splits: over `cores`
        (0: the target's), whatever the program."""
        return one_core_text(self.cores, self.target)

    def run(self, module: ir.Operation) -> None:
        wanted = self.cores or self.target.cores
        if wanted < 1:
            raise PassError(f"npu-split-cores: cores={wanted} must be at least 1", module)
        if wanted > self.target.cores:
            raise PassError(f"npu-split-cores: cores={wanted} but {self.target.name} has "
                            f"{self.target.cores} cores", module)
        try:
            grids = parse_grids(self.grids)
        except ValueError as e:
            raise PassError(f"npu-split-cores: grids: {e}", module) from None
        try:
            self.reductions = split_k.parse(self.split_k)
        except ValueError as e:
            raise PassError(f"npu-split-cores: split-k: {e}", module) from None
        self.reductions_used: set = set()
        if wanted == 1:  # its other options were refused (`why_one_core`)
            return
        self.rules = SplitRules(self.target, self.least_bytes(), grids)
        for func in nir.functions(module):
            if func.regions[0].blocks:
                self._split_function(func, wanted)
                if self.row_parts and nir.block_idx_arg(func) is not None:
                    row_parts.store_by_row_parts(func)
        if (unused := self.rules.unused_grids()) is not None:
            raise PassError(f"npu-split-cores: grids: {unused}", module)
        if unused_k := [k for k in self.reductions if k not in self.reductions_used]:
            names = ", ".join("x".join(map(str, k)) for k in unused_k)
            raise PassError(f"npu-split-cores: split-k: no matmul epilogue group of {names}",
                            module)

    def least_bytes(self) -> int:
        """The least bytes a core's share of an op must move."""
        if self.min_bytes >= 0:
            return self.min_bytes
        p = self.target.path("gm_to_ub")
        return p.latency * p.bytes_per_cycle

    def nothing_to_split(self, module: ir.Operation) -> bool:
        """No op or group could give two cores their least bytes each: the
        bytes of every ascend op's operands together bound what any op or
        group moves. (npu-lower then lowers for one core at once.)"""
        ops = nir.walk_held(module, lambda o: o.name.startswith("ascend."))
        total = sum(_bytes(v) for op in ops for v in op.operands if nir.is_memref(v.type))
        return total < 2 * self.least_bytes()

    def _split_function(self, func: ir.Operation, wanted: int) -> None:
        if nir.block_idx_arg(func) is not None or nir.BLOCK_DIM_ATTR in func.attributes:
            raise PassError("npu-split-cores: the function is already split over cores", func)
        self._dissolve_weight_bound_epilogues(func, wanted)
        self._split_k(func, wanted)
        peel.peel_rows(func, wanted, self._group, self.target.fractal)
        channel_grid.dissolve_unsplit(func, lambda op: self._best(op, wanted))
        units: list[Unit] = []
        splits: list[Split | None] = []
        ops = [child.operation for child in func.regions[0].blocks[0].operations]
        self.planned = {}
        for at, op in enumerate(ops):
            self.rules.lookahead = self._lookahead(op, ops[at + 1:], units, splits, wanted)
            group = op.name == "scf.execute_region" and any(
                a in op.attributes for a in (FUSED_ATTR, EPILOGUE_ATTR, ATTENTION_ATTR,
                                             CONV_EPILOGUE_ATTR))
            if group or op.name.startswith("ascend."):
                found = aligned.pick(op, self._best(op, wanted), ops[at + 1:], units, splits,
                                     wanted, self)
                units.append((self._group_unit if group else self._ascend_unit)(op, found))
                splits.append(found)
            elif not op.name.startswith(INERT) and (len(op.regions) or op.name.startswith("cce.")):
                units.append(Unit(op, 1, [Access(nir.view_root(v), None, True, {0: None})
                                          for v in gm_operands(op)],
                                  f"{op.name}: 1 core (a kernel already lowered)"))
                splits.append(None)
        self.rules.lookahead = NONE
        shares = share.plan(units, wanted, lambda i, n: self._split_at(units[i].op, n)) \
            if self.share else {}
        for i, (choice, base) in shares.items():
            units[i], splits[i] = self._unit(units[i].op, choice.split), choice.split
            units[i].moved_to(base)
        found = idle_shares.narrow(units, splits, set(shares),
                                   lambda n: self._group(units[0].op, n),
                                   lambda op: FUSED_ATTR in op.attributes, self.target)
        if found is not None:
            units[0], splits[0] = self._group_unit(units[0].op, found), found
            units[0].what += " (the next shares' other cores load their weights meanwhile)"
        alone.move(units, splits, wanted, lambda j, n: alone.regrouped(
            units[j].op, self._group(units[j].op, n), self._group_unit))
        cores = max((u.base + u.cores for u in units), default=1)
        # Fewer cores than asked are said; by default only with `remarks` (small programs fit one).
        told = self.remarks or self.cores != 0
        if cores == 1 and not told:
            return
        if cores == 1:
            why = ("it has no ascend ops" if not units else
                   "no op divides evenly into equal, 32-byte aligned, large enough slices")
            self.remark(func, f"npu-split-cores: one core of {wanted}: {why}")
            return
        before = place(units)
        one, many = self._estimate(units, len(before))
        # A grid the user forced is measured, not second-guessed: the
        # function is split even when the estimate prefers one core.
        forced = {s.forced for f in splits if (s := split_of(f)) is not None and s.forced}
        self.rules.used |= forced
        no_better = self.estimate and many >= 0.9 * one
        if no_better and forced:
            if told:
                self.remark(func, f"npu-split-cores: split although the estimate ({many:.0f} "
                            f"cycles) is no better than one core's ({one:.0f}): grids forced")
        elif no_better:
            if not told:
                return
            self.remark(func, f"npu-split-cores: one core of {wanted}: the split's estimate "
                        f"({many:.0f} cycles with {len(before)} chip barriers) is no better "
                        f"than one core's ({one:.0f})")
            return
        if told and (cores < wanted or self.remarks or any(u.cores < cores for u in units)):
            self.remark(func, f"npu-split-cores: {cores} of {wanted} cores, {len(before)} chip "
                        f"barrier{'s' * (len(before) != 1)}; " + "; ".join(u.what for u in units))
        with func.context, func.location:
            blk = nir.append_argument(func, ir.IndexType.get(),
                                      {nir.BLOCK_IDX_ATTR: ir.UnitAttr.get()})
            func.attributes[nir.BLOCK_DIM_ATTR] = nir.i64_attr(cores)
            barrier_at = set(before)
            for i, (unit, split) in enumerate(zip(units, splits)):
                op = unit.op
                with op.location, ir.InsertionPoint(op):
                    if i in barrier_at:
                        nir.create_op(SYNC_ALL)
                    if unit.base or unit.cores < cores:
                        self._guard(op, blk, unit)
                mine = blk  # the block index within the unit's cores
                if unit.base:
                    with op.location, ir.InsertionPoint(op):
                        mine = arith.SubIOp(blk, nir.index_const(unit.base)).result
                if isinstance(split, tuple):
                    with op.location:
                        apply_group(op, *split, mine, unit.base)
                elif split is not None:
                    with op.location, ir.InsertionPoint(op):
                        apply(op, split, mine, unit.base)
            for child in func.regions[0].blocks[0].operations:
                if "npu.chain" in child.operation.attributes:  # L1 is one core's
                    del child.operation.attributes["npu.chain"]

    @staticmethod
    def _guard(op: ir.Operation, blk: ir.Value, unit: Unit) -> None:
        """Move `op` under `scf.if` on the block index being one of the unit's cores."""
        cond = arith.CmpIOp(arith.CmpIPredicate.ult, blk,
                            nir.index_const(unit.base + unit.cores)).result
        if unit.base:
            first = arith.CmpIOp(arith.CmpIPredicate.uge, blk, nir.index_const(unit.base)).result
            cond = arith.AndIOp(first, cond).result
        guard = scf.IfOp(cond, [], has_else=False)
        with ir.InsertionPoint(guard.then_block):
            end = scf.YieldOp([])
        op.move_before(end.operation)

    def _lookahead(self, op: ir.Operation, after: list[ir.Operation], units: list[Unit],
                   splits: list, wanted: int) -> Lookahead:
        """What npu-prefetch gives a matmul's grid (`prefetched`): the MTE2
        tail of the unit before, when the matmul waits for it, and the next
        top-level op's weight slots, when that is a matmul waiting for this
        one (its split over all the cores asked for, ranked alone)."""
        if not _is_matmul(op):
            return NONE
        gap = 0.0
        if units and splits[-1] is not None and _roots(op) & _roots(units[-1].op, True):
            gap = split_of(splits[-1]).tail
        nxt = next((o for o in after if not o.name.startswith(INERT)), None)
        if nxt is None or not _is_matmul(nxt) or not _roots(nxt) & _roots(op, True):
            return Lookahead(gap)
        self.rules.lookahead = NONE
        found = split_of(self._split_at(nxt, wanted))
        if found is None or not found.slot:
            return Lookahead(gap, True)
        return Lookahead(gap, True, found.slot, found.slots, found.per_byte)

    def _room_before(self, func: ir.Operation, op: ir.Operation, wanted: int) -> float:
        """The MTE2 idle tail of the unit before matmul group `op` when `op`
        waits for it, as the grid ranking gets it (`_lookahead`): that
        unit's split over the cores asked for, with `op` after it."""
        ops = [o.operation for o in func.regions[0].blocks[0].operations]
        at = ops.index(op)
        prev = next((k for k in range(at - 1, -1, -1)
                     if not ops[k].name.startswith(INERT)), None)
        if prev is None or not _roots(op) & _roots(ops[prev], True):
            return 0.0
        self.rules.lookahead = self._lookahead(ops[prev], ops[prev + 1:], [], [], wanted)
        try:
            found = split_of(self._split_at(ops[prev], wanted))
        finally:
            self.rules.lookahead = NONE
        return found.tail if found is not None else 0.0

    def _split_at(self, op: ir.Operation, n: int) -> Split | tuple | None:
        """An ascend op's or a fused group's split over n cores, or None."""
        if op.name.startswith("ascend."):
            return self.rules.split(op, n)
        if op.name == "scf.execute_region":
            return self._group(op, n)
        return None

    def _best(self, op: ir.Operation, wanted: int) -> Split | tuple | None:
        """An op's or a group's split over the most cores up to `wanted` that takes one."""
        return next((s for n in range(wanted, 1, -1) if (s := self._split_at(op, n)) is not None),
                    None)

    def _unit(self, op: ir.Operation, found: Split | tuple) -> Unit:
        return (self._group_unit(op, found) if isinstance(found, tuple)
                else self._ascend_unit(op, found))

    def _dissolve_weight_bound_epilogues(self, func: ir.Operation, wanted: int) -> None:
        """A matmul epilogue group that does not cut evenly (a classifier's
        1000 columns are not whole fractals on every core) but whose matmul
        reads far more weight bytes than its C holds is split up: the
        matmul over the cores, its epilogue ops after it as they cut. Fusing
        saves a pass over C; one core reading all the weights costs far more."""
        for group, matmul in epilogue_matmuls(func):
            if (_bytes(matmul.operands[1]) < WEIGHT_BOUND * _bytes(matmul.operands[2])
                    or self._best(group, wanted) is not None or self._best(matmul, wanted) is None):
                continue
            nir.dissolve_group(group, [])

    def _split_k(self, func: ir.Operation, wanted: int) -> None:
        """The `split-k` entries' reduction splits (`split_k`), then the
        model's (`split_k_model`) for groups whose sums a row group adds."""
        try:
            used, said = split_k.apply_all(func, self.reductions, self.target.fractal)
        except ValueError as e:
            raise PassError(f"npu-split-cores: split-k: {e}", func) from None
        self.reductions_used |= used
        if self.split_k_model:
            said += split_k.apply_model(func, set(self.reductions), wanted, self.target,
                                        lambda group: self._room_before(func, group, wanted))
        if said and self.remarks:
            self.remark(func, "npu-split-cores: " + "; ".join(said))

    def _estimate(self, units: list[Unit], barriers: int) -> tuple[float, float]:
        """(one core, the split) in cycles, roughly: each unit's GM bytes over
        one core's mover rate and its cube blocks, shared by its cores, with
        a first load's and last store's latency on each, plus the barriers;
        the split must save a tenth (it also gives up L1 chains, which run
        on one core only). Enough to keep a
        split that cannot pay for its barriers from making a program slower
        than on one core."""
        t = self.target
        rate = t.path("gm_to_ub").bytes_per_cycle
        one = many = 0.0
        for u in units:
            gm = sum(_bytes(a.value if a.value is not None else a.root) for a in u.accesses)
            blocks = sum(_cube_blocks(op) for op in nir.walk(u.op, lambda o: o.name in CUBE_OPS))
            work = max(gm / rate, t.cube_cycles(float(blocks)))
            fixed = 2 * t.path("gm_to_ub").latency  # a load's and a store's start, on every core
            one += work + fixed
            many += work / u.cores + fixed
        return one, many + barriers * t.sync_all_cycles

    def _group(self, group: ir.Operation, parts: int) -> tuple | None:
        """A fused group's split over `parts` cores when each core moves the least
        bytes (its slices; a matmul's weights count) or one channel block; an
        attention's grid is its cost model's (each core's start counted),
        whatever its bytes (a LLaMA's 8 heads x 128 rows: 8x4 was refused)."""
        found = group_split(group, parts, self.rules)
        if (found is None or channel_grid.one_block(group, found[0])
                or ATTENTION_ATTR in group.attributes):
            return found
        moved = sum(_bytes(v) for v in external(group, found[1]))
        return found if moved // parts >= self.rules.min_bytes else None

    def _group_unit(self, group: ir.Operation, found: tuple | None) -> Unit:
        kind = ("fused rows" if FUSED_ATTR in group.attributes else "attention"
                if ATTENTION_ATTR in group.attributes else "conv epilogue"
                if CONV_EPILOGUE_ATTR in group.attributes
                else "matmul epilogue" + qkv.said(group))
        if found is None:  # each operand whole on one core, compared exactly with static
            # views of one tensor (a peeled rest beside its row blocks); a written one's a write
            roots = {nir.view_root(w) for w in written(group)}
            accesses = [Access(nir.view_root(v), v, nir.view_root(v) in roots,
                               {0: tuple((0, n) for n in nir.memref_shape(v.type))})
                        for v in gm_operands(group)]
            return Unit(group, 1, accesses, f"{kind}: 1 core (no even split of every tensor)")
        split, cuts = found
        mine = written(group)
        accesses = [Access(nir.view_root(v), v, v in mine,
                           split.boxes(nir.memref_shape(v.type), cuts[v]))
                    for v in external(group, cuts)]
        return Unit(group, split.parts, accesses, attention.flat_remark(group, split)
                    or f"{kind} {'x'.join(str(k) for _, k in split.grid)}")

    def _ascend_unit(self, op: ir.Operation, split: Split | None) -> Unit:
        """The op's GM accesses per core; the output (last operand) is written."""
        n = split.parts if split is not None else 1
        accesses = []
        last = len(op.operands) - 1
        for i, v in enumerate(op.operands):
            shape = nir.memref_shape(v.type)
            boxes = (split.boxes(shape, split.cuts[i]) if split is not None
                     else {0: tuple((0, s) for s in shape)})
            accesses.append(Access(nir.view_root(v), v, i == last, boxes))
        what = (f"{op.name} {'x'.join(str(k) for _, k in split.grid)}" if split is not None
                else f"{op.name}: 1 core (no equal, 32-byte aligned, large enough slices)")
        return Unit(op, n, accesses, what)
