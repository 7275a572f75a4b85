"""Decode a `func.func` once into closures the scalar unit runs.

Every SSA value gets a slot in a flat list (`env`); every op becomes a small
Python function over that list; `cce` ops become a dispatch that appends
`(instr, operand views, scalar cycles)` to the trace. Nothing here touches the
MLIR bindings after decoding, so running a loop nest costs a few Python calls
per dynamic op.

Scalar cost model: each executed arith op (other than constants), each view
op with a dynamic operand, each scf.for iteration and each scf.if charges
`target.scalar_issue_cycles`; each instruction dispatch charges it once more.
Constants, static views and allocations are free (resolved before run time).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from mlir import ir

from npu import ir as npu_ir
from npu.simulator import (compiled, cube_unit, dispatch, hivm_decode, img2col, mte, vector_unit,
                           walk_code)
from npu.simulator.errors import INVALID, UNSUPPORTED, Locator, SimulationError, where_of
from npu.simulator.instruction import BARRIER, SET, WAIT, DecodeContext, Instr, SyncInstr
from npu.simulator.memory import Memory, Placement, Region
from npu.simulator.scalar_unit import View
from npu.target import ON_CHIP_BUFFERS, Target

from .decode_views import ScalarAndViewDecoding, identity_strides, numel

Fn = Callable[[list], None]

# Dynamic instructions one launch may issue, every core's walk together. Its
# trace holds about 150 bytes an entry and the pipes take about 40 us one
# (docs/performance.md), so this is some 2.5 GB and 11 minutes; BERT-12 on 32
# cores issues about 0.5M. Without it a loop made 10^12 iterations long (the
# npu-run fuzzer's extreme integers) filled 10 GB in 20 s, unbounded.
MAX_INSTRUCTIONS = 1 << 24


def too_many_instructions(where: str) -> SimulationError:
    return SimulationError(UNSUPPORTED, f"the program issues more than {MAX_INSTRUCTIONS} "
                           "instructions (every core's together); the simulator runs at most "
                           "that many", where)


def _instr_decoders() -> dict[str, Callable[[DecodeContext], Instr]]:
    table: dict[str, Callable[[DecodeContext], Instr]] = {}
    table.update(mte.decoders())
    table.update(cube_unit.decoders())
    table.update(vector_unit.decoders())
    table.update(img2col.decoders())
    table["cce.set_flag"] = lambda ctx: SyncInstr(ctx, SET)
    table["cce.wait_flag"] = lambda ctx: SyncInstr(ctx, WAIT)
    table["cce.pipe_barrier"] = lambda ctx: SyncInstr(ctx, BARRIER)
    table["cce.sync_all"] = lambda ctx: SyncInstr(ctx, BARRIER, chip=True)
    return table


INSTR_DECODERS = _instr_decoders()


@dataclass
class Program:
    """The decoded entry function, bound to one run's trace list."""

    func_name: str
    args: list[tuple[Memory, Region, str, tuple[int, ...]]]  # memory, region (padded), dtype, shape
    env: list
    body: list[Fn]
    trace: list
    pending: list[int]
    placement: Placement
    n_groups: int = 0
    workspace_args: tuple[int, ...] = ()  # indices of scratch (npu.workspace) arguments
    gm_alloc_bytes: int = 0  # bytes of GM memref.alloc temporaries (each executed op once)
    hivm: "hivm_decode.HivmProgram | None" = None  # the hivm level's operand views
    scalar_loads: object = None  # `scalar_loads.ScalarLoads` when the program loads scalars
    block_slot: int | None = None  # the env slot of the `npu.block_idx` argument
    on_chip: dict[str, Memory] = field(default_factory=dict)  # the buffers, by space
    walker: object = None  # the compiled walk (`walk_code`), False: Python's
    # the trace's most entries in this walk (a list: Python's loops read it)
    trace_limit: list = field(default_factory=lambda: [MAX_INSTRUCTIONS])
    where: str = ""  # the entry's `file:line:col`

    def run_scalar(self) -> int:
        """Walk the control flow once, filling `trace`, and number the hazard
        groups; returns the trailing scalar cycles."""
        trailing = self.walk()
        self.number_groups()
        return trailing

    def walk(self, issued: int = 0) -> int:
        """Walk the control flow, filling `trace`; returns trailing scalar
        cycles. With the `issued` instructions of the launch's earlier cores,
        more than MAX_INSTRUCTIONS is the located error."""
        self.pending[0] = 0
        self.trace_limit[0] = len(self.trace) + MAX_INSTRUCTIONS - issued
        if self.hivm is not None:
            self.hivm.start_core()  # the previous core's register writes are not this one's
        if self.scalar_loads is not None:
            self.scalar_loads.lines.clear()  # each walk is a core that starts cold
        if self.walker is None:
            walker_type = compiled.walker_type()
            self.walker = (walker_type is not None and walk_code.compile_walk(self, walker_type)
                           or False)
        if self.walker:
            start = len(self.trace)
            try:
                trailing = self.walker.walk(0 if self.block_slot is None else
                                            self.env[self.block_slot], self.trace,
                                            self.trace_limit[0])
            except compiled.walk_limit():
                raise too_many_instructions(self.where) from None
            if trailing is not None:
                self.pending[0] = trailing
                return trailing
            del self.trace[start:]  # what the walker cannot do exactly: Python's walk
        env = self.env
        for fn in self.body:
            fn(env)
        if len(self.trace) > self.trace_limit[0]:  # straight code after the last loop
            raise too_many_instructions(self.where)
        return self.pending[0]

    def number_groups(self) -> None:
        """At the hivm level the operand views' hazard groups are numbered
        once every address the walks used is known."""
        if self.hivm is not None:
            self.n_groups = self.hivm.assign_groups(self.n_groups)

    def set_block_idx(self, core: int) -> None:
        """The core the next walk is: its `npu.block_idx` argument."""
        if self.block_slot is not None:
            self.env[self.block_slot] = core


