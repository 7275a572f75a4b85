"""Fused row groups whose rows do not fit UB: the two-pass (online) scheme
that `npu-fuse` chooses and `npu-lower-fused` emits.

Each chunk of rows is processed in column *pieces* of `width`
columns (the last piece shorter), twice:
  pass 1  streams the pieces, computing the full-level ops the reductions
          need and folding each piece's reductions into per-row
          accumulators;
  pass 2  streams the pieces again with the final per-row values, computing
          the ops whose results leave the group and storing them.
Between the passes the col-level ops (mean = sum / n, rsqrt(var + eps))
run once per chunk. GM traffic: the inputs of pass 1 and of pass 2 once
each, the outputs once: 2 reads + 1 write per element for softmax and
layernorm.

A reduction is foldable across pieces when its input depends on no per-row
value computed by the group (*plain*: sum, max, min of partials), or in two
recognised recurrences where it depends on an earlier reduction:
  softmax   sum(exp(X - max(X))): the running max m and the running sum s,
            rescaled when m grows: s = s * exp(m_old - m_new) + sum(exp(X - m_new));
  variance  sum((X - mean)^2) with mean = sum(X) * c: squares around a fixed
            shift K (the first piece's mean), Q = sum((X - K)^2), and at the
            end sum((X - mean)^2) = Q - (S - n K)^2 / n. K is within a few
            standard errors of the mean, so the correction is small and the
            cancellation of the textbook sum-of-squares form is avoided (the
            error stays at that of the one-pass kernel's, see the tests).
Anything else (a reduction over a value that depends on another reduction in
another way) has no online form: the group is not formed, and the remark
says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from npu.costmodel.fusion import rows as fusion
from npu.costmodel.fusion.rows import GroupModel, RowOp
from npu.target import Target

# Piece widths are multiples of this many columns (whole f16 and f32 repeats).
WIDTH_STEP = 128


@dataclass
class OnlineReduction:
    member: RowOp
    mode: str                  # "plain" | "softmax" | "variance"
    base: RowOp | None = None  # the reduction it depends on (softmax, variance)
    shift_root: object = None  # the col value bound to the running max / shift in pass 1


@dataclass
class OnlinePlan:
    width: int
    rows: int = 0  # rows of one chunk
    reductions: dict = field(default_factory=dict)   # op -> OnlineReduction
    pass1: list = field(default_factory=list)        # full ops and reductions, member order
    early_cols: list = field(default_factory=list)   # col ops before pass 1
    late_cols: list = field(default_factory=list)    # col ops after pass 1
    pass2: list = field(default_factory=list)        # full ops whose results leave (or feed one)

    def describe(self) -> str:
        modes = sorted({r.mode for r in self.reductions.values() if r.mode != "plain"})
        how = {"softmax": "online softmax (running max, rescaled sum)",
               "variance": "variance around the first piece's mean"}
        extra = "".join(f"; {how[m]}" for m in modes)
        return f"two-pass online over pieces of {self.width} columns{extra}"


def plan(g: GroupModel, target: Target, budget: int) -> OnlinePlan | str:
    """The two-pass plan of a group, or why it has none."""
    if all(m.compute is not None for m in g.members):
        # Without a reduction the rows are only a view: each op alone
        # streams the tensor flat in long chunks, pieces of rows would not.
        return "no reduction needs whole rows, so there is no two-pass form"
    producer = {m.out.root: m for m in g.members}
    derived: set = set()  # col roots whose value comes from a member reduction
    for m in g.members:
        if m.compute is None or (m.out.kind == "col" and any(i.root in derived for i in m.ins)):
            derived.add(m.out.root)

    def closure(root) -> list[RowOp]:
        """The full-level members computing `root` (not through col values)."""
        seen: dict = {}
        pending = [root]
        while pending:
            m = producer.get(pending.pop())
            if m is None or m.compute is None or m.out.kind != "full" or m.op in seen:
                continue
            seen[m.op] = m
            pending.extend(i.root for i in m.ins if i.kind == "full")
        return list(seen.values())

    p = OnlinePlan(width=0)
    pass1: dict = {}
    for m in g.members:
        if m.compute is not None:
            continue
        chain = closure(m.ins[0].root)
        deps = {i.root for c in chain for i in c.ins if i.kind == "col" and i.root in derived}
        if not deps:
            p.reductions[m.op] = OnlineReduction(m, "plain")
        else:
            r = _recurrence(m, deps, producer, p.reductions)
            if isinstance(r, str):
                return r
            p.reductions[m.op] = r
        for c in chain + [m]:
            pass1[c.op] = c
    p.pass1 = [m for m in g.members if m.op in pass1]
    for m in g.members:
        if m.compute is not None and m.out.kind == "col":
            (p.late_cols if any(i.root in derived for i in m.ins) else p.early_cols).append(m)
    needed: dict = {}
    for m in g.members:
        if m.compute is not None and m.out.kind == "full" and m.out.root in g.leaving:
            needed.update((c.op, c) for c in closure(m.out.root))
    p.pass2 = [m for m in g.members if m.op in needed]
    shape = piece_shape(g, p, target, budget)
    if isinstance(shape, str):
        return shape
    p.width, p.rows = shape
    return p


def _recurrence(m: RowOp, deps: set, producer: dict, known: dict) -> OnlineReduction | str:
    """`m` as the softmax or variance recurrence over an earlier reduction."""
    no = (f"'{m.short}' reduces a value that depends on another reduction of the group in a "
          "way with no online form (only softmax's sum(exp(x - max)) and variance's "
          "sum((x - mean)^2))")
    if m.op.name != "ascend.reduce_sum" or len(deps) != 1:
        return no
    (c,) = deps
    step = producer.get(m.ins[0].root)
    if step is None:
        return no
    if step.op.name == "ascend.exp":
        sub = producer.get(step.ins[0].root)
        base = producer.get(c)
        if (sub is not None and sub.op.name == "ascend.sub" and sub.ins[1].root == c
                and sub.ins[0].kind == "full" and base is not None
                and base.op.name == "ascend.reduce_max"
                and base.ins[0].root == sub.ins[0].root and _plain(base, known)):
            return OnlineReduction(m, "softmax", base, c)
        return no
    if step.op.name == "ascend.mul" and step.ins[0].root == step.ins[1].root:
        sub = producer.get(step.ins[0].root)
        scale = producer.get(c)
        base = producer.get(scale.ins[0].root) if scale is not None else None
        if (sub is not None and sub.op.name == "ascend.sub" and sub.ins[1].root == c
                and sub.ins[0].kind == "full" and scale is not None
                and scale.op.name == "ascend.muls"
                and base is not None and base.op.name == "ascend.reduce_sum"
                and base.ins[0].root == sub.ins[0].root and _plain(base, known)):
            return OnlineReduction(m, "variance", base, c)
    return no


def _plain(m: RowOp, known: dict) -> bool:
    r = known.get(m.op)
    return r is not None and r.mode == "plain"


def piece_shape(g: GroupModel, p: OnlinePlan, target: Target,
                budget: int) -> tuple[int, int] | str:
    """(width, rows) of one chunk's pieces within `budget`: widths are
    multiples of WIDTH_STEP within the vector repeat stride. Widths of whole
    8-repeat groups first (a row's partial reductions then fill whole
    blocks: two-instruction reductions in npu-lower-fused), then the widest
    that holds a row block. Not the fewest transfers over all the rows: the
    width would then depend on the row count, and a core's share of a split
    group would sum its pieces otherwise than one core does (other bits);
    the widest pieces are also the fewest for a core's few rows."""
    n = g.n or 1
    widest = min(target.vector_max_stride * target.granule("ub") // 4, n)
    block = online_row_block(g, target)
    all_rows = -(-g.rows // block) * block
    whole_groups = 8 * target.lanes(4)
    fitting = []  # (width, rows), the widest first
    for width in range(widest - widest % WIDTH_STEP, WIDTH_STEP - 1, -WIDTH_STEP):
        rows = min(chunk_rows(g, p, target, budget, width), all_rows)
        if rows >= block:
            fitting.append((width, rows))
    if not fitting:
        return (f"not even a piece of {WIDTH_STEP} columns of {block} row(s) fits the UB "
                f"budget {budget}")
    return next((f for f in fitting if f[0] % whole_groups == 0), fitting[0])


def chunk_rows(g: GroupModel, p: OnlinePlan, target: Target, budget: int, width: int) -> int:
    """Rows (whole `online_row_block`s) of one chunk of pieces `width` wide
    within `budget`, by the larger of the two passes' footprints."""
    row_block = online_row_block(g, target)
    reductions = sum(1 for m in g.members if m.compute is None)
    per_row = 4 * 4 * reductions + 3 * 4  # accumulators, partials, shift
    per_row += 4 * (len(p.early_cols) + len(p.late_cols))
    per_row += sum(o.es for o in g.loaded.values() if o.kind == "col")  # loaded per chunk
    fixed = 0
    worst = 0
    for members in (p.pass1, p.pass2):
        rows_bytes = {i.root: i for m in members for i in m.ins if i.kind == "row"}
        fixed = max(fixed, sum(width * o.es for o in rows_bytes.values()))
        worst = max(worst, pass_row_bytes(members, g.leaving, width, target))
    rows = (budget - fixed) // (per_row + worst)
    return rows - rows % row_block


def online_row_block(g: GroupModel, target: Target) -> int:
    """Rows of a chunk come in multiples of this: whole 32-byte blocks of
    the col values that move between GM and UB (per-row values that stay
    in UB take any count)."""
    moving = [o.es for o in g.loaded.values() if o.kind == "col"]
    moving += [m.out.es for m in g.members if m.out.kind == "col" and m.out.root in g.leaving]
    return target.granule("ub") // min(moving) if moving else 1


def in_place_source(m: RowOp, k: int, last_use: dict, leaving: set):
    """The full input of member `m` (at `k` in its pass) whose buffer its
    result can overwrite: same type, and `m` is its last use in the pass.
    A result stored to GM gets its own buffer: the next piece's load into
    the input's buffer then need not wait for the store."""
    if m.compute is None or m.out.kind != "full" or m.out.root in leaving:
        return None
    return next((i for i in m.ins if i.kind == "full" and i.elem == m.out.elem
                 and last_use.get(i.root) == k), None)


def last_uses(members: list[RowOp]) -> dict:
    last: dict = {}
    for k, m in enumerate(members):
        for i in m.ins:
            last[i.root] = k
    return last


def pass_row_bytes(members: list[RowOp], leaving: set, width: int, target: Target) -> int:
    """Peak UB bytes per row of one pass over a piece: its live piece buffers
    in member order (results written in place as `in_place_source` allows)
    plus each op's transient buffers."""
    from npu import ir as nir
    from npu.costmodel.vector.tiling import VectorGeometry

    granule = target.granule("ub")
    lanes = VectorGeometry.for_types(target, [4]).lanes
    last = last_uses(members)
    live: dict = {}
    peak = 0
    for k, m in enumerate(members):
        for i in m.ins:
            if i.kind == "full" and i.root not in live:
                live[i.root] = width * i.es
        if m.compute is None:
            transient = lanes * 4 + (width * 4 if m.ins[0].elem != "f32" else 0)
        else:
            transient = sum(width * nir.element_bytes(t) for t in m.compute.temps)
            transient += granule * sum(1 for i in m.ins if i.kind == "col")
            source = in_place_source(m, k, last, leaving)
            if source is not None:
                live.pop(source.root)
            live[m.out.root] = width * m.out.es
        peak = max(peak, sum(live.values()) + transient)
        for root in [r for r in live if last.get(r, -1) <= k]:
            del live[root]
    return peak


def gm_bytes(g: GroupModel, p: OnlinePlan, target: Target) -> int:
    """GM bytes of the two-pass kernel: the full inputs of each pass once,
    row operands once per chunk and pass, col/scalar inputs and outputs once."""
    granule = target.granule("ub")
    chunks = -(-g.rows // p.rows)
    total = sum(fusion.nbytes(r) for r in g.leaving)
    for members in (p.pass1, p.pass2):
        seen = set()
        for m in members:
            for i in m.ins:
                if i.root in g.loaded and i.root not in seen and i.kind in ("full", "row"):
                    seen.add(i.root)
                    total += fusion.nbytes(i.value) * (chunks if i.kind == "row" else 1)
    for o in g.loaded.values():
        if o.kind == "col":
            total += fusion.nbytes(o.value)
        elif o.kind == "scalar":
            total += max(granule, fusion.nbytes(o.value))
    return total
