"""npu-fuse: group ascend row ops (elementwise, broadcasts of rows/columns,
last-axis reductions) that run over the same rows into one kernel each, so
intermediate tensors stay in UB instead of making a GM round trip.

Decisions come from a cost model (`npu.costmodel.fusion.rows`), not from patterns:
  * every row op starts as its own group; a producer group and a consumer
    group joined by a tensor are candidates for merging;
  * the benefit of a merge is the GM bytes it saves: the modelled traffic of
    the two kernels (each tensor loaded once, each tensor leaving a kernel
    stored once) minus that of the merged kernel; the largest positive
    benefit is merged first, until none is left;
  * a merge is refused when the rows differ, when one chunk of the merged
    kernel (its buffers as `npu.kernels.fused_chunk` lays them out, results in
    place) does not fit `ub-fraction` of UB and no two-pass kernel can be
    formed, or when an op between
    the members conflicts with moving them together (it reads a member's
    result or writes a member's input).
Each group of two or more ops becomes an `scf.execute_region` marked
`npu.fused` (dialects/README.md, "Fused groups") at the position of its last
member; the allocs of tensors that never leave the group move into it. A
remark reports each group (ops, rows, GM bytes before -> after, UB per
chunk) and, for every row op left alone, why.

A fractalize of a group's result (a matmul's A operand) joins the group
as an Nz store (`layouts`), unless `nz-stores=false`; a lone op with one
forms a group of its own.

Before the row groups, matmul epilogues (`npu.epilogue`): each matmul takes
the elementwise consumers of its result, in program order, while joining
saves GM bytes, one column block of its C tile's drain fits the UB share
and moving the op is legal (`npu.costmodel.fusion.epilogue`'s model); the group is an
`scf.execute_region` marked `npu.epilogue` that `npu-lower-matmul` lowers.
Likewise each conv (NC1HWC0) takes the chain of elementwise ops over its
result (`npu.conv_epilogue`, `conv_epilogues.py`) that `npu-lower-conv` runs
on each drained tile.

Last, matmul chains (`chains`): a matmul's f16 result read only as the next
matmul's A operand is marked to stay in L1 when it fits (`chains`); and conv
chains (`conv-chains`, `conv_chains.py`): a conv's result kept on chip band by
band as the next 1x1 conv's input map.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from npu.kernels import fused_chunk, resident_fit

from npu.costmodel.fusion import rows as fusion
from npu.costmodel.fusion.epilogue import EPILOGUE_ATTR
from npu.costmodel.fusion.precision import COMPUTE_F16
from npu.costmodel.fusion.rows import FUSED_UB_FRACTION
from npu import ir as nir
from npu.kernels import online_rows
from npu.passes.applies import CONVS, CUBE_OPS, FRACTALIZES, OnOps, row_ops
from npu.passes.base import Option, Pass, ub_fraction_option
from npu.passes.patterns import CONV_CHAINS, CONV_POOLS, MATMUL_CHAINS

from .chains import MatmulChains
from .conv_chains import ConvChains
from .conv_epilogues import ConvEpilogueGrouping
from .epilogues import EpilogueGrouping
from .layouts import NzLayouts
from .scan import scan_top_level


@dataclass
class _Candidate:
    benefit: int
    producer: int
    consumer: int


ROWS = row_ops()
# the UB share: of the row groups' chunks and the matmul and conv epilogues' tiles
GROUPED = OnOps("row op, matmul or conv", ROWS.ops + CUBE_OPS.ops)


class FusePass(ConvEpilogueGrouping, EpilogueGrouping, NzLayouts, MatmulChains, ConvChains, Pass):
    name = "npu-fuse"
    summary = "Group row ops (elementwise, broadcasts, last-axis reductions) into fused kernels"
    options = (
        ub_fraction_option(FUSED_UB_FRACTION,
                           "UB share of one chunk's buffers by the footprint model (the rest: "
                           "double buffering and the memory planner's longer lifetimes)",
                           needs=(GROUPED,)),
        Option("resident", bool, True, "rows too long for a chunk of whole rows that fit UB (or long rows "
               "that are not whole 32-byte blocks) stay resident, one row a chunk in two slots, "
               "two sharing a piece of the row, or one (npu.kernels.resident_rows); false: "
               "the two-pass kernel takes rows that do not fit a chunk of whole rows",
               needs=(ROWS,)),
        Option("epilogues", bool, True, "join matmuls and convs with the elementwise consumers of "
               "their result (matmul and conv epilogues) before forming row groups",
               needs=(CUBE_OPS,)),
        Option("epilogue-f16", bool, True, "with epilogues: an epilogue whose only results "
               "leaving the group are f32 -> f16 casts is computed in f16 (npu.epilogue "
               "compute = \"f16\"; README \"Precision\"); false keeps f32 up to the cast",
               needs=(("epilogues", True), CUBE_OPS)),
        Option("epilogue-bias-f32", bool, False, "with epilogue-f16: the first member, "
               "when it adds an f32 operand (a bias) to C, runs in f32 on the drained "
               "accumulator and only its sum is rounded to f16 (npu.epilogue head = \"f32\"; "
               "one rounding fewer, more vector work: off by default, README \"Precision\")",
               needs=(("epilogues", True), ("epilogue-f16", True), CUBE_OPS)),
        Option("row-major-stores", bool, True, "with epilogues: a defractalize of C (or of "
               "an epilogue's result) joins as its row-major store",
               needs=(("epilogues", True), CUBE_OPS)),
        Option("nz-stores", bool, True, "an ascend.fractalize of a row group's result "
               "joins the group, which writes that result in Nz (a matmul's A operand) as "
               "it leaves UB; false keeps the separate fractalize", needs=(FRACTALIZES,)),
        Option("chains", bool, True, "a matmul's f16 result read only as the next matmul's "
               "A operand stays in L1 when it fits beside the producer's working set "
               "(npu.chain; the producer stores it UB -> L1, the consumer reads it there)",
               needs=(MATMUL_CHAINS,)),
        Option("conv-chains", bool, False, "a conv's result read as the input map of a later "
               "1x1 stride-1 conv stays on chip, band by band, when the consumer tiles with the "
               "producer's bands and both fit on chip (npu.conv_chain; stored to GM only for "
               "other readers); npu-lower sets it on one core only. Off by default: the decision "
               "plans each candidate pair's kernels (ResNet-50's compile 1.8x) and pays on small "
               "maps only", needs=(CONV_CHAINS,)),
        Option("conv-pool", bool, True, "with epilogue-f16 and without epilogue-bias-f32: a "
               "stem's max pool (3x3/2) joins its conv's group, pooled on the drain "
               "(npu.costmodel.conv.stem_pool); npu-lower sets it on one core only",
               needs=(("epilogues", True), ("epilogue-f16", True), ("epilogue-bias-f32", False),
                      CONVS, CONV_POOLS)),
        Option("conv-f16-copies", bool, True, "with epilogues: a conv group's f32 result that "
               "convs read through an f16 copy (the cast) and other ops read in f32 (an f32 "
               "model's residual sum) is stored with its copy by the conv's drain, the cast "
               "the group's last member (npu.conv_epilogue f16_copy); false leaves the cast "
               "its own op",
               needs=(("epilogues", True), CONVS)),
        Option("channels", int, 0, "an operand of one row per channel block of an NC1HWC0 "
               "map of at most this many blocks (a per-channel scale or shift) counts as a row "
               "operand, as on each core of a split with one block a core (a group left with "
               "more a core is lowered as its ops alone); npu-lower sets it to the cores it "
               "splits over (0: never)", low=0, needs=(ROWS,)),
        Option("remarks", bool, True, "report each group formed and why row ops were left out"),
    )

    def run(self, module: ir.Operation) -> None:
        for func in nir.functions(module):
            if len(func.regions[0].blocks):  # declarations have no body
                self.fuse_function(func)
        if nir.walk_held(module, _computes_in_f16):  # the check's tolerance follows (run_check)
            module.attributes[nir.F16_EPILOGUES_ATTR] = ir.UnitAttr.get(module.context)

    def fuse_function(self, func: ir.Operation) -> None:
        budget = int(self.target.capacity("ub") * self.ub_fraction)
        # Matmul epilogues first: a consumer of C joined to its matmul saves
        # C's round trip, more than a row group of the same ops would.
        if self.epilogues:
            self.group_conv_epilogues(func)
        epilogue_remarks = self.group_epilogues(func, budget) if self.epilogues else {}
        ops, index, users, touches = scan_top_level(func)
        row_ops: dict[ir.Operation, fusion.RowOp] = {}
        reasons: dict[ir.Operation, list[str]] = {}
        for op in ops:
            if op.name.startswith("ascend."):
                d = fusion.describe(op, index[op], self.target, tails=True,
                                    channels=self.channels)
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
        # Each round reads every edge: by row-op numbers, with each group's
        # verdict key kept as it changes (hashing the ops and building the
        # keys anew, 60k times on BERT-12 at 32 cores, was most of the loop).
        row_of = dict(group_of)  # op -> its number among the row ops
        edge_rows = [(row_of[p_op], row_of[c_op]) for p_op, c_op in edges]
        group_at = list(range(len(row_ops)))  # row op number -> its group (as group_of)
        keys = {k: tuple(m.index for m in members) for k, members in groups.items()}
        refused: dict[ir.Operation, dict[ir.Operation, str]] = {}
        while True:
            best: _Candidate | None = None
            for e, (p, c) in enumerate(edge_rows):
                gp, gc = group_at[p], group_at[c]
                if gp == gc:
                    continue
                key = (keys[gp], keys[gc])
                verdict = verdicts.get(key)
                if verdict is None:
                    verdict = verdicts[key] = self.judge(groups[gp], groups[gc], touches, kernel)
                why, benefit = verdict
                if why is not None:  # the latest reason per producer
                    p_op, c_op = edges[e]
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
            keys[best.producer] = tuple(m.index for m in merged)
            del keys[best.consumer]
            for m in merged:
                group_of[m.op] = best.producer
                group_at[row_of[m.op]] = best.producer
        layout_why: dict[ir.Operation, str] = {}
        layout_remarks: dict[ir.Operation, str] = {}
        formed: set[int] = set()
        for key, members in groups.items():
            plan = kernel(members)[1]
            layouts = self.nz_layouts(members, users, touches, index, budget,
                                      plan is not None, layout_why)
            for f in layouts:
                layout_remarks[f] = self.nz_remark(f, members, users)
            if len(members) > 1 or layouts:
                formed.add(key)
                self.form(members, users, budget, cost, plan, layouts)
        if self.remarks:
            for op in ops:
                alone = op in row_ops and group_of[op] not in formed
                if op in layout_remarks:
                    self.remark(op, layout_remarks[op])
                elif op in layout_why:
                    self.remark(op, f"'ascend.fractalize' left as its own kernel: {layout_why[op]}")
                elif op in epilogue_remarks:
                    self.remark(op, epilogue_remarks[op])
                elif alone or (op not in row_ops and op in reasons):
                    why = (reasons.get(op, []) + list(refused.get(op, {}).values())
                           or ["no row op produces or consumes its tensors"])
                    self.remark(op, f"'{op.name}' left unfused: {'; '.join(dict.fromkeys(why))}")
        chain_remarks = self.chain_matmuls(func)
        chain_remarks.update(self.chain_convs(func))
        if self.remarks:
            for op, message in chain_remarks.items():
                self.remark(op, message)

    def kernel(self, members: list[fusion.RowOp], users: dict, budget: int, granule: int):
        """(GM bytes, two-pass plan or None) of the members' kernel, or
        (None, why) when no kernel of them fits UB."""
        g = fusion.model(members, users)
        resident = self.resident and resident_fit.resident_fits(g, self.target, budget)
        whole = fused_chunk.whole_rows_fit(g, self.target, budget)
        tail = fusion.tail_block(g, self.target)
        if len(members) > 1 and tail and not resident:
            es = min(o.es for m in members for o in m.ins + [m.out] if o.kind in ("full", "row"))
            return None, (f"rows of {g.n} elements of {es} bytes are not whole 32-byte blocks: "
                          "fused kernels move whole-block rows, or keep one row resident in UB, "
                          "which needs rows "
                          + ("that fit UB" if fused_chunk.long_rows(g, self.target)
                             else "past the vector repeat stride (or a single row)"))
        if len(members) == 1 or whole or resident:
            return fusion.gm_bytes(g, granule), None
        plan = online_rows.plan(g, self.target, budget)
        if isinstance(plan, str):
            cb = fused_chunk.one_set(g, self.target)
            return None, (f"the fused kernel would not fit on chip: one chunk of "
                          f"{cb.row_block} row(s) needs "
                          f"{cb.fixed + fused_chunk.per_row(cb) * cb.row_block}"
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
        views: dict = {}
        for o in (o for m in members for o in m.ins + [m.out]):
            if views.setdefault(o.root, o.value) != o.value and (
                    fusion.byte_view(o.value) or fusion.byte_view(views[o.root])):
                return "two views of one tensor's bytes"
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
             plan: online_rows.OnlinePlan | None, layouts: list[ir.Operation] = ()) -> None:
        g = fusion.model(members, users, layouts=layouts)
        cb = fused_chunk.one_set(g, self.target)
        unfused = sum(cost([m]) for m in members) + sum(
            fusion.nbytes(f.operands[0]) + fusion.nbytes(f.operands[1]) for f in layouts)
        fused = fusion.gm_bytes(g, self.target.granule("ub")) if layouts else cost(members)
        internal = [m.out.root for m in members if m.out.root not in g.leaving]
        last = members[-1].op
        attrs = {"rows": g.rows, "row_length": g.n or 1, "gm_bytes": fused,
                 "unfused_gm_bytes": unfused, "ub_bytes_per_row": fused_chunk.per_row(cb)}
        with last.context:
            location = _group_location(members)
        region_op = nir.form_group_region(fusion.FUSED_ATTR, attrs, location, last, internal,
                                          [m.op for m in members] + list(layouts))
        chain = ", ".join([m.short for m in members] + ["fractalize"] * len(layouts))
        fit = resident_fit.resident_fit(g, self.target, budget) if plan is None else None
        if fit is not None and (fusion.tail_block(g, self.target)
                                or cb.rows(budget, lambda key: 1) < cb.row_block):
            how = (f"rows resident in UB, one a chunk, {fit.describe()} (stored from their "
                   "loaded buffers)")
        elif plan is None:
            rows_per_chunk = min(g.rows, cb.rows(budget, lambda key: 1))
            how = f"UB {fused_chunk.per_row(cb)} bytes per row, up to {rows_per_chunk} rows per chunk"
        else:
            how = f"rows longer than UB: {plan.describe()}"
        self.remark(region_op, f"fused {len(members) + len(layouts)} ops ({chain}) over {g.rows} rows of "
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


def _computes_in_f16(op: ir.Operation) -> bool:
    """A matmul epilogue group that runs in f16 (npu.epilogue compute = "f16")."""
    if EPILOGUE_ATTR not in op.attributes:
        return False
    return dict(nir.dict_attr_items(op.attributes[EPILOGUE_ATTR])).get("compute") == COMPUTE_F16
