"""`npu-lower`: the default pipeline from `ascend` to `hivm` instructions.

Runs, in order and by instantiating the registered pass classes (one place,
no copied code): `npu-split-cores` (with `cores` other than 1), `npu-hoist-casts`
(casts of attention's operands ahead of their layout ops; skip with
`hoist-casts=false`), `npu-fuse-horizontal`
(sibling matmuls sharing A; skip with `fuse-horizontal=false`),
`npu-fuse-attention` (skip with `fuse-attention=false`), `npu-fuse`,
`npu-fuse-attention-projection` (skip with `fuse-attention-projection=false`),
`npu-lower-fused` and `npu-lower-attention` (fused kernels, one core only;
skip with `fuse=false`; `fuse-nz-stores=false` keeps the matmul A operands'
separate casts and fractalizes),
`npu-plan-gm` (GM temporaries into one workspace; skip with `plan-gm=false`),
every lowering (matmul, fractalize, elementwise, transpose,
reduce), then `npu-double-buffer` (optional), `npu-prefetch` (one core;
`prefetch=false` skips it), `npu-plan-memory`,
`npu-insert-sync` and `npu-lower-cce-to-hivm` (`emit=cce` stops before it,
at planned, synchronised cce). Every choice of those passes is an option
here and is forwarded to the pass that owns it. A lowering that is not registered is
skipped, but no `ascend` op may survive: that is an error at the op.

`tuning-record=FILE` (written by `npu-tune`) gives options per op: they are
set as the ops' `npu.options` (in the lowering's option names) before the
lowerings run, and override the options above for those ops only.
"""

from __future__ import annotations

from typing import Any

from mlir import ir

from npu.costmodel.attention.pattern import SOFTMAX_DEFAULT, SOFTMAX_PRECISIONS
from npu.ir import dict_attr_items, dict_attr_of, walk, walk_held
from npu.passes.base import DOUBLE_BUFFER_KEY, OP_OPTIONS_ATTR, Option, Pass, PassError
from npu.passes.lower_fractalize import ALGORITHMS as FRACTALIZE_ALGORITHMS
from npu.passes.lower_matmul import STRATEGY_CHOICES as STRATEGIES
from npu.passes.prefetch import L1_ROOMS

# flag -> {our option name: the lowering's option name}
LOWERINGS: tuple[tuple[str, dict[str, str]], ...] = (
    ("npu-lower-matmul", {"strategy": "strategy", "m": "m", "n": "n", "k": "k",
                          "matmul-schedule": "schedule", "l1-chunk": "l1-chunk",
                          "c-pieces": "c-pieces", "c-piece-rows": "c-piece-rows",
                          "matmul-resident-a": "resident-a",
                          "matmul-timed-residency": "timed-residency",
                          "matmul-drain-convert": "drain-convert"}),
    ("npu-lower-fractalize", {"fractalize": "algorithm", "ub-fraction": "ub-fraction"}),
    ("npu-lower-elementwise", {"ub-fraction": "ub-fraction", "max-chunk": "max-chunk"}),
    ("npu-lower-transpose", {"ub-fraction": "ub-fraction"}),
    ("npu-lower-reduce", {"ub-fraction": "ub-fraction", "max-chunk": "max-chunk"}),
)

# Values meaning "leave the owning pass's default".
_UNSET: dict[str, Any] = {"strategy": "", "m": 0, "n": 0, "k": 0, "matmul-schedule": "",
                          "l1-chunk": 0, "c-pieces": 0, "c-piece-rows": 0,
                          "matmul-resident-a": True, "matmul-timed-residency": True,
                          "matmul-drain-convert": True, "fractalize": "",
                          "ub-fraction": 0.0, "max-chunk": 0}


