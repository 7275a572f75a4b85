"""A core's own stored tile of an intermediate kept in UB across a chip
barrier and copied into the next matmul's A instead of reloaded from GM
(`npu-own-tiles`; `npu-lower`'s `own-tiles`, on several cores).

Why: between two matmuls split over the same row parts (BERT's ffn_in and
ffn_out at seq 128 on 32 cores, 16 x 2 each), core c stores a 64 x 192
tile of the GELU output (24 KB) and after the barrier loads all 64 x 3,072
of its row part (393 KB) as ffn_out's A, its own tile among them. ffn_out's
phase is bound by that load on MTE2 (64 B/cycle); the own tile is 384 of
its cycles. The tile's pieces land in UB (the epilogue's landing buffers)
before their stores: kept there, one buffer a piece instead of two by
turns, they go to the A parts' L1 buffers on MTE3 (UB -> L1, 128 B/cycle,
idle in that phase), and MTE2 copies the rest of each part around them.

How, on lowered `cce` before npu-double-buffer (no sets yet, buffers not
placed): an intermediate GM Nz buffer (`memref.view`/`alloc`, P-row-block
views of whole 16 x 16 blocks: `split_cores.row_parts`' layout) whose
every store (`copy_ub_to_gm` of a whole UB alloc, contiguous) is in one
top-level op and whose `copy_gm_to_l1`s into whole L1 allocs (contiguous)
come after it, one chip barrier apart, each run once on every core
(one-trip loops, `scf.if`s true on every core). The views' first offsets
are evaluated core by core; each part copy becomes, per core, the GM
copies of the runs of the part outside the core's stored pieces and the
UB -> L1 copies of the pieces inside it, in one branch of a tree of
`scf.if`s on the block index over the runs of cores that share a plan
(its comparisons before the barrier, where the scalar unit waits anyway;
cores without a piece in the part keep the whole copy). Each piece's
landing buffer becomes a UB alloc of its own at function level, live
until those copies (npu-plan-memory places it). Only when every core has
a piece in the consumer's parts (the phase ends with its slowest core).
The consumer's one-trip loops are inlined after memory planning
(`inline_marked`, which npu-insert-sync runs first). The bytes are the stored ones: the bits are the same.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, scf

from npu import ir as nir
from npu.analysis.pipe_work import trip_count
from npu.ir import block_dim, block_idx_arg, walk
from npu.kernels.cce_build import copy
from npu.passes.base import OWN_TILE_COPIES_ATTR, Pass
from npu.target import Target

STORE, LOAD, TO_L1, BARRIER = ("cce.copy_ub_to_gm", "cce.copy_gm_to_l1", "cce.copy_ub_to_l1",
                               "cce.sync_all")
# the consumer's one-trip loops, inlined once memory is planned (`inline_marked`)
INLINE_ATTR = "npu.inline_after_plan"

# A run of a part: (first block of the part, blocks, the piece it comes
# from or None for GM, the piece's first block)
Run = tuple[int, int, int | None, int]


class OwnTilesPass(Pass):
    name = "npu-own-tiles"
    summary = ("Keep a core's own stored tile of an intermediate in UB across the chip barrier "
               "and copy it into the next matmul's A (lowered cce, several cores)")

    def run(self, module: ir.Operation) -> None:
        for func in nir.functions(module):
            keep_own_tiles(func, self.target)


def keep_own_tiles(func: ir.Operation, target: Target) -> int:
    """Rewrite every such buffer's stores and loads in `func`; returns how many."""
    index, cores = block_idx_arg(func), block_dim(func)
    if index is None or cores <= 1 or not func.regions[0].blocks:
        return 0
    block = func.regions[0].blocks[0]
    blk = block.arguments[index]
    stores: dict = {}
    loads: dict = {}
    for op in walk(func):
        if op.name == STORE:
            stores.setdefault(_root(op.operands[1]), []).append(op)
        elif op.name == LOAD:
            loads.setdefault(_root(op.operands[0]), []).append(op)
    done = 0
    for root, ss in stores.items():
        if root in loads:
            plan = _Plan.make(func, blk, cores, root, ss, loads[root], target)
            if plan is not None:
                plan.rewrite(target)
                done += 1
    return done