class Decoder(ScalarAndViewDecoding):
    """Decodes the entry once; every core of a launch runs the result with
    its own block index (`Program.set_block_idx`, simulator/launch.py)."""

    def __init__(self, target: Target):
        self.target = target
        self.issue = target.scalar_issue_cycles
        self.slots: dict[ir.Value, int] = {}
        self.env: list = []
        self.trace: list = []
        self.pending = [0]
        self.placement = Placement({s: target.capacity(s) for s in ON_CHIP_BUFFERS},
                                   {s: target.granule(s) for s in ON_CHIP_BUFFERS})
        self.on_chip: dict[str, Memory] = {}
        self.gm_regions: list[Region] = []
        self.gm_alloc_bytes = 0
        self.last_yield: ir.Operation | None = None  # of the block `block` decoded last
        self.where_of = Locator()  # each op's `file:line:col`
        self.trace_limit = [MAX_INSTRUCTIONS]  # Program.walk sets it
        self.entry_where = ""

    # -- slots --------------------------------------------------------------

    def slot(self, value: ir.Value) -> int:
        s = self.slots.get(value)
        if s is None:
            s = self.slots[value] = len(self.env)
            self.env.append(None)
        return s

    def use(self, value: ir.Value, op: ir.Operation) -> int:
        s = self.slots.get(value)
        if s is None:  # defined outside the function (cannot happen in valid IR)
            raise SimulationError(INVALID, f"'{op.name}' uses a value defined outside the function",
                                  where_of(op.location))
        return s

    # -- entry ----------------------------------------------------------------

    def decode(self, func_op: ir.Operation) -> Program:
        block = func_op.regions[0].blocks[0]
        args = []
        blk_arg = npu_ir.block_idx_arg(func_op)
        block_slot = None
        for i, arg in enumerate(block.arguments):
            where = where_of(func_op.location)
            if i == blk_arg and str(arg.type) == "index":
                block_slot = self.slots[arg] = len(self.env)
                self.env.append(0)
                continue
            if not npu_ir.is_memref(arg.type):
                raise SimulationError(UNSUPPORTED, f"argument #{i} of '{npu_ir.symbol_name(func_op)}' "
                                      f"is {arg.type}; only memref arguments are supported", where)
            mt = npu_ir.memref_type(arg.type)
            space = npu_ir.memory_space(arg.type)
            dtype = npu_ir.memref_element(arg.type)
            if space != "gm":
                raise SimulationError(UNSUPPORTED, f"argument #{i} is in '{space}'; arguments must "
                                      f"be in gm", where)
            if not mt.has_static_shape:
                raise SimulationError(UNSUPPORTED, f"argument #{i} has a dynamic shape", where)
            shape = tuple(mt.shape)
            strides, offset = npu_ir.memref_layout(arg.type)
            if not numel(shape):  # MLIR gives no static stride before a 0 dimension
                strides, offset = identity_strides(shape), 0
            if offset != 0 or strides != identity_strides(shape):
                raise SimulationError(UNSUPPORTED, f"argument #{i} must have the identity layout", where)
            nbytes = numel(shape) * npu_ir.element_bytes(dtype)
            mem, region = self.gm_memory(f"gm:arg{i}", f"argument #{i}", nbytes)
            self.env.append(None)
            self.slots[arg] = len(self.env) - 1
            self.env[self.slots[arg]] = View(region, 0, shape, tuple(strides))
            args.append((mem, region, dtype, shape))
        self.entry_where = where_of(func_op.location)
        body = self.block(block)
        self.where_of.loc = None  # nothing keeps the module's context alive
        gid = self.placement.assign_groups(0)
        for region in self.gm_regions:
            region.group = gid
            gid += 1
        return Program(npu_ir.symbol_name(func_op), args, self.env, body, self.trace, self.pending,
                       self.placement, gid,
                       tuple(i - (blk_arg is not None and i > blk_arg)
                             for i in npu_ir.workspace_args(func_op)),
                       self.gm_alloc_bytes, getattr(self, "hivm_state", None),
                       getattr(self, "_scalar_loads", None), block_slot, dict(self.on_chip),
                       trace_limit=self.trace_limit, where=self.entry_where)

    def gm_memory(self, name: str, label: str, nbytes: int) -> tuple[Memory, Region]:
        """A GM allocation (argument or temporary): the runtime pads it to whole
        GM granules, so transfers may run into the last granule's (never
        initialised) padding."""
        granule = self.target.gm_alloc_granule_bytes
        padded = -(-max(nbytes, 1) // granule) * granule
        if padded != nbytes:
            label = f"{label}: {nbytes} bytes padded to {padded}"
        mem = Memory(name, "gm", padded, granule)
        region = Region(mem, 0, padded, label=label)
        self.gm_regions.append(region)
        return mem, region

    # -- blocks ---------------------------------------------------------------

    def block(self, block: ir.Block) -> list[Fn]:
        """Closures for the ops of `block` (its terminator excluded)."""
        fns: list[Fn] = []
        static_cost = 0
        pending = self.pending
        # Consecutive cce instructions with only static scalar cost between
        # them and operands defined outside this block: (instr, operand slots,
        # pre cost), dispatched by one closure.
        run: list[tuple[Instr, tuple[int, ...], int]] = []
        local: set | None = None  # values defined in this block (once a cce op needs them)

        def flush() -> None:
            if run:
                fns.append(dispatch.dispatch_run(list(run), self.trace, pending))
                run.clear()

        last_yield = None  # the block's last op when it is an scf.yield
        for op_view in block.operations:
            op = op_view.operation
            name = op.name
            last_yield = op if name == "scf.yield" else None
            if name in ("scf.yield", "func.return"):
                continue
            if name in INSTR_DECODERS:
                instr, slots = self.instruction(op)
                if local is None:
                    local = _defined_in(block)
                if any(v in local for v in op.operands):  # changes within the block
                    flush()
                    fns.append(dispatch.dispatch_one(instr, slots, static_cost + self.issue,
                                                     self.trace, pending))
                else:
                    run.append((instr, slots, static_cost + self.issue))
                static_cost = 0
                continue
            if name.startswith("hivm."):  # the hivm level: decoded from its words
                scalar = hivm_decode.scalar_op(self, op, name)
                flush()
                if scalar is None:
                    fns.append(hivm_decode.instruction(self, op, static_cost + self.issue, name))
                    static_cost = 0
                else:
                    fns.append(scalar[0])
                    static_cost += scalar[1]
                continue
            if name in ("scf.for", "scf.if"):
                flush()
                if static_cost:
                    fns.append(_add_cost(pending, static_cost))
                    static_cost = 0
                fns.append(self.scf_for(op) if name == "scf.for" else self.scf_if(op))
                continue
            fn, cost = self.scalar(op)
            static_cost += cost
            if fn is not None:
                flush()
                fns.append(fn)
        flush()
        if static_cost:
            fns.append(_add_cost(pending, static_cost))
        self.last_yield = last_yield  # for `_yield_slots`: listing the ops again cost 5% of decode
        return fns

    def instruction(self, op: ir.Operation) -> tuple[Instr, tuple[int, ...]]:
        """Decode a cce op (once, in program order): its `Instr` and operand slots."""
        ctx = DecodeContext(op, self.where_of(op.location), self.target)
        instr = INSTR_DECODERS[op.name](ctx).finish()
        return instr, tuple(self.use(v, op) for v in op.operands)

    # -- control flow -----------------------------------------------------------

    def scf_for(self, op: ir.Operation) -> Fn:
        operands = list(op.operands)
        lb, ub, step = (self.use(v, op) for v in operands[:3])
        inits = tuple(self.use(v, op) for v in operands[3:])
        body_block = op.regions[0].blocks[0]
        iv = self.slot(body_block.arguments[0])
        bargs = tuple(self.slot(a) for a in list(body_block.arguments)[1:])
        results = tuple(self.slot(r) for r in op.results)
        body = self.block(body_block)
        yields = self._yield_slots(body_block, op)
        pending = self.pending
        iter_cost = self.issue
        where = self.where_of(op.location)
        trace, limit, entry = self.trace, self.trace_limit, self.entry_where

        def run_for(env: list) -> None:
            i, end, st = env[lb], env[ub], env[step]
            if st <= 0:
                raise SimulationError(INVALID, f"'scf.for' has non-positive step {st}", where)
            vals = [env[s] for s in inits]
            while i < end:
                env[iv] = i
                for s, v in zip(bargs, vals):
                    env[s] = v
                pending[0] += iter_cost
                for fn in body:
                    fn(env)
                if yields:
                    vals = [env[s] for s in yields]
                if len(trace) > limit[0]:
                    raise too_many_instructions(entry)
                i += st
            for s, v in zip(results, vals):
                env[s] = v

        # what the compiled walk runs instead (walk_code.py)
        code = ("for", lb, ub, step, iv, iter_cost, inits, bargs, results, yields, body)
        run_for.code = code
        if inits:
            return run_for

        def run_simple_for(env: list) -> None:
            i, end, st = env[lb], env[ub], env[step]
            if st <= 0:
                raise SimulationError(INVALID, f"'scf.for' has non-positive step {st}", where)
            while i < end:
                env[iv] = i
                pending[0] += iter_cost
                for fn in body:
                    fn(env)
                if len(trace) > limit[0]:
                    raise too_many_instructions(entry)
                i += st
        run_simple_for.code = code
        return run_simple_for

    def scf_if(self, op: ir.Operation) -> Fn:
        cond = self.use(op.operands[0], op)
        results = tuple(self.slot(r) for r in op.results)
        then_block = op.regions[0].blocks[0]
        then_body = self.block(then_block)
        then_yields = self._yield_slots(then_block, op)
        has_else = len(op.regions) > 1 and len(op.regions[1].blocks) > 0
        else_block = op.regions[1].blocks[0] if has_else else None
        else_body = self.block(else_block) if else_block is not None else []
        else_yields = self._yield_slots(else_block, op) if else_block is not None else ()
        pending = self.pending
        cost = self.issue

        def run_if(env: list) -> None:
            pending[0] += cost
            body, yields = (then_body, then_yields) if env[cond] else (else_body, else_yields)
            for fn in body:
                fn(env)
            for s, y in zip(results, yields):
                env[s] = env[y]
        run_if.code = ("if", cond, cost, results, then_body, then_yields, else_body, else_yields)
        return run_if

    def _yield_slots(self, block: ir.Block, op: ir.Operation) -> tuple[int, ...]:
        """The slots `block`'s scf.yield yields; `block` is the one `self.block` just decoded."""
        if self.last_yield is not None:
            return tuple(self.use(v, op) for v in self.last_yield.operands)
        return ()


def _defined_in(block: ir.Block) -> set:
    """The values `block` defines: its arguments and its ops' results."""
    local = set(block.arguments)
    for op_view in block.operations:
        local.update(op_view.operation.results)
    return local


def _add_cost(pending: list[int], cost: int) -> Fn:
    def add(env: list) -> None:
        pending[0] += cost
    add.code = ("cost", cost)
    return add