class LowerPass(Pass):
    name = "npu-lower"
    summary = ("Default pipeline: all ascend lowerings, double buffering, memory planning, sync, "
               "cce -> hivm")
    options = (
        Option("strategy", str, "", "matmul loop order (npu-lower-matmul strategy; empty: its default)",
               choices=("",) + STRATEGIES),
        Option("m", int, 0, "matmul tile rows of A and C (0: cost model)", low=0),
        Option("n", int, 0, "matmul tile of the reduction dimension (0: cost model)", low=0),
        Option("k", int, 0, "matmul tile columns of B and C (0: cost model)", low=0),
        Option("matmul-schedule", str, "auto", "npu-lower-matmul schedule: the OS tile "
               "loops streamed through one flat loop with L0 ping-pong and C drained in pieces "
               "(pipelined), or the plain nest (simple); auto: pipelined with double buffering "
               "(its L1 chunks only pay off when ping-ponged), simple without",
               choices=("auto", "pipelined", "simple")),
        Option("l1-chunk", int, 0, "matmul reduction elements per GM -> L1 copy in the "
               "pipelined schedule (0: npu-lower-matmul's choice)", low=0),
        Option("c-pieces", int, 0, "L0C pieces of a matmul C tile in the pipelined schedule "
               "(0: npu-lower-matmul's choice)", low=0),
        Option("c-piece-rows", int, 0, "rows of the grid of a matmul C tile's L0C pieces in "
               "the pipelined schedule (0: npu-lower-matmul's choice, the largest mads; 1: "
               "whole-height column slabs, as before)", low=0),
        Option("matmul-resident-a", bool, True, "pipelined matmuls keep A's row strip in L1 "
               "across the column tiles when the cost model finds room (npu-lower-matmul "
               "resident-a)"),
        Option("matmul-timed-residency", bool, True, "npu-lower-matmul timed-residency: "
               "resident or streamed A and the resident strip's C tile width by the pipelined "
               "schedule's time estimate (false: the strip where (m + k) x N fits L1, before)"),
        Option("matmul-drain-convert", bool, True, "npu-lower-matmul drain-convert: an "
               "epilogue's f16 C is rounded by the L0C -> UB move itself"),
        Option("fractalize", str, "", "fractalize algorithm (npu-lower-fractalize algorithm; "
               "empty: its default)", choices=("",) + FRACTALIZE_ALGORITHMS),
        Option("ub-fraction", float, 0.0, "UB share of vector chunks (0: each lowering's default)",
               low=0.0, high=1.0),
        Option("max-chunk", int, 0, "cap on the elements of a vector chunk (0: as UB allows); for tests",
               low=0),
        Option("double-buffer", bool, True, "ping-pong loop-streamed buffers (npu-double-buffer)"),
        Option("plan", str, "auto", "memory planner heuristic (npu-plan-memory and "
               "npu-plan-gm algorithm)", choices=("auto", "greedy-by-size", "pushdown")),
        Option("fuse", bool, True, "group row ops into fused kernels first (npu-fuse); false "
               "lowers every ascend op as its own kernel"),
        Option("fuse-epilogues", bool, True, "npu-fuse's matmul epilogues (elementwise "
               "consumers of a matmul applied as its C tiles drain)"),
        Option("fuse-epilogue-f16", bool, True, "npu-fuse's epilogue-f16: a matmul epilogue "
               "whose only results leaving are f32 -> f16 casts is computed in f16"),
        Option("fuse-epilogue-bias-f32", bool, False, "npu-fuse's epilogue-bias-f32: in an "
               "f16 epilogue, a bias add on C runs in f32 and its sum is rounded once"),
        Option("fuse-row-major-stores", bool, True, "npu-fuse's row-major stores: a "
               "defractalize after a matmul joins its epilogue (C written row-major as it "
               "drains)"),
        Option("hoist-casts", bool, True, "with fuse: f32 -> f16 casts of batch_matmul "
               "operands (attention's Q, K, V) move ahead of their transposes and "
               "defractalizes, into the projection's epilogue (npu-hoist-casts)"),
        Option("fuse-nz-stores", bool, True, "npu-fuse's Nz stores: a fractalize of a row "
               "group's result (a matmul's A operand) joins the group, which writes it in Nz "
               "as it leaves UB; with fuse-attention, the attention kernel writes its context "
               "as out-projection's f16 Nz A operand when that is its only use"),
        Option("fuse-chains", bool, True, "npu-fuse's matmul chains: a matmul's f16 result "
               "read only as the next matmul's A stays in L1 when it fits (with the pipelined "
               "matmul schedule)"),
        Option("fuse-slots", int, 2, "npu-lower-fused slots: sets of streamed buffers the "
               "one-pass row kernels' chunks take by turns (1: npu-double-buffer's copies)",
               low=1, high=4),
        Option("fuse-steps", bool, True, "npu-lower-fused steps: row kernels compute in place, "
               "fold squares into sums, cast straight into Nz order, sum long rows in two levels"),
        Option("fuse-layouts", bool, True, "npu-lower-fused layouts: each row kernel's chunk "
               "layout (stores over loaded buffers, one set of stored buffers, rows per chunk) "
               "from its pipeline model"),
        Option("fuse-horizontal", bool, True, "with fuse: join sibling matmuls that share A "
               "(Q/K/V) and their bias adds first (npu-fuse-horizontal)"),
        Option("fuse-attention", bool, True, "with fuse: attention (Q.K^T, scale, softmax, P.V) "
               "as one kernel per head tile, scores on chip (npu-fuse-attention)"),
        Option("fuse-attention-projection", bool, True, "with fuse-attention: an attention "
               "kernel computes its own Q, K, V projection head by head on chip when the cost "
               "model finds it faster (npu-fuse-attention-projection)"),
        Option("attention-softmax", str, SOFTMAX_DEFAULT, "npu-fuse-attention's softmax: the "
               "precision of the attention kernel's row max, shift and exp",
               choices=SOFTMAX_PRECISIONS),
        Option("attention-tile", str, "cost", "npu-fuse-attention's tile: the attention "
               "tile of the fewest modelled cycles, or the fewest tiles", choices=("cost", "fewest")),
        Option("attention-row-max", str, "auto", "npu-lower-attention's row-max: the last "
               "step of the kernel's row max (vcmax per row, or a transpose and a tree of "
               "full-width folds; auto: the cheaper)", choices=("auto", "vcmax", "transpose")),
        Option("attention-head-scope", bool, True, "npu-lower-attention's head-scope: with the "
               "projection and one tile a head, a head's jobs in one scope"),
        Option("fuse-remarks", bool, False, "npu-fuse's remarks: each group formed and why "
               "ops were left out (and npu-lower-fused's: each row kernel's chunk layout)"),
        Option("prefetch", bool, True, "npu-prefetch: a matmul's first host-constant weight "
               "chunks load during the previous op's idle MTE2 tail (one core only)"),
        Option("prefetch-remarks", bool, False, "npu-prefetch's remarks: each prefetch and "
               "each matmul loop left alone, with the cost model's figures"),
        Option("prefetch-l1-room", str, "live", "npu-prefetch's l1-room: a chunk goes beside "
               "the bytes live at each op (live; lowered again with safe if L1 then overflows) "
               "or beside every buffer a live one meets (safe)", choices=L1_ROOMS),
        Option("plan-gm", bool, True, "pack GM memref.alloc temporaries into one workspace "
               "argument first (npu-plan-gm); false leaves them as allocs"),
        Option("sync", str, "precise", "npu-insert-sync mode", choices=("precise", "barrier")),
        Option("sink-sets", bool, True, "npu-insert-sync sink-sets: one set_flag after a run of "
               "same-pipe transfers instead of one per transfer"),
        Option("carried-span", str, "fit", "npu-insert-sync carried-span: loop-carried flags' "
               "pre-set and balancing wait as far out as a free event id allows (fit), or at "
               "the block's start and end (block)", choices=("fit", "block")),
        Option("tuning-record", str, "", "npu-tune record (JSON) whose per-op options apply "
               "to the ops they match"),
        Option("cores", int, 1, "AI cores to split each kernel over first (npu-split-cores; "
               "0: all of the target's, 1: one core, today's program)"),
        Option("emit", str, "hivm", "the level to stop at: planned, synchronised cce, or hivm "
               "instructions (npu-lower-cce-to-hivm)", choices=("cce", "hivm")),
    )

    def _make(self, flag: str, **values: Any) -> Pass | None:
        from npu.passes import registry

        cls = registry().get(flag)
        if cls is None:
            return None
        known = {o.name for o in cls.options}
        return cls(self.target, **{k: v for k, v in values.items() if k in known})

    def _value(self, ours: str) -> Any:
        value = getattr(self, ours.replace("-", "_"))
        if ours == "matmul-schedule" and value == "auto":
            return "pipelined" if self.double_buffer else "simple"
        return value

    def __init__(self, target=None, **values: Any):
        super().__init__(target, **values)
        self._lowerings()  # the owning passes check the values forwarded to them now

    def _lowerings(self) -> list[Pass]:
        lowerings = []
        for flag, forwarded in LOWERINGS:
            values = {theirs: self._value(ours) for ours, theirs in forwarded.items()
                      if self._value(ours) != _UNSET[ours]}
            lowering = self._make(flag, **values)
            if lowering is not None:
                lowerings.append(lowering)
        return lowerings

    def run(self, module: ir.Operation) -> None:
        """With fusion, a fused kernel whose chunk the footprint model sized
        too large for the memory planner (UB overflow) is retried with half
        the UB share, then unfused: attempting fusion never fails a program.
        An L1 overflow after npu-prefetch placed chunks beside the bytes live
        at each op is first retried with its safe room (`l1-room=safe`)."""
        fuse = self.fuse and self.cores == 1
        prefetch = self.prefetch and self.cores == 1
        fractions: tuple[float | None, ...] = (None,)
        if fuse:
            from npu.costmodel.fusion.rows import FUSED_UB_FRACTION

            share = self.ub_fraction or FUSED_UB_FRACTION
            fractions = (share, share / 2, None)
            if self.hoist_casts:
                self._required("npu-hoist-casts", remarks=self.fuse_remarks).run(module)
            if self.fuse_horizontal:
                self._required("npu-fuse-horizontal", remarks=self.fuse_remarks).run(module)
        snapshot = module.clone() if fuse or prefetch else None
        room, k = self.prefetch_l1_room, 0
        while True:
            fraction = fractions[k]
            try:
                self._lower(module, fraction, 1.0 if k == 0 else 0.5, room)
                return
            except PassError as e:
                if snapshot is None or "overflows" not in e.message:
                    raise
                if prefetch and room == "live" and e.message.startswith("l1 overflows"):
                    room = "safe"
                    if self.prefetch_remarks:
                        self.remark(module, "npu-prefetch: L1 overflowed with chunks beside the "
                                            f"bytes live at each op ({e.message.split(';')[0]}); "
                                            "lowering again with l1-room=safe")
                elif k + 1 < len(fractions):
                    k += 1
                    if self.fuse_remarks:
                        then = "unfused" if fractions[k] is None else f"at UB share {fractions[k]:g}"
                        self.remark(module, f"npu-fuse: fused kernels at UB share {fraction:g} "
                                            f"overflowed ({e.message.split(':')[0]}); retrying {then}")
                else:
                    raise
                _restore(module, snapshot.clone())

    def _lower(self, module: ir.Operation, fuse_fraction: float | None,
               attention_share: float = 1.0, l1_room: str = "live") -> None:
        """`attention_share`: of npu-fuse-attention's UB share (halved on the
        retry after an overflow, like the row groups'); `l1_room`:
        npu-prefetch's."""
        if fuse_fraction is not None:
            from npu.costmodel.attention.plan import ATTENTION_UB_FRACTION

            attention_fraction = ATTENTION_UB_FRACTION * attention_share
            if self.fuse_attention:
                self._required("npu-fuse-attention", remarks=self.fuse_remarks, **{
                    "ub-fraction": attention_fraction,
                    "nz-out": self.fuse_nz_stores,
                    "softmax": self.attention_softmax,
                    "tile": self.attention_tile}).run(module)
            self._required("npu-fuse", remarks=self.fuse_remarks, epilogues=self.fuse_epilogues,
                           **{"ub-fraction": fuse_fraction,
                              "row-major-stores": self.fuse_row_major_stores,
                              "epilogue-f16": self.fuse_epilogue_f16,
                              "epilogue-bias-f32": self.fuse_epilogue_bias_f32,
                              "nz-stores": self.fuse_nz_stores,
                              # a chained A is read by the pipelined schedule only
                              "chains": self.fuse_chains
                              and self._value("matmul-schedule") == "pipelined"}).run(module)
            if self.fuse_attention and self.fuse_attention_projection and self.fuse_epilogues:
                self._required("npu-fuse-attention-projection", remarks=self.fuse_remarks,
                               **{"ub-fraction": attention_fraction}).run(module)
            self._required("npu-lower-fused", **{"ub-fraction": fuse_fraction,
                                                 "slots": self.fuse_slots,
                                                 "steps": self.fuse_steps,
                                                 "layouts": self.fuse_layouts,
                                                 "remarks": self.fuse_remarks}, **(
                {"max-chunk": self.max_chunk} if self.max_chunk else {})).run(module)
            self._required("npu-lower-attention",
                           **{"row-max": self.attention_row_max,
                              "head-scope": self.attention_head_scope}).run(module)
        if self.cores != 1:  # fusion is not combined with core splitting yet
            self._required("npu-split-cores", cores=self.cores).run(module)
        if self.plan_gm:
            self._required("npu-plan-gm", algorithm=self.plan).run(module)
        if self.tuning_record:
            from npu.passes.tuning_record import RecordError, TuningRecord

            try:
                record = TuningRecord.load(self.tuning_record)
            except RecordError as e:
                raise PassError(f"npu-lower: {e}", module) from None
            if record.target and record.target != self.target.name.split("+")[0]:
                from npu import diagnostics

                diagnostics.emit_warning(f"npu-lower: tuning record '{self.tuning_record}' was made "
                                         f"for target '{record.target}', compiling for "
                                         f"'{self.target.name}'", module.location)
            self.apply_tuning_record(module, record)
        # A lowering none of whose ops is left is not run: each walks the
        # whole module, which is large once the matmuls are lowered (BERT-12:
        # four walks of 90k ops for nothing). Lowerings make no ascend ops
        # (one that did would be reported as left below).
        present = {o.name for o in walk_held(module, lambda o: o.name.startswith("ascend."))}
        for lowering in self._lowerings():
            if not lowering.handles or present.intersection(lowering.handles):
                lowering.run(module)
        left = walk_held(module, lambda o: o.name.startswith("ascend."))
        if left:
            raise PassError(f"npu-lower: no registered lowering handled '{left[0].name}' "
                            f"({len(left)} ascend op(s) left)", left[0])
        if self.plan_gm:
            # Lowerings that stage through GM (the general transpose's steps)
            # make temporaries of their own: they get a workspace too.
            self._required("npu-plan-gm", algorithm=self.plan).run(module)
        # Loops of ops with a per-op `double-buffer` carry a mark it follows.
        steps: list[Pass | None] = [self._make("npu-double-buffer", unmarked=self.double_buffer)]
        if self.prefetch and self.cores == 1:
            steps.append(self._required("npu-prefetch", remarks=self.prefetch_remarks,
                                        **{"l1-room": l1_room}))
        steps.append(self._required("npu-plan-memory", algorithm=self.plan))
        steps.append(self._required("npu-insert-sync", mode=self.sync, **{"sink-sets": self.sink_sets,
                                                                       "carried-span": self.carried_span}))
        if self.emit == "hivm":
            steps.append(self._required("npu-lower-cce-to-hivm"))
        for step in steps:
            if step is not None:
                step.run(module)
            if step is steps[0] and step is not None:
                # Only npu-prefetch changes the IR in between, and it tells the
                # collectors: the planner reuses the lifetimes double buffering
                # kept up to date, and sync insertion their accesses (moved to
                # the planned offsets).
                for later in steps[1:]:
                    if later is not None and hasattr(later, "collectors"):
                        later.collectors = step.collectors

    def _required(self, flag: str, **values: Any) -> Pass:
        p = self._make(flag, **values)
        if p is None:
            raise PassError(f"npu-lower: pass '{flag}' is not registered")
        return p

    def apply_tuning_record(self, module: ir.Operation, record) -> None:
        """Set each matching op's `npu.options` from `record` (npu-lower option
        names translated to its lowering's); options already on an op win."""
        from npu.passes import registry

        lowering_of = {name: flag for flag, cls in registry().items() for name in cls.handles}
        forwarded = dict(LOWERINGS)
        for op in walk(module, lambda o: o.name.startswith("ascend.")):
            options = record.options_for(op)
            if not options:
                continue
            flag = lowering_of.get(op.name)
            mapping = forwarded.get(flag, {})
            values = {}
            for key, value in options.items():
                if key != DOUBLE_BUFFER_KEY and key not in mapping:
                    takes = ", ".join([*mapping, DOUBLE_BUFFER_KEY])
                    source = f" '{self.tuning_record}'" if self.tuning_record else ""
                    raise PassError(f"tuning record{source}: option '{key}' does not apply to "
                                    f"{op.name} ({flag or 'its lowering'} takes: {takes})", op)
                values[mapping.get(key, key)] = value
            if "matmul-schedule" in mapping:
                schedule = options.get("matmul-schedule", self.matmul_schedule)
                if schedule == "auto":
                    per_op = options.get(DOUBLE_BUFFER_KEY, self.double_buffer)
                    values[mapping["matmul-schedule"]] = "pipelined" if per_op else "simple"
            if OP_OPTIONS_ATTR in op.attributes:
                values.update(dict_attr_items(op.attributes[OP_OPTIONS_ATTR]))
            with op.context, op.location:
                op.attributes[OP_OPTIONS_ATTR] = dict_attr_of(values)


def _restore(module: ir.Operation, copy: ir.Operation) -> None:
    """Replace the body of `module` by the body of `copy` (a clone of it)."""
    body = module.regions[0].blocks[0]
    for op in list(body.operations):
        op.erase()
    for op in list(copy.regions[0].blocks[0].operations):
        op.detach_from_parent()
        ir.InsertionPoint(body).insert(op)
