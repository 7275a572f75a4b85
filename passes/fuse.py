"""npu-fuse: group ascend row ops (elementwise, broadcasts of rows/columns,
last-axis reductions) that run over the same rows into one kernel each, so
intermediate tensors stay in UB instead of making a GM round trip.

Decisions come from a cost model (`npu.fusion`), not from patterns:
  * every row op starts as its own group; a producer group and a consumer
    group joined by a tensor are candidates for merging;
  * the benefit of a merge is the GM bytes it saves: the modelled traffic of
    the two kernels (each tensor loaded once, each tensor leaving a kernel
    stored once) minus that of the merged kernel; the largest positive
    benefit is merged first, until none is left;
  * a merge is refused when the rows differ, when the merged kernel's UB
    footprint (liveness of its per-row buffers in op order) leaves no chunk
    of whole-block rows within `ub-fraction` of UB, or when an op between
    the members conflicts with moving them together (it reads a member's
    result or writes a member's input).
Each group of two or more ops becomes an `scf.execute_region` marked
`npu.fused` (dialects/README.md, "Fused groups") at the position of its last
member; the allocs of tensors that never leave the group move into it. A
remark reports each group (ops, rows, GM bytes before -> after, UB per
chunk) and, for every row op left alone, why.

Before the row groups, matmul epilogues (`npu.epilogue`): each matmul takes
the elementwise consumers of its result, in program order, while joining
saves GM bytes, one column block of its C tile's drain fits the UB share
and moving the op is legal (`npu.epilogue`'s model); the group is an
`scf.execute_region` marked `npu.epilogue` that `npu-lower-matmul` lowers.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from npu import epilogue, fusion
from npu.fusion import FUSED_UB_FRACTION
from npu import ir as nir
from npu import online_rows
from npu.passes.base import Option, Pass, PassError, ub_fraction_option


@dataclass
class _Candidate:
    benefit: int
    producer: int
    consumer: int


class FusePass(Pass):
    name = "npu-fuse"
    summary = "Group row ops (elementwise, broadcasts, last-axis reductions) into fused kernels"
    options = (
        ub_fraction_option(FUSED_UB_FRACTION,
                           "UB share of one chunk's buffers by the footprint model (the rest: "
                           "double buffering and the memory planner's longer lifetimes)"),
        Option("epilogues", bool, True, "join matmuls with the elementwise consumers of their "
               "result (matmul epilogues) before forming row groups"),
        Option("row-major-stores", bool, True, "with epilogues: a defractalize of C (or of "
               "an epilogue's result) joins as its row-major store"),
        Option("remarks", bool, True, "report each group formed and why row ops were left out"),
    )

    def run(self, module: ir.Operation) -> None:
        for func in nir.functions(module):
            if len(func.regions[0].blocks):  # declarations have no body
                self.fuse_function(func)

    def fuse_function(self, func: ir.Operation) -> None:
        budget = int(self.target.capacity("ub") * self.ub_fraction)
        # Matmul epilogues first: a consumer of C joined to its matmul saves
        # C's round trip, more than a row group of the same ops would.
        epilogue_remarks = self.group_epilogues(func, budget) if self.epilogues else {}
        ops, index, users, touches = _scan(func)
        row_ops: dict[ir.Operation, fusion.RowOp] = {}
        reasons: dict[ir.Operation, list[str]] = {}
        for op in ops:
            if op.name.startswith("ascend."):
                d = fusion.describe(op, index[op], self.target)
                if isinstance(d, str):
                    reasons[op] = [d]
                else:
                    row_ops[op] = d
        group_of = {op: k for k, op in enumerate(row_ops)}
        groups: dict[int, list[fusion.RowOp]] = {k: [r] for k, r in enumerate(row_ops.values())}
        # Producer -> consumer edges through a tensor (the last writer before the read).
        writers: dict = {}
        edges: list[tuple[ir.Operation, ir.Operation]] = []
        for op in ops:
            r = row_ops.get(op)
            if r is None:
                continue
            for i in r.ins:
                w = writers.get(i.root)
                if w is not None:
                    edges.append((w, op))
            writers[r.out.root] = op
        granule = self.target.granule("ub")

        kernels: dict[tuple[int, ...], tuple[int | None, online_rows.OnlinePlan | str | None]] = {}

        def kernel(members: list[fusion.RowOp]):
            """(GM bytes, two-pass plan or None) of the members' kernel, or
            (None, why) when no kernel of them fits UB; each set of members
            is modelled once."""
            key = tuple(sorted(m.index for m in members))  # the model sorts them too
            if key not in kernels:
                kernels[key] = self.kernel(members, users, budget, granule)
            return kernels[key]

        def cost(members: list[fusion.RowOp]) -> int:
            return kernel(members)[0]

        # A pair of groups is judged once: each round re-reads the verdicts
        # of the pairs no merge has changed (judging them every round made
        # the pass quadratic in the function's row ops, with a big constant).
        verdicts: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[str | None, int]] = {}

        def judge(producer: list[fusion.RowOp], consumer: list[fusion.RowOp]) -> tuple[str | None, int]:
            key = (tuple(m.index for m in producer), tuple(m.index for m in consumer))
            verdict = verdicts.get(key)
            if verdict is None:
                verdict = verdicts[key] = self.judge(producer, consumer, touches, kernel)
            return verdict

        refused: dict[ir.Operation, dict[ir.Operation, str]] = {}
        while True:
            best: _Candidate | None = None
            for p_op, c_op in edges:
                gp, gc = group_of[p_op], group_of[c_op]
                if gp == gc:
                    continue
                why, benefit = judge(groups[gp], groups[gc])
                if why is not None:  # the latest reason per producer
                    refused.setdefault(c_op, {})[p_op] = (
                        f"not fused with its producer '{p_op.name}': {why}")
                    refused.setdefault(p_op, {})[c_op] = (
                        f"not fused with its consumer '{c_op.name}': {why}")
                    continue
                if best is None or benefit > best.benefit:
                    best = _Candidate(benefit, gp, gc)
            if best is None:
                break
            merged = sorted(groups[best.producer] + groups.pop(best.consumer),
                            key=lambda m: m.index)
            groups[best.producer] = merged
            for m in merged:
                group_of[m.op] = best.producer
        for members in groups.values():
            if len(members) > 1:
                self.form(members, users, budget, cost, kernel(members)[1])
        if self.remarks:
            for op in ops:
                alone = op in row_ops and len(groups[group_of[op]]) == 1
                if op in epilogue_remarks:
                    self.remark(op, epilogue_remarks[op])
                elif alone or (op not in row_ops and op in reasons):
                    why = (reasons.get(op, []) + list(refused.get(op, {}).values())
                           or ["no row op produces or consumes its tensors"])
                    self.remark(op, f"'{op.name}' left unfused: {'; '.join(dict.fromkeys(why))}")

    def kernel(self, members: list[fusion.RowOp], users: dict, budget: int, granule: int):
        """(GM bytes, two-pass plan or None) of the members' kernel, or
        (None, why) when no kernel of them fits UB."""
        g = fusion.model(members, users)
        if len(members) == 1 or online_rows.whole_rows_fit(g, self.target, budget):
            return fusion.gm_bytes(g, granule), None
        plan = online_rows.plan(g, self.target, budget)
        if isinstance(plan, str):
            fp = fusion.footprint(g, self.target)
            return None, (f"the fused kernel would not fit on chip: one chunk of "
                          f"{fp.row_block} row(s) needs {fp.fixed + fp.per_row * fp.row_block}"
                          f" bytes of UB, the budget is {budget}, and a two-pass kernel "
                          f"over column pieces cannot be formed: {plan}")
        return online_rows.gm_bytes(g, plan, self.target), plan

    def judge(self, producer: list[fusion.RowOp], consumer: list[fusion.RowOp], touches: dict,
              kernel) -> tuple[str | None, int]:
        """(why the two groups cannot merge or None, the GM bytes merging saves)."""
        merged = producer + consumer
        why = self.illegal(merged, touches)
        if why is not None:
            return why, 0
        merged_bytes, plan = kernel(merged)
        if merged_bytes is None:
            return plan, 0
        benefit = kernel(producer)[0] + kernel(consumer)[0] - merged_bytes
        if benefit <= 0:
            return "fusing saves no GM traffic", benefit
        return None, benefit

    # ------------------------------------------------------------------ epilogues

    def group_epilogues(self, func: ir.Operation, budget: int) -> dict:
        """Join each matmul with the elementwise consumers of its result (in
        program order, each while it saves GM bytes, the tile's epilogue
        fits UB and moving it is legal) into an `npu.epilogue` region.
        Returns the remark of each matmul left without an epilogue."""
        from npu.passes.lower_matmul import LowerMatmul
        from npu.matmul_tiling import TilingError, choose_tiling

        ops, index, users, touches = _scan(func)
        granule = self.target.granule("ub")
        taken: set = set()
        remarks: dict = {}
        for mm in [op for op in ops if op.name in epilogue.MATMULS]:
            c = epilogue.result_of(mm)
            if isinstance(c, str):
                remarks[mm] = f"'{mm.name}' without epilogue: {c}"
                continue
            consumers = [op for op in ops[index[mm] + 1:] if op not in taken and any(
                nir.view_root(v) == c.root for v in op.operands[:-1] if nir.is_memref(v.type))]
            if not consumers:
                remarks[mm] = f"'{mm.name}' without epilogue: no op consumes its result"
                continue
            if any(fusion.elements(v) == 0 for v in mm.operands):
                remarks[mm] = f"'{mm.name}' without epilogue: an operand has no elements"
                continue
            try:
                shape = LowerMatmul(self.target).shape_of(mm)[0]
                choice = choose_tiling(shape, self.target)
                row_blocks = choice.tiles.m // self.target.fractal
            except (PassError, TilingError) as e:
                remarks[mm] = f"'{mm.name}' without epilogue: {e}"
                continue
            members: list[fusion.RowOp] = []
            produced = {c.root}
            why_not: dict = {}
            for op in ops[index[mm] + 1:]:
                if op in taken or not any(nir.view_root(v) in produced for v in op.operands[:-1]
                                          if nir.is_memref(v.type)):
                    continue
                d = epilogue.describe_member(op, index[op], c, self.target)
                if isinstance(d, str):
                    why_not[op] = d
                    continue
                trial = members + [d]
                why = epilogue.illegal(mm, trial, index, touches)
                if why is None:
                    before = epilogue.model(mm, c, members, epilogue.used_outside(
                        {mm} | {m.op for m in members}, users))
                    after = epilogue.model(mm, c, trial, epilogue.used_outside(
                        {mm} | {m.op for m in trial}, users))
                    alone = fusion.gm_bytes(fusion.model([d], users), granule)
                    plan = epilogue.lowered_plan(after, self.target)
                    if epilogue.gm_bytes(after) >= epilogue.gm_bytes(before) + alone:
                        why = "joining saves no GM traffic"
                    elif row_blocks * plan.per_fractal + epilogue.broadcast_bytes(after) > budget:
                        rows = epilogue.broadcast_bytes(after)
                        why = (f"the epilogue would not fit UB: one column block of the C tile "
                               f"({row_blocks} fractals) needs {row_blocks * plan.per_fractal} "
                               f"bytes{f' and its broadcast rows {rows}' if rows else ''}, "
                               f"the budget is {budget}")
                if why is not None:
                    why_not[op] = why
                    continue
                members = trial
                produced.add(d.out.root)
            # The matmul's own time: its cube work or its A and B traffic.
            own = max(self.target.cube_cycles(shape.M * shape.N * shape.K * shape.batch
                                              // self.target.fractal ** 3),
                      choice.traffic.read_bytes(shape)
                      / self.target.path("gm_to_l1").bytes_per_cycle)
            # All or nothing: a cut GELU would store two tensors where C was one,
            # and a lone bias add is free in the row group that takes the rest.
            # Vector work beyond the matmul's own time is still better in its
            # drain (the kernel after it would wait for C anyway) unless each
            # drained piece loads operands from GM: those loads queue in MTE2
            # behind the previous piece's vector work and hold back the next
            # tile's A and B (measured: 128x768x768 + bias + GELU 95.2k fused vs
            # 91.0k apart); broadcast bias rows are loaded once instead.
            leaves = epilogue.used_outside({mm} | {m.op for m in members}, users)
            e = epilogue.model(mm, c, members, leaves)
            work = epilogue.vector_cycles(epilogue.collapse_gelu(c, members, leaves),
                                          self.target)
            if work > own and any(r not in e.broadcast for r in e.loaded):
                why_not = {m.op: (f"the epilogue's vector work ({work} cycles) would exceed the "
                                  f"matmul's own ({int(own)}) while each drained piece loads "
                                  "operands from GM: those loads would hold back the matmul's, "
                                  "a separate kernel overlaps better") for m in members}
                members = []
            stores, hoist = self.absorb_row_major_stores(
                mm, c, members, ops, index, users, touches, taken, why_not) \
                if self.row_major_stores else ([], False)
            if not members and not stores:
                listed = "; ".join(f"'{op.name}': {w}" for op, w in why_not.items())
                remarks[mm] = (f"'{mm.name}' without epilogue: "
                               + (f"consumers left out: {listed}" if listed else
                                  "no elementwise op consumes its result"))
                continue
            taken.update([m.op for m in members] + [s.op for s in stores])
            at = None
            if hoist:  # the group stays where its last op before the stores is
                at = members[-1].op if members else mm
                for s in stores:
                    for v in s.op.operands:
                        nir.hoist_definition(v, at)
            leaves = epilogue.used_outside({mm} | {m.op for m in members} | {s.op for s in stores},
                                           users)
            self.form_epilogue(epilogue.model(mm, c, members, leaves, stores), users, granule,
                               row_blocks, budget, why_not, at)
        return remarks

    def absorb_row_major_stores(self, mm: ir.Operation, c: fusion.Operand,
                         members: list[fusion.RowOp], ops: list, index: dict, users: dict,
                         touches: dict, taken: set,
                         why_not: dict) -> tuple[list[epilogue.NdStore], bool]:
        """The defractalizes of C or of a member's result that the epilogue
        writes row-major as the tiles drain (`npu.epilogue.NdStore`): for each
        such tensor, all of them or none, when that is legal and saves GM
        bytes (the Nz round trip). `why_not` gets the reasons for the rest.
        Also whether the stores move up to the group (True) or the group
        down to the last store: siblings' consumers may come between them."""
        tensors = {c.root: c} | {m.out.root: m.out for m in members}
        found: dict = {}
        for op in ops[index[mm] + 1:]:
            if op in taken or op.name != "ascend.defractalize" \
                    or nir.view_root(op.operands[0]) not in tensors:
                continue
            why_not.pop(op, None)
            d = epilogue.describe_store(op, index[op], tensors, self.target)
            if isinstance(d, str):
                why_not[op] = d
            else:
                found.setdefault(d.src.root, []).append(d)
        group = {mm} | {m.op for m in members}
        before = epilogue.model(mm, c, members, epilogue.used_outside(group, users))
        stores: list[epilogue.NdStore] = []
        hoist = False
        anchor = members[-1].op if members else mm
        for root, runs in found.items():
            trial = stores + runs
            why = epilogue.stores_refusal(runs, tensors[root].value)
            trial_hoist = why is None and self.hoistable(trial, anchor, index, touches)
            if why is None and not trial_hoist:
                why = epilogue.illegal(
                    mm, sorted(members + [s.as_member() for s in trial], key=lambda m: m.index),
                    index, touches)
            if why is None:
                after = epilogue.model(mm, c, members, epilogue.used_outside(
                    group | {s.op for s in trial}, users), trial)
                alone = sum(fusion.nbytes(s.src.value) + fusion.nbytes(s.dst.value) for s in runs)
                if epilogue.gm_bytes(after) >= epilogue.gm_bytes(before) + alone:
                    why = "storing row-major as C drains saves no GM traffic"
            if why is not None:
                why_not.update({s.op: why for s in runs})
                continue
            stores, hoist = trial, trial_hoist
            before = after
        return stores, hoist

    @staticmethod
    def hoistable(stores: list[epilogue.NdStore], anchor: ir.Operation, index: dict,
                  touches: dict) -> bool:
        """Whether each store may move up to just after `anchor`: no op in
        between writes its Nz input or touches its row-major result, and its
        operands' definitions (allocs, views) can move above the anchor."""
        mine = {s.index for s in stores}
        for s in stores:
            for k in range(index[anchor] + 1, s.index):
                if k in mine or k not in touches:
                    continue
                r, w = touches[k]
                if s.src.root in w or s.dst.root in r | w:
                    return False
            for v in s.op.operands:
                op = nir.defining_op(v)
                while op is not None and op.name in nir.VIEW_OPS:
                    op = nir.defining_op(op.operands[0])
                if op is not None and op.name != "memref.alloc":
                    return False
        return True

    def form_epilogue(self, e: epilogue.Epilogue, users: dict, granule: int, row_blocks: int,
                      budget: int, why_not: dict, at: ir.Operation | None = None) -> None:
        """The group as a region where its last op is (or at `at`)."""
        plan = epilogue.lowered_plan(e, self.target)
        fused = epilogue.gm_bytes(e)
        unfused = epilogue.unfused_gm_bytes(e, users, granule)
        outs = [e.c.root] + [m.out.root for m in e.members]
        internal = [r for r in outs if r not in e.leaving]
        ordered = [op for _, op in sorted([(m.index, m.op) for m in e.members]
                                          + [(s.index, s.op) for s in e.stores],
                                          key=lambda item: item[0])]
        last = at or ordered[-1]
        attrs = {"gm_bytes": fused, "unfused_gm_bytes": unfused,
                 "ub_bytes_per_fractal": plan.per_fractal, "ub_budget": budget}
        location = ir.Location.fused([e.matmul.location] + [op.location for op in ordered],
                                     context=last.context)
        region_op = nir.form_group_region(epilogue.EPILOGUE_ATTR, attrs, location, last, internal,
                                          [e.matmul] + ordered)
        if self.remarks:
            left = "".join(f"; '{op.name}' left out: {w}" for op, w in why_not.items())
            nd = (f"; {len(e.stores)} defractalize(s) absorbed: stored row-major as it drains, "
                  f"{epilogue.store_bursts(e)} bursts of {self.target.fractal} elements"
                  if e.stores else "")
            self.remark(region_op, f"matmul epilogue: {len(e.members)} op(s) ({e.short}) "
                                   f"applied to each C tile as it drains: GM traffic "
                                   f"{unfused} -> {fused} bytes beyond A and B, {len(internal)} "
                                   f"tensor(s) stay on chip; UB {plan.per_fractal} bytes per C "
                                   f"fractal, {row_blocks * plan.per_fractal} per column block"
                                   f"{nd}{left}")

    def illegal(self, members: list[fusion.RowOp], touches: dict) -> str | None:
        """Why `members` cannot be one kernel (None: they can)."""
        rows = {m.rows for m in members}
        ns = {m.n for m in members if m.n is not None}
        if len(rows) > 1 or len(ns) > 1:
            shapes = dict.fromkeys(f"{m.rows} rows of {m.n or 1}" for m in members)
            return f"the rows differ ({' vs '.join(shapes)})"
        members = sorted(members, key=lambda m: m.index)
        written, kinds = set(), {}
        for m in members:
            for o in m.ins + [m.out]:
                if o.kind in ("row", "col") and kinds.setdefault(o.root, o.kind) != o.kind:
                    return "one tensor would be both a row and a column operand"
            if m.out.root in written:
                return "two members write the same tensor"
            written.add(m.out.root)
        for k, m in enumerate(members):
            if any(i.root in written and all(w.out.root != i.root for w in members[:k])
                   for i in m.ins):
                return "a member reads a tensor before another member writes it"
        place = members[-1].index
        member_index = {m.index for m in members}
        for m in members[:-1]:
            reads = {i.root for i in m.ins}
            for k in range(m.index + 1, place):
                if k in member_index or k not in touches:
                    continue
                r, w = touches[k]
                if m.out.root in r | w or reads & w:
                    return ("an op between the members uses a member's result or writes "
                            "its input")
        return None

    def form(self, members: list[fusion.RowOp], users: dict, budget: int, cost,
             plan: online_rows.OnlinePlan | None) -> None:
        g = fusion.model(members, users)
        fp = fusion.footprint(g, self.target)
        unfused = sum(cost([m]) for m in members)
        fused = cost(members)
        internal = [m.out.root for m in members if m.out.root not in g.leaving]
        last = members[-1].op
        attrs = {"rows": g.rows, "row_length": g.n or 1, "gm_bytes": fused,
                 "unfused_gm_bytes": unfused, "ub_bytes_per_row": fp.per_row}
        with last.context:
            location = _group_location(members)
        region_op = nir.form_group_region(fusion.FUSED_ATTR, attrs, location, last, internal,
                                          [m.op for m in members])
        chain = ", ".join(m.short for m in members)
        if plan is None:
            rows_per_chunk = min(g.rows, fp.rows_fitting(budget))
            how = f"UB {fp.per_row} bytes per row, up to {rows_per_chunk} rows per chunk"
        else:
            how = f"rows longer than UB: {plan.describe()}"
        self.remark(region_op, f"fused {len(members)} ops ({chain}) over {g.rows} rows of "
                               f"{g.n or 1}: GM traffic {unfused} -> {fused} bytes, "
                               f"{len(internal)} tensor(s) stay on chip; {how}")


