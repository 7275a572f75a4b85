"""`npu-lower`: the default pipeline from `ascend` to `hivm` instructions.

Runs, in order and by instantiating the registered pass classes (one place,
no copied code): `npu-canonicalize` (one form per spelling; skip with
`canonicalize=false`), `npu-split-cores` (with `cores` other than 1), `npu-hoist-casts`
(casts of attention's operands ahead of their layout ops; skip with
`hoist-casts=false`), `npu-fuse-horizontal`
(sibling matmuls sharing A; skip with `fuse-horizontal=false`),
`npu-fuse-attention` (skip with `fuse-attention=false`), `npu-fuse`,
`npu-fuse-attention-projection` (skip with `fuse-attention-projection=false`),
`npu-lower-fused` and `npu-lower-attention` (fused kernels;
skip with `fuse=false`; `fuse-nz-stores=false` keeps the matmul A operands'
separate casts and fractalizes),
`npu-plan-gm` (GM temporaries into one workspace; skip with `plan-gm=false`),
every lowering (matmul, fractalize, elementwise, transpose,
reduce), then `npu-double-buffer` (optional), `npu-prefetch` (on many cores,
across the chip barrier before an op; `prefetch=false` skips it), `npu-plan-memory`,
`npu-insert-sync` and `npu-lower-cce-to-hivm` (`emit=cce` stops before it,
at planned, synchronised cce). Every option of those passes is an option
here, derived from the pass's declaration (`npu.passes.lower_options`:
`<prefix><option>`, e.g. `prefetch-chunks`, with the exceptions in one table,
`ROUTES`), and is forwarded to the pass that owns it. A lowering that is not
registered is skipped, but no `ascend` op may survive: that is an error at the op.

An option given (other than at its default) where it does not apply is
refused in one line naming it and why (`npu.passes.lower_applies`: its pass
is not run, e.g. `prefetch-chunks` with `prefetch=false` or a split-cores
option on one core, or its declaration's `needs` do not hold, e.g.
`c-pieces` without the pipelined schedule, or the program has no op it acts
on, e.g. `conv-cube-residual` without a conv); at construction, except needs
an op's own options could meet and the ops the program has, checked once
`run` sees the ops (its input's, at any depth). The passes
it runs are built `unchecked` (`npu.passes.applies`): it sets their options,
its defaults among them (`sink-sets=true` with `sync=barrier` does nothing).

`tuning-record=FILE` (written by `npu-tune`) gives options per op: they are
set as the ops' `npu.options` (in the lowering's option names) before the
lowerings run, and override the options above for those ops only. Its
"pipeline" options (the core count, the fusion switches) are taken as if
given here, except those the caller did give.
"""

from __future__ import annotations

from typing import Any

from mlir import ir

from npu import diagnostics
from npu.ir import block_dim, dict_attr_items, dict_attr_of, functions, walk, walk_held
from npu.passes.applies import does_not_apply, program_ops, unchecked
from npu.passes.base import DOUBLE_BUFFER_KEY, OP_OPTIONS_ATTR, Pass, PassError
from npu.passes.lower_applies import refusals, resolve
from npu.passes.plan_memory import Overflow
from npu.passes.lower_options import (FORWARDS, LOWER_OPTIONS, LOWERINGS, PIPELINE_OPTIONS,
                                      SUB_PASS_CLASSES, UNSET)


# On several cores the attention reads Q, K and V as their projections' Nz
# (npu-fuse-attention's nz-operands, passes/attention_nz.py); False: as rows
# (the program of before, for measuring).
ATTENTION_NZ = True

