"""Matmul epilogue groups of `npu-fuse`: each matmul with the elementwise
consumers of its result and the defractalizes it can store row-major."""

from __future__ import annotations

from mlir import ir

from npu.costmodel.fusion import epilogue

from npu.costmodel.fusion import rows as fusion
from npu.costmodel.fusion import precision
from npu.costmodel.matmul.pipelined import Drain, store_cycles
from npu.costmodel.matmul.tiling import kernel_cycles
from npu import ir as nir
from npu.passes.base import PassError

from .scan import scan_top_level


class EpilogueGrouping:
    """Mixed into `FusePass` (uses its target, options and `remark`)."""

    def group_epilogues(self, func: ir.Operation, budget: int) -> dict:
        """Join each matmul with the elementwise consumers of its result (in
        program order, each while it saves GM bytes, the tile's epilogue
        fits UB and moving it is legal) into an `npu.epilogue` region.
        Returns the remark of each matmul left without an epilogue."""
        from npu.passes.lower_matmul import LowerMatmul
        from npu.costmodel.matmul.tiling import TilingError, choose_tiling

        ops, index, users, touches = scan_top_level(func)
        granule = self.target.granule("ub")
        remarks: dict = {}
        # The roots each top-level op reads, found once: every matmul scans the
        # ops after it, and following their views again for each took 0.3 CPU s
        # of BERT-12's on 32 cores. (Grouping moves ops and their views'
        # definitions; it changes no operand.)
        # By position in `ops`, as whether each op is taken: every matmul
        # scans the ops after it twice, and hashing each op for both was
        # 0.1 CPU s of BERT-12's on 32 cores.
        reads: list[frozenset | None] = [None] * len(ops)
        taken_at = [False] * len(ops)  # whether an earlier group took the op

        def read_roots(k: int) -> frozenset:
            found = reads[k]
            if found is None:
                found = reads[k] = frozenset(nir.view_root(v) for v in ops[k].operands[:-1]
                                             if nir.is_memref(v.type))
            return found

        # The remark's kernel estimates, once per shape and drain (BERT-12's
        # 72 matmuls have 4 shapes; estimating each again took 0.3 CPU s).
        estimates: dict[tuple, int] = {}

        def estimate(shape, drain: Drain = Drain()) -> int:
            if (shape, drain) not in estimates:
                estimates[shape, drain] = int(kernel_cycles(shape, self.target, drain))
            return estimates[shape, drain]

        for mm in [op for op in ops if op.name in epilogue.MATMULS]:
            c = epilogue.result_of(mm)
            if isinstance(c, str):
                remarks[mm] = f"'{mm.name}' without epilogue: {c}"
                continue
            later = range(index[mm] + 1, len(ops))
            consumers = [ops[k] for k in later if not taken_at[k] and c.root in read_roots(k)]
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
            for k in later:
                if taken_at[k] or produced.isdisjoint(read_roots(k)):
                    continue
                op = ops[k]
                d = epilogue.describe_member(op, k, c, self.target)
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
            # The matmul's own time: its cube work or its A and B traffic. (The
            # guard's figure; the kernel's estimate in the remark is
            # `kernel_cycles`, which also counts the fill and latencies: on a
            # short reduction those would hide an epilogue that holds the
            # cube back.)
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
            # The work as it will run: in f16 where the policy allows it.
            in_f16 = self.epilogue_f16 and precision.f16_refusal(e) is None
            c_run, run = precision.in_f16(c, members, self.target, self.epilogue_bias_f32) \
                if in_f16 else (c, members)
            work = epilogue.vector_cycles(epilogue.collapse_gelu(c_run, run, leaves,
                                                                 in_f16=in_f16), self.target)
            if work > own and any(r not in e.broadcast for r in e.loaded):
                why_not = {m.op: (f"the epilogue's vector work ({work} cycles) would exceed the "
                                  f"matmul's own ({int(own)}) while each drained piece loads "
                                  "operands from GM: those loads would hold back the matmul's, "
                                  "a separate kernel overlaps better") for m in members}
                members = []
            stores, hoist = self.absorb_row_major_stores(
                mm, c, members, ops, index, users, touches, taken_at, why_not) \
                if self.row_major_stores else ([], False)
            if not members and not stores:
                listed = "; ".join(f"'{op.name}': {w}" for op, w in why_not.items())
                remarks[mm] = (f"'{mm.name}' without epilogue: "
                               + (f"consumers left out: {listed}" if listed else
                                  "no elementwise op consumes its result"))
                continue
            for op in [m.op for m in members] + [s.op for s in stores]:
                taken_at[index[op]] = True
            at = None
            if hoist:  # the group stays where its last op before the stores is
                at = members[-1].op if members else mm
                for s in stores:
                    for v in s.op.operands:
                        nir.hoist_definition(v, at)
            leaves = epilogue.used_outside({mm} | {m.op for m in members} | {s.op for s in stores},
                                           users)
            final = epilogue.model(mm, c, members, leaves, stores)
            # An epilogue in f16 drains into two UB landing slots by turns
            # (npu-lower-matmul's `landing_slots`).
            f16 = self.epilogue_f16 and precision.f16_refusal(final) is None
            drain = Drain(work, self.drain_store_cycles(final, shape), True, 2 if f16 else 1)
            self.form_epilogue(final, users, granule, row_blocks, budget, why_not, at,
                               (estimate(shape), work, estimate(shape, drain)))
        return remarks

    def drain_store_cycles(self, e: epilogue.Epilogue, shape) -> float:
        """GM write time of the drains: every tensor leaving the group, in Nz
        or row-major (a burst per row of 16), as npu-lower-matmul counts it."""
        row_major = {s.src.root for s in e.stores}
        outs = [e.c] + [m.out for m in e.members]
        elements = shape.M * shape.K * shape.batch
        return sum(store_cycles(self.target, elements, o.es,
                                self.target.fractal if o.root in row_major else 0)
                   for o in outs if o.root in e.leaving or o.root in row_major)

    def absorb_row_major_stores(self, mm: ir.Operation, c: fusion.Operand,
                         members: list[fusion.RowOp], ops: list, index: dict, users: dict,
                         touches: dict, taken_at: list[bool],
                         why_not: dict) -> tuple[list[epilogue.NdStore], bool]:
        """The defractalizes of C or of a member's result that the epilogue
        writes row-major as the tiles drain (`npu.costmodel.fusion.epilogue.NdStore`): for each
        such tensor, all of them or none, when that is legal and saves GM
        bytes (the Nz round trip). `why_not` gets the reasons for the rest.
        Also whether the stores move up to the group (True) or the group
        down to the last store: siblings' consumers may come between them."""
        tensors = {c.root: c} | {m.out.root: m.out for m in members}
        found: dict = {}
        for op in ops[index[mm] + 1:]:
            if taken_at[index[op]] or op.name != "ascend.defractalize" \
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
                      budget: int, why_not: dict, at: ir.Operation | None = None,
                      estimate: tuple[int, int, int] = (0, 0, 0)) -> None:
        """The group as a region where its last op is (or at `at`);
        `estimate`: the matmul's own cycles, the epilogue's vector cycles
        and the fused kernel's (`kernel_cycles` with that drain), for the
        remark."""
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
        why_f32 = precision.f16_refusal(e) if self.epilogue_f16 else "epilogue-f16=false"
        head = None
        if why_f32 is None:
            attrs["compute"] = precision.COMPUTE_F16
            head = precision.f32_head(e.c, e.members) if self.epilogue_bias_f32 else None
            if head is not None:
                attrs[precision.HEAD_ATTR] = "f32"
        location = ir.Location.fused([e.matmul.location] + [op.location for op in ordered],
                                     context=last.context)
        region_op = nir.form_group_region(epilogue.EPILOGUE_ATTR, attrs, location, last, internal,
                                          [e.matmul] + ordered)
        if self.remarks:
            left = "".join(f"; '{op.name}' left out: {w}" for op, w in why_not.items())
            nd = (f"; {len(e.stores)} defractalize(s) absorbed: stored row-major as it drains, "
                  f"{epilogue.store_bursts(e)} bursts of {self.target.fractal} elements"
                  if e.stores else "")
            casts = any(m.op.name == "ascend.cast" and m.out.elem == "f16" for m in e.members)
            after = (f" after the '{head.op.name}' on C, which runs in f32 on the drained "
                     "accumulator and is rounded once" if head is not None else "")
            computed = (f"; computed in f16{after}: its results leave as f16 casts"
                        if why_f32 is None else f"; computed in f32 ({why_f32})" if casts else "")
            self.remark(region_op, f"matmul epilogue: {len(e.members)} op(s) ({e.short}) "
                                   f"applied to each C tile as it drains{computed}: GM traffic "
                                   f"{unfused} -> {fused} bytes beyond A and B, {len(internal)} "
                                   f"tensor(s) stay on chip; UB {plan.per_fractal} bytes per C "
                                   f"fractal, {row_blocks * plan.per_fractal} per column block"
                                   f"{nd}; model {estimate[2]} cycles (the matmul alone "
                                   f"{estimate[0]}, epilogue vector work {estimate[1]}){left}")