def _root(v: ir.Value) -> ir.Value:
    """The buffer a chain of subviews views."""
    while (op := nir.defining_op(v)) is not None and op.name == "memref.subview":
        v = op.operands[0]
    return v




def _once_everywhere(op: ir.Operation, blk: ir.Value, cores: int) -> bool:
    """Whether `op` runs exactly once on every core: only one-trip loops and
    `scf.if`s taken on every core around it."""
    child, node = op, op.parent
    while node is not None and node.name != "func.func":
        if node.name == "scf.for" and trip_count(node) != 1:
            return False
        if node.name == "scf.if":
            then = any(o.operation == child for o in node.regions[0].blocks[0].operations)
            if not then or any(nir.value_on_core(node.operands[0], blk, c, loops=True) != 1
                               for c in range(cores)):
                return False
        elif node.name not in ("scf.for", "scf.if"):
            return False
        child, node = node, node.parent
    return True


def _first_block(view: ir.Value, root: ir.Value, blk: ir.Value, core: int,
                 inner: list[int]) -> int | None:
    """The first block (dim 0) of `root` that `view` starts at on `core`,
    when every view on the way keeps whole blocks of every row (`inner`:
    the root's other dims), else None."""
    first = 0
    while view != root:
        op = nir.defining_op(view)
        offsets = nir.subview_offsets(op)
        if (nir.int_array_attr(op, "static_strides") != [1] * 4
                or nir.int_array_attr(op, "static_sizes")[1:] != inner
                or any(nir.value_on_core(o, blk, core, loops=True) != 0 for o in offsets[1:])):
            return None
        o = nir.value_on_core(offsets[0], blk, core, loops=True)
        if o is None:
            return None
        first += o
        view = op.operands[0]
    return first




def _whole(op: ir.Operation, buf: ir.Value, space: str, inner: list[int], target: Target) -> bool:
    """Whether `buf` (a copy's on-chip side) is a whole identity-layout alloc
    in `space` of whole blocks, copied contiguously."""
    owner = nir.defining_op(buf)
    if owner is None or owner.name != "memref.alloc" or nir.memory_space(buf) != space \
            or nir.memref_shape(buf)[1:] != inner or not _contiguous(buf):
        return False
    nbytes = nir.element_bytes(nir.memref_element(buf))
    for d in nir.memref_shape(buf):
        nbytes *= d
    return (nir.int_attr(op, "src_gap") == 0 and nir.int_attr(op, "dst_gap") == 0
            and nir.int_attr(op, "n_burst") * nir.int_attr(op, "burst_len")
            == target.blocks(nbytes))


def _contiguous(buf: ir.Value) -> bool:
    """Whether `buf`'s layout is the row-major one of its shape at offset 0."""
    strides, offset = nir.memref_type(buf).get_strides_and_offset()
    shape, want = nir.memref_shape(buf), []
    step = 1
    for d in reversed(shape):
        want.insert(0, step)
        step *= d
    return offset == 0 and list(strides) == want


