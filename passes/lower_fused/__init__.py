"""npu-lower-fused: each `npu.fused` group (from `npu-fuse`) -> one cce
vector kernel over chunks of whole rows.

Per chunk of rows: every tensor the group reads from GM is loaded once
(at its first use), the steps of `npu.kernels.fused_chunk` compute in UB (results
in place over inputs they are the last reader of), and only the tensors
leaving the group are stored. Row operands (bias, gamma) and scalars are
loaded once before the loop. Rows longer than UB run the two-pass kernel
(`npu.kernels.online_rows`, `npu.kernels.online_kernel`).

The chunks take `slots` sets of their streamed buffers (what a load
writes or a store reads) by turns, allocated once before the chunk loop.
Every chunk's loads end with a set_flag that holds MTE2 until they land
(the GM latency), and its stores likewise hold MTE3: the fewer and larger
the chunks, the nearer the loads stream. The layout is chosen with
`npu.costmodel.vector.chunk_pipeline`'s steady-state model of one emitted chunk: whether a
stored result may take over a loaded buffer (more rows per chunk, but the
next load into that buffer waits for the store to land), whether the
buffers only stored from get one set or one per slot, and how many rows a
chunk takes. `remarks=true` says which and why.

The UB-level builders of each step are `npu.kernels.row_builders`.
"""

from __future__ import annotations

from mlir import ir

from npu.kernels import fused_chunk, online_rows, resident_fit
from npu.costmodel.fusion import gelu, rows as fusion
from npu.costmodel.vector.chunk_pipeline import ChunkProfile
from npu.costmodel.fusion.epilogue import PARTIAL_SUMS_ATTR
from npu.costmodel.fusion.rows import FUSED_UB_FRACTION
from npu import ir as nir
from npu.kernels.nz_store import NzStore
from npu.kernels.cce_build import copy, for_pieces, index_add, lin, sub
from npu.kernels.scalar_blocks import load_scalar
from npu.passes.base import DOUBLE_BUFFER_ATTR, Option, Pass, PassError, ub_fraction_option
from npu.passes.applies import row_ops
from npu.passes.split_cores.channel_grid import dissolve_per_block
from npu.analysis.pipe_work import pipe_work
from npu.kernels.resident_rows import OVERLAP_KEY, ResidentRows
from npu.kernels.row_builders import IDENTITY, RowBuilders
from npu.kernels.vector_compute import constant_blocks
from npu.costmodel.vector.tiling import plan_chunks

from .layouts import LayoutChoice


# What a fused group's body may hold besides its member ops.
BODY_OPS = ("memref.alloc", "scf.yield", "arith.constant") + nir.VIEW_OPS


def nz_store(target, nz: ir.Value, rows: int, n: int) -> NzStore:
    """The Nz store of a group's result into the whole tensor, or into subviews of it
    (npu-split-cores' runs of a core, `split_cores.peel`'s) through its flat view."""
    elem = nir.memref_element(nz)
    if nir.is_contiguous(nz):
        return NzStore(target, nir.flatten_memref(nz), rows, n, elem)
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    levels, src, f = [], nz, target.fractal
    while not nir.is_contiguous(src):  # a core's run of a peeled group's blocks: two subviews
        view = nir.defining_op(src)
        given = iter(list(view.operands)[1:])
        levels.append([next(given) if o == dynamic else o
                       for o in ir.DenseI64ArrayAttr(view.attributes["static_offsets"])])
        src = view.operands[0]
    pitch = nir.memref_shape(src)[1]
    base = lin(*((o[d], step) for o in levels for d, step in ((0, pitch * f * f), (1, f * f), (2, f))))
    return NzStore(target, nir.flatten_memref(src), rows, n, elem, pitch, base,
                   nir.memref_shape(nz)[2] == f and rows % f > 0)  # whole blocks it leaves short