class LowerPass(Pass):
    name = "npu-lower"
    summary = ("Default pipeline: all ascend lowerings, double buffering, memory planning, sync, "
               "cce -> hivm")
    # Its own, then every sub-pass's (npu.passes.lower_options).
    options = LOWER_OPTIONS

    def _make(self, flag: str, **values: Any) -> Pass:
        """Sub-pass `flag` with the values npu-lower forwards to it
        (`forwarded`), then `values` (npu-lower's own settings of them)."""
        with unchecked():  # checked here, in npu-lower's names (`refusal`)
            return SUB_PASS_CLASSES[flag](self.target, **{**self.forwarded(flag), **values})

    def forwarded(self, flag: str) -> dict[str, Any]:
        """{option of sub-pass `flag`: npu-lower's value}, unset ones left out."""
        values = {}
        for theirs, ours in FORWARDS[flag].items():
            value = self._value(ours)
            if ours in UNSET and value == UNSET[ours]:
                continue
            values[theirs] = value
        return values

    def _value(self, ours: str) -> Any:
        value = getattr(self, ours.replace("-", "_"))
        return resolve({ours: value, "double-buffer": self.double_buffer}, ours)

    def _values(self) -> dict[str, Any]:
        return {o.name: getattr(self, o.name.replace("-", "_")) for o in self.options}

    def __init__(self, target=None, **values: Any):
        super().__init__(target, **values)  # refuses what does not apply (`refusal`)
        self._lowerings()  # the owning passes check the values forwarded to them now

    def refusal(self, module: ir.Operation | None = None) -> str | None:
        """At construction, the first option given that does not apply, in
        npu-lower's names (npu.passes.lower_applies); needs an op's own
        options may meet, and a tuning record's options, are checked in
        `run`, which reads the record and sees the ops."""
        return self._refused(per_op=True) if module is None else None

    def _refused(self, per_op: bool, module: ir.Operation | None = None) -> str | None:
        """`npu-lower: <option>: does not apply: <why>` for the first option
        given that does not apply (to `module`'s ops once seen), or None."""
        ops = None if module is None else program_ops(module)
        found = refusals(self._values(), sorted(self.given), self.target, per_op, ops)
        return does_not_apply(self.name, *found[0]) if found else None

    def _lowerings(self) -> list[Pass]:
        return [self._make(flag) for flag, _ in LOWERINGS]

    _many = False  # lowering for several cores (npu-split-cores runs)
    record = None  # the tuning record (`tuning-record=FILE`), once read

    def run(self, module: ir.Operation) -> None:
        """On several cores, a program that npu-split-cores leaves on one
        core (too small to pay for its barriers) is lowered again as the
        one-core program: on many cores it would have lost L1 chains and
        npu-fuse-horizontal (formed there only where it pays on the cores)
        for nothing. So is one whose split a lowering refuses
        (with a remark naming why)."""
        if self.tuning_record:
            self.record = self._read_record(module)
            self._take_pipeline_options(module)
        # again with the record's pipeline options, and the ops' own options seen
        per_op = ((self.record is not None and bool(self.record.ops))
                  or bool(walk_held(module, lambda o: OP_OPTIONS_ATTR in o.attributes)))
        refused = self._refused(per_op, module)
        if refused:  # about the options, not a place in the input
            raise PassError(refused, loc=ir.Location.unknown(module.context))
        if (self.cores or self.target.cores) == 1:
            return self._run(module)
        if not self.cores and (any(block_dim(f) > 1 for f in functions(module))
                               or self._make("npu-split-cores").nothing_to_split(module)):
            self._no_split("the program is split already or too small to split", module)
            return self._run(module)  # split already, or too small for any core to share
        pinned = self._one_core_options(module)
        if pinned and self.cores:
            raise PassError(f"npu-lower: cores={self.cores}: {pinned} one core's options "
                            "(npu-tune tunes one-core programs); lower with cores=1", module)
        if pinned:  # by default: the program they were chosen for
            return self._run(module)
        pristine = module.clone()
        self._many = True
        refused = None
        try:
            self._run(module)
            if any(block_dim(f) > 1 for f in functions(module)):
                return
        except PassError as e:  # a split kernel a lowering does not take: one core
            if ((self.split_cores_grids and "grids:" in e.message)
                    or self.split_cores_split_k):
                raise  # the caller's grids or reduction splits, not the program, are wrong
            refused = e.message.splitlines()[0]
        finally:
            self._many = False
        _restore(module, pristine)
        self._run(module)  # a program no lowering takes fails here, with its own error
        if refused is not None and self.cores:  # asked for a count: say why it is not met
            self.remark(module, f"npu-lower: the program split over cores did not lower "
                                f"({refused}); lowered for one core")

    def _no_split(self, why: str, module: ir.Operation) -> None:
        """`split-cores-grids` and `split-cores-split-k` force a split, and
        `split-cores-split-k-model` asks the split's model for one (or not):
        set off their defaults, refused when the program is not split (on
        one core, as every split-cores option is: `npu.passes.lower_applies`)."""
        defaults = {o.name: o.default for o in self.options}
        for name in ("grids", "split-k", "split-k-model"):
            key = f"split-cores-{name}"
            if getattr(self, key.replace("-", "_")) != defaults[key]:
                raise PassError(f"npu-lower: split-cores-{name}: does not apply: no split over "
                                f"cores ({why})", module)

    def _one_core_options(self, module: ir.Operation) -> str | None:
        """What pins one-core tiles on the program, if anything: the split's
        slices are other ops, which neither `npu.options` nor a record's
        signatures would reach."""
        if self.record is not None and self.record.ops:
            return "a tuning record sets"
        if walk_held(module, lambda o: OP_OPTIONS_ATTR in o.attributes):
            return f"'{OP_OPTIONS_ATTR}' on an op sets"
        return None

    def _read_record(self, module: ir.Operation):
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
        return record

    def _take_pipeline_options(self, module: ir.Operation) -> None:
        """The record's whole-program options, where the caller set none
        (an option given on the pipeline or the command line wins, with a
        remark saying the record's value was not used)."""
        for name, value in self.record.pipeline.items():
            opt = PIPELINE_OPTIONS.get(name)
            if opt is None:
                raise PassError(f"npu-lower: tuning record '{self.tuning_record}': '{name}' is not "
                                "a pipeline option (a record's \"pipeline\" takes: "
                                f"{', '.join(PIPELINE_OPTIONS)})", module)
            value = float(value) if opt.type is float and type(value) is int else value
            try:
                opt.check(value)
            except ValueError as e:
                raise PassError(f"npu-lower: tuning record '{self.tuning_record}': pipeline option "
                                f"'{name}': {e}", module) from None
            if name in self.given:
                if value != self._value(name):
                    self.remark(module, f"npu-lower: {name}={self._value(name)} given: the tuning "
                                        f"record's {name}={value} is not used")
                continue
            setattr(self, name.replace("-", "_"), value)

    def _run(self, module: ir.Operation) -> None:
        """With fusion, a fused kernel whose chunk the footprint model sized
        too large for the memory planner (UB overflow) is retried with half
        the UB share, then unfused: attempting fusion never fails a program.
        An L1 overflow after npu-prefetch placed chunks beside the bytes live
        at each op is first retried with its safe room (`l1-room=safe`), with
        a remark (`_l1_retry`)."""
        fuse = self.fuse
        prefetch = self.prefetch
        fractions: tuple[float | None, ...] = (None,)
        if self.canonicalize:
            self._make("npu-canonicalize").run(module)
        if fuse:
            from npu.costmodel.fusion.rows import FUSED_UB_FRACTION

            share = self.ub_fraction or FUSED_UB_FRACTION
            fractions = (share, share / 2, None)
            if self.hoist_casts:
                self._make("npu-hoist-casts").run(module)
            if self.fuse_horizontal:  # on several cores, when each core's columns of
                # every sibling pay (`split_cores.qkv`)
                cores = (self.cores or self.target.cores) if self._many else 1
                self._make("npu-fuse-horizontal", cores=cores).run(module)
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
                    room = "safe"  # said always: a slower program, or a short estimate
                    self.remark(module, _l1_retry(e))
                elif k + 1 < len(fractions):
                    k += 1  # said always, at the op that overflowed: a slower program
                    attention = self.fuse_attention and bool(walk_held(
                        snapshot, lambda o: o.name == "ascend.batch_matmul"))
                    diagnostics.emit_remark(_fusion_retry(e, fraction, fractions[k], attention),
                                            e.loc or module.location, self.fuse_remarks)
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
                self._make("npu-fuse-attention",
                           **{"ub-fraction": attention_fraction,
                              "nz-operands": self._many and ATTENTION_NZ}).run(module)
            # a chained A is read by the pipelined schedule only
            # a chained A stays in one core's L1: not over many cores
            chains = (self.fuse_chains and self._value("matmul-schedule") == "pipelined"
                      and not self._many)
            # a stem's pool on its conv's drain: one core's (a core's rows would need the row above)
            conv_pool = self.fuse_conv_pool and not self._many
            # a conv chain's bands are one core's (each conv's grid cuts its own rows)
            # a per-channel operand is a row on a core of one channel block
            channels = self.fuse_channels or ((self.cores or self.target.cores) if self._many else 0)
            self._make("npu-fuse", chains=chains, channels=channels,
                       **{"ub-fraction": fuse_fraction, "conv-pool": conv_pool,
                          "conv-chains": self.fuse_conv_chains and not self._many}).run(module)
            # on many cores the projection stays its own group (split over its grid) and
            # attention splits over heads
            if (self.fuse_attention and self.fuse_attention_projection and self.fuse_epilogues
                    and not self._many):
                self._make("npu-fuse-attention-projection",
                               **{"ub-fraction": attention_fraction}).run(module)
        if self._many:  # fused groups split over the cores before their lowerings
            self._make("npu-split-cores").run(module)
        if fuse_fraction is not None:
            self._make("npu-lower-fused", **{"ub-fraction": fuse_fraction}).run(module)
            self._make("npu-lower-attention").run(module)
        if self.plan_gm:
            self._make("npu-plan-gm").run(module)
        if self.record is not None:
            self.apply_tuning_record(module, self.record)
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
            self._make("npu-plan-gm").run(module)
        if self._many and self.own_tiles:
            self._make("npu-own-tiles").run(module)
        # Loops of ops with a per-op `double-buffer` carry a mark it follows.
        steps: list[Pass] = [self._make("npu-double-buffer")]
        if self.prefetch:
            steps.append(self._make("npu-prefetch", **{"l1-room": l1_room}))
        steps.append(self._make("npu-plan-memory"))
        steps.append(self._make("npu-insert-sync"))
        if self.emit == "hivm":
            steps.append(self._make("npu-lower-cce-to-hivm"))
        for step in steps:
            step.run(module)
            if step is steps[0]:
                # Only npu-prefetch changes the IR in between, and it tells the
                # collectors: the planner reuses the lifetimes double buffering
                # kept up to date, and sync insertion their accesses (moved to
                # the planned offsets).
                for later in steps[1:]:
                    if hasattr(later, "collectors"):
                        later.collectors = step.collectors

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