class _Plan:
    """What one buffer's rewrite does (`make` checks, `rewrite` changes)."""

    def __init__(self, func, blk, cores, stores, loads, barrier, plans):
        self.func, self.blk, self.cores = func, blk, cores
        self.stores, self.loads, self.barrier, self.plans = stores, loads, barrier, plans

    @classmethod
    def make(cls, func: ir.Operation, blk: ir.Value, cores: int, root: ir.Value,
             stores: list[ir.Operation], loads: list[ir.Operation], target: Target
             ) -> "_Plan | None":
        owner = nir.defining_op(root)
        if owner is None or owner.name not in ("memref.view", "memref.alloc") \
                or nir.memory_space(root) != "gm" or len(nir.memref_shape(root)) != 4:
            return None
        inner = nir.memref_shape(root)[1:]
        if inner[1:] != [16, 16]:
            return None
        tops = [o.operation for o in func.regions[0].blocks[0].operations]
        s_at = sorted({tops.index(nir.top_level(s)) for s in stores})
        l_at = sorted({tops.index(nir.top_level(x)) for x in loads})
        barriers = [k for k in range(s_at[0], l_at[-1]) if tops[k].name == BARRIER]
        if len(barriers) != 1 or not s_at[-1] < barriers[0] < l_at[0]:
            return None
        if not all(_once_everywhere(o, blk, cores) for o in stores + loads):
            return None
        if not all(_whole(s, s.operands[0], "ub", inner, target) for s in stores) or \
                not all(_whole(x, x.operands[1], "l1", inner, target) for x in loads):
            return None
        pieces = [[_first_block(s.operands[1], root, blk, c, inner) for s in stores]
                  for c in range(cores)]
        parts = [[_first_block(x.operands[0], root, blk, c, inner) for x in loads]
                 for c in range(cores)]
        if any(v is None for row in pieces + parts for v in row):
            return None
        sizes = [nir.memref_shape(s.operands[0])[0] for s in stores]
        # every block stored once over the chip: a core's pieces are the bytes GM keeps
        written = [b for row in pieces for f, n in zip(row, sizes) for b in range(f, f + n)]
        if len(written) != len(set(written)):
            return None
        plans = []  # per load: {core: runs} for the cores whose part holds a piece
        for k, load in enumerate(loads):
            n = nir.memref_shape(load.operands[1])[0]
            plans.append({})
            for c in range(cores):
                runs = _runs(parts[c][k], n, pieces[c], sizes)
                if any(piece is not None for _, _, piece, _ in runs):
                    plans[-1][c] = runs
        if any(not any(c in p for p in plans) for c in range(cores)):
            return None
        if _piece_uses(stores) is None:
            return None
        return cls(func, blk, cores, stores, loads, tops[barriers[0]], plans)

    def rewrite(self, target: Target) -> None:
        for load in self.loads:
            top = nir.top_level(load)
            if top.name == "scf.for" and trip_count(top) == 1 and not top.results:
                top.attributes[INLINE_ATTR] = ir.UnitAttr.get(context=top.context)
        kept = self._keep_pieces()
        for load, plan in zip(self.loads, self.plans):
            if plan:
                self._split(load, plan, kept, target)

    def _keep_pieces(self) -> list[ir.Value]:
        """Each store's landing buffer as a function-level alloc of its own."""
        uses = _piece_uses(self.stores)
        top = nir.top_level(self.stores[0])
        kept = []
        with top.location, ir.InsertionPoint(top):
            for s in self.stores:
                kept.append(nir.alloc(nir.memref_shape(s.operands[0]),
                                      nir.memref_type(s.operands[0]).element_type, "ub"))
        old = {s.operands[0] for s in self.stores}
        for (op, i), h in uses.items():
            op.operands[i] = kept[h]
        for buf in old:
            if not list(buf.uses):
                nir.defining_op(buf).erase()
        return kept

    def _split(self, load: ir.Operation, plan: dict, kept: list[ir.Value],
               target: Target) -> None:
        """`load` as each core's runs (its whole copy where no piece lies in
        it), chosen by a tree of `scf.if`s on the block index over runs of
        cores with one plan (a few scalar steps a core, whichever it is)."""
        n = nir.memref_shape(load.operands[1])[0]
        whole = ((0, n, None, 0),)
        leaves: list[tuple[int, int, tuple]] = []  # (first core, end, runs)
        for c in range(self.cores):
            runs = tuple(plan.get(c, whole))
            if leaves and leaves[-1][2] == runs:
                leaves[-1] = (leaves[-1][0], c + 1, runs)
            else:
                leaves.append((c, c + 1, runs))
        src, dst = load.operands[0], load.operands[1]
        inner = nir.memref_shape(dst)[1:]
        block_bytes = nir.element_bytes(nir.memref_element(dst))
        for d in inner:
            block_bytes *= d
        # the tree's conditions before the barrier, where the scalar unit waits anyway
        below: dict[int, ir.Value] = {}
        with self.barrier.location, ir.InsertionPoint(self.barrier):
            def conds(lo: int, hi: int) -> None:
                if hi - lo > 1:
                    mid = (lo + hi) // 2
                    below[leaves[mid][0]] = arith.CmpIOp(
                        arith.CmpIPredicate.ult, self.blk, nir.index_const(leaves[mid][0])).result
                    conds(lo, mid)
                    conds(mid, hi)
            conds(0, len(leaves))

        def copies(runs) -> None:
            # GM first: MTE2 starts at once, the on-chip copies follow
            for first, blocks, piece, at in sorted(runs, key=lambda r: r[2] is not None):
                to = nir.subview(dst, [first, 0, 0, 0], [blocks] + inner)
                nbytes = target.blocks(blocks * block_bytes)
                if piece is None:
                    copy(LOAD, nir.subview(src, [first, 0, 0, 0], [blocks] + inner), to, 1, nbytes)
                else:
                    copy(TO_L1, nir.subview(kept[piece], [at, 0, 0, 0], [blocks] + inner), to,
                         1, nbytes)

        def tree(lo: int, hi: int) -> scf.IfOp | None:
            if hi - lo == 1:
                copies(leaves[lo][2])
                return None
            mid = (lo + hi) // 2
            op = scf.IfOp(below[leaves[mid][0]], [], has_else=True)
            with ir.InsertionPoint(op.then_block):
                tree(lo, mid)
                scf.YieldOp([])
            with ir.InsertionPoint(op.else_block):
                tree(mid, hi)
                scf.YieldOp([])
            return op

        # one tree: npu-insert-sync sees each plan's copies apart (the plans'
        # L1 ranges overlap across cores; any order of separate GM and
        # on-chip copies would hold one mover behind the other)
        with load.location, ir.InsertionPoint(load):
            root = tree(0, len(leaves))
            if root is not None:  # MTE2's sets pass it (`_PreciseMode._sink`)
                root.operation.attributes[OWN_TILE_COPIES_ATTR] = ir.UnitAttr.get()
        load.erase()