def _group_location(members: list[fusion.RowOp]) -> ir.Location:
    """The members' locations fused, the most frequent first: a kernel made
    mostly of one source op's steps (a softmax, a layernorm) is reported as
    that op (tools show a fused location by its first part)."""
    by_text: dict[str, tuple[int, ir.Location]] = {}
    for m in members:
        loc = m.op.location
        count, _ = by_text.get(str(loc), (0, loc))
        by_text[str(loc)] = (count + 1, loc)
    ordered = [loc for _, loc in sorted(by_text.values(), key=lambda c: -c[0])]
    return ordered[0] if len(ordered) == 1 else ir.Location.fused(ordered)


def _scan(func: ir.Operation):
    """The function's top-level ops, their positions, the users of each
    root tensor (at any depth: the members of a group are its users) and
    what each op reads and writes (a group: what its members do)."""
    ops = [o.operation for o in func.regions[0].blocks[0].operations]
    index = {op: k for k, op in enumerate(ops)}
    users: dict = {}
    touches: dict[int, tuple[set, set]] = {}
    for op in ops:
        if op.name in nir.VIEW_OPS or op.name in ("memref.alloc", "memref.dealloc"):
            continue
        inner = [op]
        if op.regions:
            inner = nir.walk(op, lambda o: bool(o.operands) and o.name not in nir.VIEW_OPS
                             and o.name not in ("memref.alloc", "memref.dealloc"))
        reads, writes = set(), set()
        for o in inner:
            roots = [nir.view_root(v) for v in o.operands if nir.is_memref(v.type)]
            for r in roots:
                users.setdefault(r, set()).add(o)
            if o.name.startswith("ascend.") and roots:
                reads |= set(roots[:-1])
                writes.add(roots[-1])
            elif roots:
                reads |= set(roots)
                writes |= set(roots)
        if reads or writes:
            touches[index[op]] = (reads, writes)
    return ops, index, users, touches