class LowerFused(Pass):
    name = "npu-lower-fused"
    acts_on = row_ops()  # every option: the program has one
    summary = "Lower npu.fused groups of row ops to one cce vector kernel each"
    options = (
        ub_fraction_option(FUSED_UB_FRACTION,
                           "UB share a chunk's buffers with one set of its streamed ones must "
                           "fit in for the one-pass kernel; at the default, a one-pass chunk "
                           "with all its sets may take 0.9 of UB, scaled with this share"),
        Option("max-chunk", int, 0,
               "cap on the elements of one chunk (0: as UB allows); for tests", low=0),
        Option("slots", int, 2, "sets of streamed buffers (loads, stores) the one-pass chunks "
               "take by turns, allocated before the chunk loop; 1: each chunk allocates its "
               "own in the loop body (npu-double-buffer then doubles them)", low=1, high=4),
        Option("steps", bool, True, "one-pass chunks compute results in place over the inputs "
               "they last read, fold a layernorm's squares into its variance (vmul/vmla), "
               "convert a cast leaving in Nz as it is gathered, and sum long rows in two levels; "
               "false: a buffer per result and a step per member (a scale and shift still one "
               "vmadd)"),
        Option("layouts", bool, True, "choose each kernel's chunk layout with the pipeline "
               "model (stores over loaded buffers, one set of stored buffers, rows per "
               "chunk); false: every streamed buffer in each slot, as many rows as fit"),
        Option("resident", bool, True, "rows too long for a chunk of whole rows that fit UB (or long rows "
               "that are not whole 32-byte blocks) stay resident, one row a chunk in two slots, "
               "two sharing a piece of the row, or one (npu.kernels.resident_rows); false: "
               "the two-pass kernel takes rows that do not fit a chunk of whole rows"),
        Option("remarks", bool, False, "report each kernel's chunk layout"),
    )

    def run(self, module: ir.Operation) -> None:
        self.trials: dict = {}  # `LayoutChoice.cached_trial`'s profiles, for this run
        for func in nir.functions(module):
            groups = [g for g in nir.walk_held(func, lambda o: o.name == "scf.execute_region"
                                               and fusion.FUSED_ATTR in o.attributes)
                      if not dissolve_per_block(g)]  # one left with several blocks a core
            if not groups:
                continue
            users = fusion.tensor_users(func)
            for region in groups:
                FusedKernel(self, region, users).emit()
                region.erase()


