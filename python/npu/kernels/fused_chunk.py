"""What one chunk of a one-pass fused row kernel (`npu-lower-fused`) does,
step by step, in which UB buffer each result lives, and so how many rows a
chunk can take.

Steps: most members are one step each; some pairs are one instruction
stream:
  multiply_add  t = x * p, y = t + q as one vmadd in x's buffer (t and x
                dead after): a layernorm's scale and shift;
  square_sum    s = sum(a * b) over the row with a * b used by nothing
                else (f32): the products fold straight into the row
                accumulators with vmul/vmla, no product buffer or pass
                (a layernorm's variance);
  nz_cast       a cast whose result only leaves in Nz: converted by the
                Nz gather itself (`NzStore.store` with `cast`).

Buffers: a lane-wise result overwrites an input it is the last reader of
(same type), so a chain of row ops runs in place. A value that is stored to
GM (or overwritten in place by a step whose result is) never takes over a
buffer the chunk loaded from GM: the next chunk's load into that buffer
would then wait for the store to land (GM latency) instead of for the
vector unit to be done with it.

Sizing: `npu-double-buffer` gives every buffer that a mover touches (loads,
stores, the Nz gathers) a second copy for the next chunk; buffers only the
vector unit touches live over their uses and share bytes. So a chunk needs
`fixed + rows * (2 * streamed + vector)` bytes (`ChunkBytes`), where the
liveness count of the first version of this kernel charged every
intermediate for the whole chunk. Fewer, larger chunks matter: every chunk
ends in a set_flag that holds MTE2 until its loads have landed (the GM
latency) and one that holds MTE3 until its stores have. A group whose
chunk of whole rows does not fit (`whole_rows_fit`) takes the two-pass
scheme of `npu.kernels.online_rows` instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from npu import ir as nir
from npu.costmodel.fusion.rows import GroupModel, Operand, RowOp, accumulator, stores_at_end
from npu.costmodel.vector.nz_limits import cast_gather_limits
from npu.costmodel.vector.recipes import Compute
from npu.costmodel.vector.tiling import VectorGeometry
from npu.kernels.online_rows import online_row_block
from npu.kernels.row_builders import long_row, sum_work_bytes
from npu.target import Target

# Lane-wise computes whose result may overwrite an input of the same type.
IN_PLACE_KINDS = ("binary", "scalar", "unary", "multiply_add", "select", "copy")


@dataclass
class Step:
    """One step of a chunk. `op` is what is computed (for multiply_add the
    vmadd member over (p, q); for square_sum the reduction); `covers` the
    member positions it stands for; `home` the root whose buffer the result
    overwrites (None: a buffer of its own); `x` the multiplicand of
    multiply_add, `factors` the two operands of square_sum."""

    kind: str  # "op" | "multiply_add" | "square_sum" | "nz_cast"
    op: RowOp
    covers: tuple[int, ...]
    home: object = None
    x: Operand | None = None
    factors: tuple[Operand, Operand] | None = None

    @property
    def reads(self) -> list[Operand]:
        extra = [self.x] if self.x is not None else []
        return list(self.factors) if self.factors else self.op.ins + extra


@dataclass
class ChunkBytes:
    """UB bytes of a chunk: `fixed` once; per streamed buffer (`ChunkPlan`
    ids and ("nz", root) for an Nz result's gathered rows) its bytes per
    row, once per set; `vector` per row once (buffers only the vector unit
    touches, by liveness)."""

    fixed: int
    streamed: dict
    vector: int
    row_block: int

    def rows(self, budget: int, copies) -> int:
        """Rows (whole `row_block`s) whose chunk fits `budget` with
        `copies(key)` sets of each streamed buffer."""
        per_row = sum(copies(key) * size for key, size in self.streamed.items()) + self.vector
        rows = (budget - self.fixed) // max(1, per_row)
        return rows - rows % self.row_block


@dataclass
class ChunkPlan:
    steps: list[Step]
    # buffer id of every root with a UB buffer; per id whether a mover loads / stores it
    buffer: dict = field(default_factory=dict)
    loaded: set = field(default_factory=set)
    stored: set = field(default_factory=set)
    operand: dict = field(default_factory=dict)  # id -> the first value in it
    combine: bool = True  # combined steps, in-place results, sums in two levels

    @property
    def streamed(self) -> list:
        """Ids of the buffers a mover touches (each chunk's own, in a slot)."""
        return sorted(self.loaded | self.stored)


def plan(g: GroupModel, deferred: frozenset, target: Target,
         store_over_loads: bool = False, combine: bool = True) -> ChunkPlan:
    """`combine=False` (npu-lower-fused steps=false): one step per member
    (but multiply_add), each result in a buffer of its own, row sums folded."""
    cp = _homes(g, _steps(g, target, combine), deferred, store_over_loads, combine)
    cp.combine = combine
    return cp


def _steps(g: GroupModel, target: Target, combine: bool = True) -> list[Step]:
    members, steps, k = g.members, [], 0
    while k < len(members):
        pair = multiply_add(g, k)
        if pair is not None:
            op, x = pair
            steps.append(Step("multiply_add", op, (k, k + 1), home=x.root, x=x))
            k += 2
            continue
        factors = square_sum(g, k) if combine else None
        if factors is not None:
            steps.append(Step("square_sum", members[k + 1], (k, k + 1), factors=factors))
            k += 2
            continue
        kind = "nz_cast" if combine and nz_cast(g, k, target) else "op"
        steps.append(Step(kind, members[k], (k,)))
        k += 1
    return steps


def _later_reads(members: list[RowOp], k: int) -> set:
    return {i.root for n in members[k:] for i in n.ins}


def multiply_add(g: GroupModel, k: int) -> tuple[RowOp, Operand] | None:
    """Members k, k+1 as one vmadd: t = x * p then y = t + q, where t is
    used by nothing else and x (a full operand) by nothing after; y is
    computed in x's buffer as p * x + q (one rounding where there were
    two). Returns (the vmadd member over (p, q), x) or None."""
    members = g.members
    if k + 1 >= len(members):
        return None
    m, m2 = members[k], members[k + 1]
    if not (m.compute and m2.compute and (m.compute.kind, m.compute.vop) == ("binary", "cce.vmul")
            and (m2.compute.kind, m2.compute.vop) == ("binary", "cce.vadd")):
        return None
    t = m.out.root
    later = _later_reads(members, k + 2)
    if (t in g.leaving or t in g.nz or t in later
            or [i.root for i in m2.ins].count(t) != 1):
        return None
    (q,) = [i for i in m2.ins if i.root != t]
    elems = {o.elem for o in m.ins + m2.ins + [m.out, m2.out]}
    if m2.out.kind != "full" or len(elems) != 1 or elems - {"f16", "f32"}:
        return None
    for x, p in ((m.ins[0], m.ins[1]), (m.ins[1], m.ins[0])):
        if x.kind == "full" and x.root not in later and x.root not in (p.root, q.root):
            return RowOp(m2.op, m2.index, m2.rows, m2.n, [p, q], m2.out,
                         Compute("multiply_add")), x
    return None


def square_sum(g: GroupModel, k: int) -> tuple[Operand, Operand] | None:
    """(a, b) when member k is p = a * b over full f32 rows and member k+1
    the row sum of p, p used by nothing else: the sum folds the products."""
    members = g.members
    if k + 1 >= len(members):
        return None
    m, r = members[k], members[k + 1]
    if not (m.compute and (m.compute.kind, m.compute.vop) == ("binary", "cce.vmul")
            and r.compute is None and r.op.name == "ascend.reduce_sum"):
        return None
    p = m.out.root
    if (r.ins[0].root != p or p in g.leaving or p in g.nz or p in _later_reads(members, k + 2)
            or m.out.kind != "full" or any(i.kind != "full" for i in m.ins)
            or {o.elem for o in m.ins + [m.out]} != {"f32"} or accumulator(r) != "f32"):
        return None
    return m.ins[0], m.ins[1]


def nz_cast(g: GroupModel, k: int, target: Target) -> bool:
    """Member k is a cast whose result only leaves in Nz
    (`npu.costmodel.vector.nz_limits.cast_gather_limits`): the Nz gather
    converts as it goes, with no row-major result."""
    m = g.members[k]
    return (m.compute is not None and m.compute.kind == "cast" and len(m.compute.chain) == 1
            and m.out.root in g.nz and m.out.root not in g.leaving and m.ins[0].kind == "full"
            and m.out.root not in _later_reads(g.members, k + 1)
            and cast_gather_limits(target, g.n or 1, m.ins[0].es, m.out.es))


def _homes(g: GroupModel, steps: list[Step], deferred: frozenset,
           store_over_loads: bool = False, in_place: bool = True) -> ChunkPlan:
    """Buffer ids per root: loaded operands first, then each result in a
    buffer of its own or in place of an input (see the module docstring)."""
    last: dict = {}
    for s, step in enumerate(steps):
        for i in step.reads:
            last[i.root] = s
    # Results stored in the buffer they are computed in: leaving ones, and
    # the multiplicands of multiply_adds whose results are (written in place).
    stores_in_place = {root for root in g.leaving}
    for step in reversed(steps):
        if step.kind == "multiply_add" and step.op.out.root in stores_in_place:
            stores_in_place.add(step.x.root)
    cp = ChunkPlan(steps)
    ids = iter(range(1 << 30))
    for o in g.loaded.values():
        if o.kind in ("full", "col"):
            cp.buffer[o.root] = next(ids)
            cp.loaded.add(cp.buffer[o.root])
            cp.operand[cp.buffer[o.root]] = o
    for s, step in enumerate(steps):
        out = step.op.out
        if step.kind == "nz_cast":
            continue
        if step.kind == "multiply_add":
            home = cp.buffer[step.x.root]
        else:
            home = None
            candidate = in_place_input(step, s, last, g, deferred) if in_place else None
            if candidate is not None:
                b = cp.buffer[candidate.root]
                if ((store_over_loads or not (out.root in stores_in_place and b in cp.loaded))
                        and b not in cp.stored):
                    home = b
                    step.home = candidate.root
        if home is None:
            home = next(ids)
            cp.operand[home] = out
        cp.buffer[out.root] = home
        if out.root in g.leaving:
            cp.stored.add(cp.buffer[out.root])
    return cp


def in_place_input(step: Step, s: int, last: dict, g: GroupModel,
                   deferred: frozenset) -> Operand | None:
    """The full input of an "op" step whose buffer its result may take: a
    lane-wise compute, same type, the step is its last reader, and nothing
    still reads the input's buffer (not a result that leaves: its store
    reads it)."""
    m = step.op
    if (step.kind != "op" or m.compute is None or m.out.kind != "full"
            or m.compute.kind not in IN_PLACE_KINDS):
        return None
    return next((i for i in m.ins if i.kind == "full" and i.elem == m.out.elem
                 and last.get(i.root) == s and i.root not in g.leaving
                 and i.root not in deferred), None)


def chunk_bytes(g: GroupModel, cp: ChunkPlan, target: Target, row_block: int,
                n: int | None = None) -> ChunkBytes:
    """`ChunkBytes` of plan `cp`: per buffer id its bytes per row; streamed
    when a mover touches it (or an Nz gather buffer), else counted by
    liveness over the steps with each step's transient buffers. `n`: the
    UB row's length when not the group's (a row with its tail block)."""
    granule = target.granule("ub")
    n = n or g.n or 1

    def row_bytes(o: Operand) -> int:
        return n * o.es if o.kind == "full" else o.es

    size: dict = {}
    first: dict = {}
    last: dict = {}
    for o in g.loaded.values():
        if o.root in cp.buffer:
            size[cp.buffer[o.root]] = row_bytes(o)
    for s, step in enumerate(cp.steps):
        for i in step.reads:
            b = cp.buffer.get(i.root)
            if b is not None:
                first.setdefault(b, s)
                last[b] = s
        b = cp.buffer.get(step.op.out.root)
        if b is not None:
            size[b] = max(size.get(b, 0), row_bytes(step.op.out))
            first.setdefault(b, s)
            last[b] = max(last.get(b, s), s)
    streamed = {b: size[b] for b in cp.streamed}
    streamed.update({("nz", root): n * nir.element_bytes(nir.memref_element(nz))
                     for root, nz in g.nz.items()})
    lanes = VectorGeometry.for_types(target, [4]).lanes
    peak = products = 0
    for s, step in enumerate(cp.steps):
        live = sum(size[b] for b in size if b not in cp.loaded and b not in cp.stored
                   and first.get(b, -1) <= s <= last.get(b, -1))
        m = step.op
        transient = 0
        if m.compute is None:  # a row reduction's accumulators (and f16 rows widened)
            aes = 4 if accumulator(m) == "f32" else m.ins[0].es
            long = long_row(n, aes, target)
            transient += sum_work_bytes(n, lanes, 4, granule, step.kind == "square_sum",
                                        cp.combine, long)
            if long and step.kind == "square_sum":
                products = max(products, n * 4)  # one row of products (segment_partials)
            transient += n * 4 if m.ins[0].elem != accumulator(m) else 0
        else:
            span = n if m.out.kind == "full" else 1
            transient += sum(span * nir.element_bytes(t) for t in m.compute.temps)
            if m.out.kind == "full":
                transient += granule * sum(1 for i in m.ins if i.kind == "col")
        peak = max(peak, live + transient)
    fixed = products
    for o in g.loaded.values():
        if o.kind == "row":
            fixed += n * o.es
        elif o.kind == "scalar":
            fixed += 3 * granule
    fixed += target.vector_block_bytes * sum(len(m.compute.constants) for m in g.members
                                             if m.compute is not None)
    return ChunkBytes(fixed, streamed, peak, row_block)


def one_set(g: GroupModel, target: Target) -> ChunkBytes:
    """The group's chunk bytes as the one-pass kernel lays them out by
    default (results in place, `fusion.stores_at_end`), per row of whole
    `online_row_block`s: what `npu-fuse` and the one-pass / two-pass choice
    size a chunk by with one set of its buffers."""
    return chunk_bytes(g, plan(g, stores_at_end(g), target), target, online_row_block(g, target))


def whole_rows_fit(g: GroupModel, target: Target, budget: int) -> bool:
    """The one-pass kernel's condition: a chunk of whole rows (`row_block`
    of them, `online_row_block`) fits `budget` with one set of its buffers
    as this module lays them out (results in place). Rows past the
    vector repeat stride qualify: elementwise ops run along each row and
    reductions reduce each row's segments first (`long_row`)."""
    cb = one_set(g, target)
    return cb.rows(budget, lambda key: 1) >= cb.row_block


def per_row(cb: ChunkBytes) -> int:
    """Bytes per row of a chunk with one set of its streamed buffers."""
    return sum(cb.streamed.values()) + cb.vector


# UB share the sets of a resident row's buffers may take (`resident_fit`): a
# one-row chunk's few small buffers beside its row leave the memory planner
# little to place (npu-lower halves the share and so takes the two-pass
# kernel should it overflow).
RESIDENT_SHARE = 0.99
def resident_plan(g: GroupModel, target: Target) -> ChunkPlan:
    """The plan of a resident row's chunk: results in place, stored from
    the buffers they were loaded into (one streamed buffer per chain)."""
    return plan(g, stores_at_end(g), target, store_over_loads=True)


def long_rows(g: GroupModel, target: Target) -> bool:
    """Rows whose pitch exceeds the vector repeat stride in some operand:
    the unfused reductions and broadcasts take rows that are not whole
    blocks only up to it (`npu-lower-reduce`), so such rows are fused
    resident (`resident_fits`) even when a chunk of whole rows would fit."""
    sizes = [o.es for m in g.members for o in m.ins + [m.out] if o.kind in ("full", "row")]
    return bool(sizes) and (g.n or 1) * max(sizes) > target.vector_max_stride * target.granule("ub")