def _runs(first: int, n: int, pieces: list[int], sizes: list[int]) -> list[Run]:
    """A part's blocks [first, first + n) as runs: from the core's stored
    pieces where they lie, from GM between."""
    runs: list[Run] = []
    at = 0
    for h, (f, size) in sorted(enumerate(zip(pieces, sizes)), key=lambda x: x[1][0]):
        lo, hi = max(f, first), min(f + size, first + n)
        if lo >= hi:
            continue
        if lo - first > at:
            runs.append((at, lo - first - at, None, 0))
        runs.append((lo - first, hi - lo, h, lo - f))
        at = hi - first
    if at < n:
        runs.append((at, n - at, None, 0))
    return runs


def _piece_uses(stores: list[ir.Operation]) -> dict | None:
    """{(op, operand index): store index} for every use of the stores'
    landing buffers: a use goes with the first store of its buffer at or
    after it in program order; None when a use follows its buffer's last
    store, or a buffer has a use outside the stores' top-level op."""
    top = nir.top_level(stores[0])
    bufs = {s.operands[0] for s in stores}
    pending: dict = {b: [] for b in bufs}
    found: dict = {}
    count = 0
    for op in walk(top):
        for i, v in enumerate(op.operands):
            if v in bufs:
                pending[v].append((op, i))
                count += 1
                h = next((h for h, s in enumerate(stores) if s == op), None)
                if h is not None:
                    for use in pending[v]:
                        found[use] = h
                    pending[v] = []
    if any(pending.values()):
        return None
    if sum(len(list(b.uses)) for b in bufs) != count:
        return None
    return found


def inline_marked(func: ir.Operation) -> int:
    """Inline the one-trip loops `keep_own_tiles` marked (after memory
    planning, before sync insertion: the same ops in the same order, so the
    plan holds): npu-insert-sync orders a loop as one node, so the first
    sub-step of the consumer's second loop waited for every mad of the
    first (both L0 slots), not for the one that last read its slot."""
    done = 0
    for loop in [o.operation for o in func.regions[0].blocks[0].operations]:
        if loop.name != "scf.for" or INLINE_ATTR not in loop.attributes:
            continue
        body = loop.regions[0].blocks[0]
        body.arguments[0].replace_all_uses_with(loop.operands[0])
        for op in [o.operation for o in body.operations]:
            if op.name != "scf.yield":
                op.move_before(loop)
        loop.erase()
        done += 1
    return done