class FusedKernel(RowBuilders, ResidentRows, LayoutChoice):
    def __init__(self, p: LowerFused, region: ir.Operation, users: dict):
        self.p, self.region = p, region
        self.target = p.target
        self.granule = self.target.granule("ub")
        members, layouts = [], []
        for k, op in enumerate(region.regions[0].blocks[0].operations):
            op = op.operation
            if op.name == "ascend.fractalize":  # an Nz store of a member's result
                layouts.append(op)
                continue
            if not op.name.startswith("ascend."):
                if op.name not in BODY_OPS:
                    raise PassError(f"'{op.name}' cannot be part of a fused group (only ascend row "
                                    "ops, memref.alloc, views and scf.yield)", op)
                continue
            d = fusion.describe(op, k, self.target, tails=True)
            if isinstance(d, str):
                raise PassError(f"cannot be part of a fused group: {d}", op)
            members.append(d)
        if not members:
            raise PassError("an npu.fused group without ascend ops", region)
        self.g = fusion.model(members, users, layouts=layouts)
        collapsed = gelu.collapse(self.g.members, self.g.leaving)
        if len(collapsed) < len(members):
            kept = {m.op for m in collapsed}
            self.g = fusion.model(collapsed, users, [m.op for m in members if m.op not in kept],
                                  layouts)
        self.members = self.g.members
        self.rows, self.n = self.g.rows, self.g.n or 1
        self.width = self.n  # columns of the UB buffers (a piece's in the two-pass kernel)
        budget = int(self.target.capacity("ub") * p.ub_fraction)
        self.online = None
        self.profile: ChunkProfile | None = None  # filled by `chunk` when set (`trial`)
        self.tail = fusion.tail_block(self.g, self.target)
        # partial sums the first members add (`split_cores/split_k_rows.py`):
        # loaded together, not at first use, so their GM latencies overlap
        self.sums = (nir.int_attr(region, PARTIAL_SUMS_ATTR)
                     if PARTIAL_SUMS_ATTR in region.attributes else 0)
        long = self.tail or not fused_chunk.whole_rows_fit(self.g, self.target, budget)
        fit = (resident_fit.resident_fit(self.g, self.target, budget)
               if long and not self.g.nz and p.slots > 1 and p.resident else None)
        self.resident = fit is not None
        self.overlap = fit.overlap if fit is not None else 0
        self.resident_slots = fit.slots if fit is not None else 0
        if self.tail and not self.resident:
            raise PassError(f"cannot lower the fused group: rows of {self.n} elements are not "
                            "whole 32-byte blocks and not resident in UB", region)
        if self.tail:  # the UB row: its whole blocks, then the block ending the row
            self.gm_n, self.n = self.n, self.n - self.n % self.tail + self.tail
            self.width = self.n
        if not self.resident and not fused_chunk.whole_rows_fit(self.g, self.target, budget):
            plan = online_rows.plan(self.g, self.target, budget)
            if isinstance(plan, str):
                cb = fused_chunk.one_set(self.g, self.target)
                raise PassError(f"the fused group does not fit UB: {cb.fixed} + "
                                f"{fused_chunk.per_row(cb)} bytes per row, budget {budget}; "
                                f"{plan}", region)
            self.online = plan
            self.check_layouts(layouts)
            self.plan = plan_chunks(self.rows, plan.rows,
                                    online_rows.online_row_block(self.g, self.target))
            return
        self.check_layouts(layouts)

    @property
    def row_block(self) -> int:
        return online_rows.online_row_block(self.g, self.target)

    def check_layouts(self, layouts: list[ir.Operation]) -> None:
        written = {m.out.root for m in self.members if m.out.kind == "full"}
        for f in layouts:
            why = fusion.nz_layout(f.operands[0], f.operands[1], self.g.rows, self.g.n,
                                   self.target)
            if why is None and nir.view_root(f.operands[0]) not in written:
                why = "it does not read a member's result"
            if why is None and self.online is not None:
                why = "the group's rows are longer than UB (two-pass kernel)"
            if why is not None:
                raise PassError(f"cannot be an Nz store of the fused group: {why}", f)

    # -- structure ------------------------------------------------------------
    def emit(self) -> None:
        with self.region.location, ir.InsertionPoint(self.region):
            # GM views of what moves between GM and UB (never the group's own tensors).
            self.flat = {}
            for m in self.members:
                for o in m.ins + [m.out]:
                    moves = o.root in self.g.loaded or o.root in self.g.leaving
                    if moves and o.value not in self.flat:
                        self.flat[o.value] = nir.flatten_memref(o.value)
            self.nz = {root: nz_store(self.target, nz, self.rows, self.n)
                       for root, nz in self.g.nz.items()}
            for store in self.nz.values():
                store.zero_padding()
            self.fixed: dict = {}
            for o in self.g.loaded.values():
                if o.kind == "row" and self.online is None:  # two-pass: per piece
                    buf = nir.alloc([self.n], o.elem, "ub")
                    if self.tail:
                        self.load_row_operand(o, buf)
                    else:
                        copy("cce.copy_gm_to_ub", self.flat[o.value], buf, 1,
                             self.n * o.es // self.granule)
                    self.fixed[o.root] = buf
                elif o.kind == "scalar":
                    self.fixed[o.root] = load_scalar(self.target, o.elem, self.flat[o.value],
                                                     self.region)
            # The recipes' constant blocks, once before the chunks.
            self.consts = {m.index: constant_blocks(m.compute, self.target)
                           for m in self.members if m.compute is not None}
            if self.online is not None:
                from npu.kernels.online_kernel import TwoPass

                for_pieces(self.plan, lambda row0, rows: TwoPass(self, row0, rows).emit())
                return
            layout = self.choose()
            self.use(layout)
            self.plan = plan_chunks(self.rows, layout.rows, self.row_block)
            if self.p.remarks:
                self.remark(layout)
            if layout.slots > 1 or self.resident:  # a resident row in one slot: no doubling
                self.pipelined()
            else:
                for_pieces(self.plan, self.chunk)

    def pipelined(self) -> None:
        """The chunks in `slots` sets of streamed buffers by turns, allocated
        before the chunk loop, whose body runs one chunk per set (marked for
        npu-double-buffer to leave alone). The short piece (the rows past
        the last whole chunk) and the chunks past the last whole group of
        `slots` go first, in the sets the loop takes last: after the loop
        they would have waited at the loop's balancing flags for its last
        chunk's vector work, before their loads (no loop: `chain_chunks`)."""
        plan, k = self.plan, self.layout.slots
        rows = plan.chunk
        slots = self.slot_buffers(rows, k, self.layout.copies)
        if self.layout.short_last:
            return self.chain_chunks(slots)
        first = [plan.tail.length] if plan.tail is not None else []
        first += [rows] * (plan.full_chunks % k)
        groups, row0 = plan.full_chunks // k, 0
        for j, length in enumerate(first):
            self.chunk(row0, length, slots[(k - len(first) + j) % k])
            row0 += length
        if groups == 1:
            for j in range(k):
                self.chunk(row0 + j * rows, rows, slots[j])
        elif groups > 1:
            loop = nir.for_loop(0, groups)
            loop.operation.attributes[DOUBLE_BUFFER_ATTR] = ir.BoolAttr.get(False)
            with ir.InsertionPoint(loop.body):
                base = lin((loop.induction_variable, k * rows), (row0, 1))
                for j in range(k):
                    self.chunk(index_add(base, j * rows), rows, slots[j])
                nir.yield_()

    def slot_buffers(self, rows: int, k: int, copies) -> list[dict]:
        """`k` sets of the streamed buffers of a chunk of `rows` rows: per
        buffer id of `npu.kernels.fused_chunk.plan` (loaded operands, stored results)
        and per Nz result (its gathered rows); a key with `copies(key)` < k
        is shared by the sets. One alloc per element type holds all of that
        type: the sets then live from the first chunk on (the memory planner
        placed the first chunk's temporaries in a set's bytes when that set
        was first used in the loop, and the loop's first loads waited)."""
        cp = self.steps
        wanted = [(b, cp.operand[b].elem, rows * self.n if cp.operand[b].kind == "full"
                   else self.col_size(rows, cp.operand[b].elem)) for b in cp.streamed]
        wanted += [(("nz", root), store.elem, rows * self.n) for root, store in self.nz.items()]
        sets: list[dict] = [{} for _ in range(k)]
        shared = self.overlap if self.resident and k == 2 and len(wanted) == 1 else 0
        for elem in dict.fromkeys(e for _, e, _ in wanted):
            mine = [(key, size) for key, e, size in wanted if e == elem]
            total = sum(min(k, copies(key)) * size for key, size in mine) - shared
            whole = nir.alloc([total], elem, "ub")
            offset = 0
            for key, size in mine:
                for j in range(k):
                    if j < copies(key):
                        view = sub(whole, offset, size)
                        offset += size - shared
                    sets[j][key] = view
        if shared:  # the first slot's row ends in the bytes the second's starts in
            sets[0][OVERLAP_KEY], sets[1][OVERLAP_KEY] = "end", "start"
        return sets

    def chunk(self, row0, rows: int, slot: dict | None = None) -> None:
        """One chunk: the steps of `npu.kernels.fused_chunk.plan` in order, loads at first
        use, results in place where the plan says, each store right after
        its result, but the `deferred` ones back to back at the chunk's end
        (`fusion.stores_at_end`). Stores issued together share one MTE3 -> V
        flag (`npu-insert-sync` sink-sets); each flag costs MTE3 the GM
        latency, and layernorm's two results (f32 and its f16 Nz copy, whose
        cast and gather come between) would pay it twice per chunk.
        `slot`: the streamed buffers to use (`slot_buffers`), else each is
        allocated here (in the loop body npu-double-buffer doubles). With
        `profile` set, what the chunk does on each pipe is recorded."""
        valid = min(rows, self.rows)
        self.overlap_side = slot.get(OVERLAP_KEY) if slot is not None else None
        bufs: dict = {}
        expanded: dict = {}
        pending: list = []
        cp = self.steps
        keys: dict = {}  # UB value -> its streamed key (for the profile)

        def streamed(root) -> ir.Value | None:
            """The slot's buffer for `root`, cut to the chunk's rows."""
            b = cp.buffer.get(root)
            if slot is None or b not in slot:
                return None
            size = valid * self.n if cp.operand[b].kind == "full" else nir.memref_shape(slot[b])[0]
            view = sub(slot[b], 0, size)
            keys[view] = b
            return view

        def nz_into(root) -> ir.Value | None:
            if slot is None:
                return None
            keys[slot[("nz", root)]] = ("nz", root)
            return sub(slot[("nz", root)], 0, valid * self.n)

        block = ir.InsertionPoint.current.block
        # Counting the block's ops walks it: only for a profile (a trial),
        # not for every step of every chunk (0.1 CPU s of BERT-12's at 32 cores).
        profiled = self.profile is not None
        loaded = {o.root for o in self.g.loaded.values()}  # (and the group's own first step's)
        early = [i for step in cp.steps[:self.sums + 1] for i in step.reads
                 if self.sums and i.root in loaded]
        for index, step in enumerate(cp.steps):
            start = len(block.operations) if profiled else 0
            m = step.op
            # A loaded buffer a result is stored from loads last: the next
            # chunk's load into it waits for that store.
            reads = early + step.reads if index == 0 else step.reads
            for i in sorted(reads, key=lambda o: cp.buffer.get(o.root) in cp.stored):
                if i.kind in ("full", "col") and i.root not in bufs:
                    bufs[i.root] = self.load(i, row0, rows, valid, streamed(i.root))
            later = pending if m.out.root in self.deferred else None
            if step.kind == "nz_cast":  # converted straight into Nz order as it is gathered
                self.nz[m.out.root].store(bufs[m.ins[0].root], row0, valid, later,
                                          (m.compute, m.ins[0].es), nz_into(m.out.root))
            else:
                if step.kind == "multiply_add":
                    out = bufs[step.x.root]  # dead after the pair: the result overwrites it
                elif step.home is not None:
                    out = bufs[step.home]
                elif streamed(m.out.root) is not None:
                    out = streamed(m.out.root)
                elif m.out.kind == "full":
                    out = nir.alloc([valid * self.n], m.out.elem, "ub")
                else:
                    out = self.col_alloc(rows, m.out.elem)
                stored = self.split_store(step)
                if stored:  # a resident row: computed and stored piece by piece
                    self.elementwise_stored(m, bufs, expanded, out, row0)
                elif step.kind == "square_sum":
                    a, b = step.factors
                    self.mask_tail(a, bufs[a.root], 0.0)
                    self.reduce(m, bufs[a.root], out, rows, valid, factor=bufs[b.root])
                elif m.compute is None:
                    self.mask_tail(m.ins[0], bufs[m.ins[0].root], IDENTITY[m.op.name])
                    self.reduce(m, bufs[m.ins[0].root], out, rows, valid)
                else:
                    self.elementwise(m, bufs, expanded, out, rows, valid)
                bufs[m.out.root] = out
                if m.out.root in self.g.leaving and not stored:
                    def leave(o: fusion.Operand = m.out, buf: ir.Value = out) -> None:
                        self.store(o, buf, row0, valid)

                    if later is not None:
                        later.append(leave)
                    else:
                        leave()
                if m.out.root in self.nz:
                    self.nz[m.out.root].store(out, row0, valid, later, into=nz_into(m.out.root))
            if profiled:
                self.record(list(block.operations)[start:], index, step, bufs, keys)
        start = len(block.operations) if profiled else 0
        for leave in pending:
            leave()
        if profiled:
            self.record(list(block.operations)[start:], len(cp.steps), None, bufs, keys)

    def record(self, ops: list, index: int, step, bufs: dict, keys: dict) -> None:
        """Add what `ops` (one step's, or the deferred stores) do to the profile."""
        def key_of(value: ir.Value):
            while value not in keys:
                op = nir.defining_op(value)
                if op is None or op.name != "memref.subview":
                    return None
                value = op.operands[0]
            return keys[value]

        burst = self.target.gm_burst_cycles
        for op in ops:
            if op.name == "cce.copy_gm_to_ub":
                cycles = pipe_work([op], self.target)["MTE2"] + burst * nir.int_attr(op, "n_burst")
                self.profile.loads.append((key_of(op.operands[1]), cycles))
            elif op.name == "cce.copy_ub_to_gm":
                cycles = pipe_work([op], self.target)["MTE3"] + burst * nir.int_attr(op, "n_burst")
                self.profile.stores.append((key_of(op.operands[0]), cycles, index))
        if step is not None:
            cp = self.steps
            reads = {cp.buffer.get(i.root) for i in step.reads} - {None}
            writes = {cp.buffer.get(step.op.out.root)} - {None}
            if step.kind == "nz_cast" or step.op.out.root in self.nz:
                writes.add(("nz", step.op.out.root))
            self.profile.steps.append((reads, writes, pipe_work(ops, self.target)["V"]))

    def load(self, o: fusion.Operand, row0, rows: int, valid: int,
             into: ir.Value | None = None) -> ir.Value:
        if o.kind == "full":
            buf = nir.alloc([valid * self.n], o.elem, "ub") if into is None else into
            if self.resident:
                self.move_row("cce.copy_gm_to_ub", o, buf, row0)
                return buf
            copy("cce.copy_gm_to_ub", sub(self.flat[o.value], lin((row0, self.n)), valid * self.n),
                 buf, 1, valid * self.n * o.es // self.granule)
            return buf
        buf = self.col_alloc(rows, o.elem) if into is None else into
        copy("cce.copy_gm_to_ub", sub(self.flat[o.value], row0, rows), buf, 1,
             -(-valid * o.es // self.granule))
        return buf

    def store(self, o: fusion.Operand, buf: ir.Value, row0, valid: int) -> None:
        if o.kind == "full" and self.resident:
            self.move_row("cce.copy_ub_to_gm", o, buf, row0)
        elif o.kind == "full":
            copy("cce.copy_ub_to_gm", buf, sub(self.flat[o.value], lin((row0, self.n)),
                                               valid * self.n), 1,
                 valid * self.n * o.es // self.granule)
        else:
            copy("cce.copy_ub_to_gm", buf, sub(self.flat[o.value], row0, valid), 1,
                 -(-valid * o.es // self.granule))