def _fusion_retry(e: PassError, fraction: float, then: float | None, attention: bool) -> str:
    """npu-lower's remark on lowering again with half the fused UB shares
    (`then`; `attention`: npu-fuse-attention's too), or unfused (None),
    after the program overflowed at `fraction`."""
    said = e.message.split(":")[0]  # "ub overflows"
    if isinstance(e, Overflow):
        said += f": {e.peak} bytes placed, at least {e.bound} live at once, {e.capacity} available"
    again = "unfused" if then is None else f"at UB share {then:g}" + (
        " (the attention kernels' share halved too)" if attention else "")
    return (f"npu-lower: with fused kernels at UB share {fraction:g} the program overflowed "
            f"({said}); lowered again {again}")


def _l1_retry(e: PassError) -> str:
    """npu-lower's remark on lowering again with npu-prefetch's safe L1 room:
    whether the bytes live at once already passed L1 (npu-prefetch placed
    its slots by a live bound short of the planner's: worth a look) or only
    their packing did (the planner's heuristic, which the live room allows for)."""
    said = "L1 overflowed with npu-prefetch's slots beside the bytes live at each op"
    if isinstance(e, Overflow):
        said += (f" ({e.peak} bytes placed, at least {e.bound} live at once, {e.capacity} in L1"
                 + ("; more live than npu-prefetch's bound admitted)" if e.bound > e.capacity
                    else "; the planner did not pack them)"))
    return f"npu-lower: {said}; lowered again with prefetch-l1-room=safe"


def _restore(module: ir.Operation, copy: ir.Operation) -> None:
    """Replace the body of `module` by the body of `copy` (a clone of it),
    and its attributes by the copy's (marks of the attempt are dropped)."""
    for attr in list(module.attributes):  # their names
        if attr not in copy.attributes:
            del module.attributes[attr]
    body = module.regions[0].blocks[0]
    for op in list(body.operations):
        op.erase()
    for op in list(copy.regions[0].blocks[0].operations):
        op.detach_from_parent()
        ir.InsertionPoint(body).insert(op)
