"""The Q, K, V projection an attention kernel computes itself, head by head
(`npu-fuse-attention-projection`): what is absorbed, the on-chip buffers it
adds to the attention's (`footprint`), the configurations tried and the
cost model that picks one or refuses (`choose`).

What is absorbed: the `npu.epilogue` group of `npu-fuse` whose matmul is
X (M x N, f16 Nz) . W (N x 3HD, Nz) and whose row-major stores write the
attention's three f16 `[S, H*D]` sources (Q, K, V; `npu-fuse-horizontal`'s
siblings), computed in f16 (`npu.epilogue compute = "f16"`) with operands
that are broadcast rows (a bias) or none. Per head h the kernel computes
the 3 x D/16 column blocks of C that are head h's Q, K and V columns:
head h's columns of W are whole column blocks of its Nz form (a run of
D/16 per sibling), so W needs no permutation.

A job is one C piece: `rows` row blocks (a row tile of X) x `cols` column
blocks of one of Q, K, V. Its mads accumulate over the reduction in L0
sub-steps of W chunks streamed from GM; its drain moves the piece L0C ->
UB (rounded to f16 by the move), applies the epilogue's members and copies
it UB -> L1 into the head's tile (the Nz order of a C piece is the Nz
order of the attention's Q, K and V tiles). X is either resident in L1
for all heads (copied once) or streamed per head as one row strip per row
tile (re-read once a head); W's columns of a job are read once per job,
so once per row tile and head.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir

from npu import epilogue, fusion
from npu import epilogue_precision as precision
from npu import ir as nir
from npu.attention import Attention
from npu.target import Target

PROJECTION_ATTR = "npu.projection"  # the plan, beside `npu.attention` on its region
FRACTAL_F16, FRACTAL_F32 = 512, 1024
TENSORS = ("Q", "K", "V")


@dataclass
class Projection:
    """The matmul epilogue group computing Q, K and V, as the kernel takes it."""

    region: ir.Operation          # the `npu.epilogue` scf.execute_region
    matmul: ir.Operation
    firsts: tuple[int, int, int]  # first column block of Q's, K's, V's columns in C
    m1: int                       # row blocks of X (and C)
    n1: int                       # reduction blocks
    per_fractal: int              # UB bytes per C fractal of the drained piece
    resident_ub: int              # UB bytes the broadcast rows hold for the whole kernel
    vector_cycles: int            # the members' vector work over all of C
    c_blocks: int                 # column blocks of C

    @property
    def x(self) -> ir.Value:
        return self.matmul.operands[0]

    @property
    def w(self) -> ir.Value:
        return self.matmul.operands[1]


@dataclass(frozen=True)
class ProjPlan:
    """How the kernel computes the projection: X resident in L1 (all of it)
    or streamed per head in row strips of `rows` blocks; C pieces of
    `rows` x `cols` blocks in `c_slots` L0C buffers taken by turns; L0
    sub-steps of `sub` reduction blocks; W chunks of `chunk` reduction
    blocks per GM -> L1 copy, in `w_slots` L1 buffers taken by turns (MTE2
    runs that many chunks ahead of the cube: its weight traffic is about
    the cube's work, so any stall it cannot absorb is lost); the attention's
    scores in `scores_slots` L0C slots. One frees room for the pieces, but
    then a step's Q.K^T waits for the previous softmax to move its scores
    out, and npu-insert-sync sets that flag after the softmax's run of
    vector work: only with one tile a head, where a head's projection mads
    sit between the two in the cube's queue, does that cost nothing."""

    x_resident: bool
    rows: int
    cols: int
    c_slots: int
    sub: int
    chunk: int
    scores_slots: int = 2
    w_slots: int = 2

    def row_tiles(self, m1: int) -> int:
        return -(-m1 // self.rows)

    def jobs_per_head(self, m1: int, d1: int) -> int:
        return self.row_tiles(m1) * 3 * (d1 // self.cols)

    def as_attr(self) -> dict:
        return {"x_resident": self.x_resident, "rows": self.rows, "cols": self.cols,
                "c_slots": self.c_slots, "sub": self.sub, "chunk": self.chunk,
                "scores_slots": self.scores_slots, "w_slots": self.w_slots}

    @staticmethod
    def from_attr(values: dict) -> "ProjPlan":
        return ProjPlan(bool(values["x_resident"]), int(values["rows"]), int(values["cols"]),
                        int(values["c_slots"]), int(values["sub"]), int(values["chunk"]),
                        int(values["scores_slots"]), int(values["w_slots"]))


def find(a: Attention, region_of: dict, users: dict, target: Target) -> Projection | str:
    """The `npu.epilogue` group that writes the attention's Q, K and V rows
    and nothing else that leaves it, or why there is none. `region_of`: a
    root tensor -> the top-level group writing it; `users`: root -> the
    ops (at any depth) using it."""
    if a.sources is None or not a.interleaved:
        return ("Q, K and V are not read as the rows of [S, H*D] projections (no head "
                "transposes among the members)")
    if any(nir.memref_element(s) != "f16" for s in a.sources):
        return "Q, K and V are f32 rows (cast on chip), not the f16 rows of an epilogue"
    roots = [nir.view_root(s) for s in a.sources]
    regions = {region_of.get(r) for r in roots}
    region = regions.pop() if len(regions) == 1 else None
    if region is None or epilogue.EPILOGUE_ATTR not in region.attributes:
        return "Q, K and V are not all written by one matmul epilogue (npu.epilogue group)"
    body = [o.operation for o in region.regions[0].blocks[0].operations]
    matmul = next((o for o in body if o.name in epilogue.MATMULS), None)
    if matmul is None or matmul.name != "ascend.matmul":
        return "the group writing Q, K and V is not a (non-batched) matmul's epilogue"
    attrs = nir.dict_attr_items(region.attributes[epilogue.EPILOGUE_ATTR])
    if attrs.get("compute") != precision.COMPUTE_F16 or precision.HEAD_ATTR in attrs:
        return ("the projection's epilogue is not computed in f16 (its drained piece would not "
                "be the f16 tile the attention reads)")
    for r in roots:
        outside = [u for u in users.get(r, ()) if not _inside(u, region) and not _inside(u, a)]
        if outside or nir.defining_op(r) is None or nir.defining_op(r).name != "memref.alloc":
            return "Q, K or V is used besides the attention (it would have to reach GM)"
    frac = target.fractal
    stores = [o for o in body if o.name == "ascend.defractalize"]
    cv = matmul.operands[-1]
    members = [o for o in body if o.name.startswith("ascend.") and o is not matmul
               and o not in stores]
    made = {nir.view_root(cv)} | {nir.view_root(o.operands[-1]) for o in members}
    firsts: dict = {}
    for s in stores:
        src, dst = s.operands
        dst_root = nir.view_root(dst)
        if dst_root not in roots or nir.view_root(src) not in made:
            return "the projection's epilogue stores a tensor besides Q, K and V"
        tensor = next((o.operands[-1] for o in [matmul] + members
                       if nir.view_root(o.operands[-1]) == nir.view_root(src)), None)
        run = epilogue.column_blocks(src, tensor) if tensor is not None else None
        if run is None or run[1] * frac != a.heads * a.head_dim \
                or nir.memref_shape(dst) != [a.seq, a.heads * a.head_dim]:
            return "a row-major store of the projection is not one of Q, K, V as [S, H*D]"
        firsts[roots.index(dst_root)] = run[0]
    if sorted(firsts) != [0, 1, 2]:
        return "the projection's epilogue does not store each of Q, K, V once"
    for o in members:
        for v in o.operands[:-1]:
            r = nir.view_root(v)
            if r not in made and not epilogue.row_broadcast(v):
                return ("an epilogue member reads a tensor per piece (only broadcast rows, a "
                        "bias, are kept on chip for all heads)")
        if nir.view_root(o.operands[-1]) in roots:
            return "an epilogue member writes Q, K or V besides the row-major stores"
    x, w = matmul.operands[0], matmul.operands[1]
    xs, ws = nir.memref_shape(x), nir.memref_shape(w)
    m1, n1 = xs[1], xs[0]
    if m1 != a.seq_blocks:
        return f"the projection's rows ({m1 * frac}) are not the attention's seq ({a.seq})"
    for what, v in (("X", x), ("W", w)):
        if nir.memory_space(v) != "gm" or not nir.is_contiguous(v):
            return f"{what} is not a contiguous GM tensor"
    model = _model(matmul, members, target)
    return Projection(region, matmul, (firsts[0], firsts[1], firsts[2]), m1, n1, *model,
                      c_blocks=ws[0])


def _inside(op: ir.Operation, owner) -> bool:
    """Whether `op` is nested in `owner` (an op, or an Attention's members)."""
    if isinstance(owner, Attention):
        return op in owner.members
    while op is not None:
        if op == owner:
            return True
        op = op.parent
    return False


def _model(matmul: ir.Operation, members: list[ir.Operation], target: Target
           ) -> tuple[int, int, int]:
    """(UB bytes per C fractal of a drained piece, UB bytes held for the
    whole kernel, vector cycles over all of C) of the members computed in
    f16 on the piece the L0C -> UB move rounded (`npu.epilogue.plan`)."""
    index = {m: k for k, m in enumerate(members)}
    rows = [epilogue.grouped_member(m, index[m], target) for m in members]
    cv = matmul.operands[-1]
    c = fusion.Operand(cv, epilogue.tensor_key(cv), "full", nir.memref_element(cv))
    c16, run = precision.in_f16(c, rows, target)
    e = epilogue.model(matmul, c16, run, lambda _root: False)
    e.broadcast = {r for r in e.loaded if epilogue.row_broadcast(e.loaded[r].value)}
    plan = epilogue.plan(e, target, "f16")
    held = sum(nir.memref_shape(e.loaded[r].value)[-4] * target.fractal
               * (nir.element_bytes(nir.memref_element(e.loaded[r].value)) + e.loaded[r].es)
               for r in e.broadcast)
    held += sum(len(m.compute.constants) for m in run) * target.vector_block_bytes
    return plan.per_fractal, held, epilogue.vector_cycles(run, target)


def footprint(a: Attention, qb: int, kb: int, p: Projection, pp: ProjPlan,
              attention: dict[str, int]) -> dict[str, int]:
    """Bytes per on-chip buffer of the attention (`attention`, from
    `npu.attention_plan.footprint`) with the projection's buffers: X in L1
    (all of it, or two row strips), two W chunks, the heads' Q, K, V tiles
    in two slots (head h's are read while head h+1's are made: with
    several tiles a head they replace the attention's own Q, K, V tiles);
    two L0A / L0B sub-step slots, which the kernel scopes apart from the
    attention's L0A / L0B tiles (the larger counts; head_tiles keeps Q's
    L0A tile for the whole kernel); the C pieces in L0C beside the
    attention's scores (in `scores_slots`) and P.V slots; in UB two landing
    pieces and the broadcast rows."""
    s1, d1 = a.seq_blocks, a.d_blocks
    whole = qb >= s1 and kb >= s1
    x = p.n1 * (p.m1 if pp.x_resident else 2 * pp.rows) * FRACTAL_F16
    w = pp.w_slots * pp.cols * pp.chunk * FRACTAL_F16
    tiles = 2 * (3 * d1 + 1) * s1 * FRACTAL_F16
    if whole:
        l1 = attention["l1"] + x + w
    else:
        l1 = 2 * kb * qb * FRACTAL_F16 + tiles + x + w
    slot_a, slot_b = 2 * pp.rows * pp.sub * FRACTAL_F16, 2 * pp.sub * pp.cols * FRACTAL_F16
    q_tile = d1 * qb * FRACTAL_F16
    l0a = (max(q_tile, kb * qb * FRACTAL_F16, slot_a) if whole or s1 % qb
           else q_tile + max(kb * qb * FRACTAL_F16, slot_a))
    l0b = max(attention["l0b"], slot_b)
    l0c = (pp.scores_slots * kb + 2 * (d1 + 1)) * qb * FRACTAL_F32 \
        + pp.c_slots * pp.rows * pp.cols * FRACTAL_F32
    ub = attention["ub"] + 2 * pp.rows * pp.cols * p.per_fractal + p.resident_ub
    return {"ub": ub, "l0a": l0a, "l0b": l0b, "l0c": l0c, "l1": l1}


def candidates(a: Attention, p: Projection) -> list[list[ProjPlan]]:
    """The configurations `choose` weighs, in groups that differ only in
    the L0 sub-step (largest first: `choose` takes the largest that fits):
    X resident or in strips of 8 or 4 row blocks, pieces of one of Q, K, V
    (or half of one), one to three L0C slots, one or two scores slots, W
    chunks for two heads, one head or a few; W chunks of the largest
    divisor of the reduction up to 32 blocks that the sub-step divides."""
    d1, n1, m1 = a.d_blocks, p.n1, p.m1
    divisors = [d for d in range(n1, 0, -1) if n1 % d == 0]
    subs = [s for s in (16, 8, 6, 4, 3, 2, 1) if n1 % s == 0]
    groups = []
    for resident in (True, False):
        for rows in sorted({m1} if resident else {min(m1, 8), min(m1, 4)}, reverse=True):
            for cols in sorted({d1, d1 // 2} if d1 % 2 == 0 else {d1}, reverse=True):
                for c_slots in (3, 2, 1):
                    for scores_slots in (2, 1):
                        for depth in ("2 heads", "1 head", 8, 4, 2):
                            group = []
                            for sub in subs:
                                chunk = next((c for c in divisors if c % sub == 0 and c <= 32),
                                             sub)
                                per_head = n1 // chunk * 3 * (d1 // cols) * -(-m1 // rows)
                                # At least a job's chunks (`npu-lower-attention` copies a
                                # job's chunks right before its mads, each to its own slot).
                                w_slots = max(n1 // chunk, {"2 heads": 2 * per_head,
                                                            "1 head": per_head}.get(depth, depth))
                                group.append(ProjPlan(resident, rows, cols, c_slots, sub, chunk,
                                                      scores_slots, w_slots))
                            groups.append(group)
    return groups


def tiles_to_try(a: Attention) -> list[tuple[int, int]]:
    """Attention tiles `choose` tries: query tiles of up to 8 blocks (all
    rows, 8, 4, 2, 1) and key tiles giving 1 to 8 tiles a row."""
    s1 = a.seq_blocks
    qbs = sorted({min(s1, q) for q in (8, 4, 2, 1)}, reverse=True)
    kbs = sorted({-(-s1 // n) for n in range(1, 9)}, reverse=True)
    return [(qb, kb) for qb in qbs for kb in kbs]


def attention_vector_cycles(a: Attention, qb: int, kb: int, target: Target) -> float:
    """The attention's vector work (V pipe, L0C -> UB moves included) over
    all heads at tile qb x kb: per (query tile, key tile) the scores moved
    from L0C, the row max folds, the scaled shift, P's cast and exp in f16;
    per key tile after the first the context's rescaling; per query tile
    its P.V moves and the normalisation. An estimate from the target's
    rates (the schedule's stalls are not in it)."""
    s1, d1 = a.seq_blocks, a.d_blocks
    move = target.path("l0c_to_ub").bytes_per_cycle
    simple = target.vector_cycles("simple")
    exp = target.vector_cycles("transcendental")
    n_keys, n_queries = -(-s1 // kb), -(-s1 // qb)
    total = 0.0
    for y in range(n_keys):
        kbk = min(kb, s1 - y * kb)
        slab = 4 * qb  # f32 repeats of one [rows, 16] slab
        step = (kbk * qb * FRACTAL_F32 / move + (kbk - 1) * slab * simple + 16 * qb
                + 3 * kbk * slab * simple + kbk * 2 * qb * exp)
        pv = (d1 + 1) * qb * FRACTAL_F32 / move + (slab * (d1 + 1) if y else 0)
        total += step + pv
    total += d1 * 4 * qb * simple + 4 * qb  # the normalisation of a query tile
    return total * n_queries * a.heads


def estimate(a: Attention, qb: int, kb: int, p: Projection | None, pp: ProjPlan | None,
             target: Target) -> dict[str, float]:
    """Busy cycles per pipe of the attention kernel at tile qb x kb, with
    the projection (`pp`) or reading Q, K, V from GM (`pp` None), and
    `fill`: the first head's projection, which nothing overlaps."""
    s1, d1, h = a.seq_blocks, a.d_blocks, a.heads
    gm = target.path("gm_to_l1").bytes_per_cycle
    to_a, to_b = (target.path(f"l1_to_l0{x}").bytes_per_cycle for x in "ab")
    n_keys, n_queries = -(-s1 // kb), -(-s1 // qb)
    cube = h * (s1 * s1 * d1 + s1 * s1 * (d1 + 1))
    mte1 = h * n_queries * (d1 * qb * FRACTAL_F16 / to_a + n_keys * (
        kb * qb * FRACTAL_F16 / to_a + (2 * d1 + 1) * kb * FRACTAL_F16 / to_b))
    vector = attention_vector_cycles(a, qb, kb, target)
    reloads = 1 if n_queries == 1 else (1 if 2 * (2 * d1 + 1) * s1 * FRACTAL_F16 * 2
                                        <= target.capacity("l1") // 2 else n_queries)
    mte2 = h * (d1 * s1 + 2 * d1 * s1 * reloads) * FRACTAL_F16 / gm
    fill = 0.0
    if pp is not None:
        jobs = pp.jobs_per_head(p.m1, d1)
        head_blocks = 3 * d1 * p.n1 * p.m1
        cube += h * head_blocks + h * jobs * (p.n1 // pp.sub) * target.mad_latency
        if pp.w_slots < 2 * p.n1 // pp.chunk:
            # No room for the next job's W chunks while this one's are read:
            # each job's mads wait for its own copies.
            cube += h * jobs * pp.cols * p.n1 * FRACTAL_F16 / gm
        x_bytes = p.n1 * p.m1 * FRACTAL_F16
        w_bytes = 3 * d1 * p.n1 * FRACTAL_F16
        mte2 = (x_bytes * (1 if pp.x_resident else h)
                + w_bytes * h * pp.row_tiles(p.m1)) / gm
        mte1 += h * (jobs * pp.rows * p.n1 * FRACTAL_F16 / to_a
                     + pp.row_tiles(p.m1) * w_bytes / to_b)
        vector += h * 3 * d1 * p.m1 * FRACTAL_F32 / target.path("l0c_to_ub").bytes_per_cycle \
            + p.vector_cycles * 3 * d1 * h / p.c_blocks
        fill = max(head_blocks, (x_bytes + w_bytes) / gm)
    return {"M": cube, "MTE1": mte1, "MTE2": mte2, "V": vector, "fill": fill}


def projection_cycles(p: Projection, target: Target) -> float:
    """The projection as its own kernel (npu-lower-matmul's pipelined
    schedule): its cube work or its A and B traffic, the larger."""
    m = p.m1 * target.fractal
    xs = nir.memref_shape(p.x)
    blocks = p.m1 * p.n1 * p.c_blocks
    traffic = (math.prod(xs) * 2 + p.c_blocks * p.n1 * FRACTAL_F16 + m * p.c_blocks * 16 * 2)
    return max(target.cube_cycles(blocks), traffic / target.path("gm_to_l1").bytes_per_cycle)


@dataclass(frozen=True)
class Choice:
    """`choose`'s pick: the attention tile with the projection's plan and
    the estimated cycles fused and apart."""

    qb: int
    kb: int
    plan: ProjPlan
    ub_bytes: int
    fused: float
    apart: float


def choose(a: Attention, p: Projection, target: Target, ub_fraction: float,
           apart_tile: tuple[int, int], footprint_of) -> Choice | str:
    """The attention tile (`tiles_to_try`) and projection plan that fit on
    chip with the least estimated time (the busiest pipe plus the first
    head's projection), against the projection's own kernel plus the
    attention at `apart_tile` (its own plan); a string says why none is
    taken. `footprint_of(qb, kb)`: the attention's own footprint at that
    tile (None: it does not fit by itself)."""
    def busiest(est: dict) -> float:
        return max(v for k, v in est.items() if k != "fill") + est["fill"]

    # Apart, the attention's first loads wait for the projection's last
    # stores: a GM write and read latency between the two kernels.
    boundary = target.path("ub_to_gm").latency + target.path("gm_to_l1").latency
    apart = (projection_cycles(p, target) + boundary
             + busiest(estimate(a, *apart_tile, None, None, target)))
    best: Choice | None = None
    why = "no tile of the attention leaves room on chip for one C piece of the projection"
    s1 = a.seq_blocks
    for qb, kb in tiles_to_try(a):
        own = footprint_of(qb, kb)
        if own is None:
            continue
        if s1 > qb and s1 % qb == 0 and -(-s1 // qb) * -(-s1 // kb) > MAX_STATIC_STEPS:
            why = (f"a head has more tiles ({-(-s1 // qb) * -(-s1 // kb)}) than one static "
                   "pipeline holds")
            continue
        whole = qb >= s1 and kb >= s1
        for group in candidates(a, p):
            if group[0].scores_slots == 1 and not whole:
                continue  # see `ProjPlan`: only a head's jobs may sit between Q.K^T and the softmax
            for pp in group:
                need = footprint(a, qb, kb, p, pp, own)
                budget = {sp: target.capacity(sp) for sp in need}
                budget["ub"] = int(budget["ub"] * ub_fraction)
                if any(need[sp] > budget[sp] for sp in need):
                    continue
                est = busiest(estimate(a, qb, kb, p, pp, target))
                if best is None or est < best.fused:
                    best = Choice(qb, kb, pp, need["ub"], est, apart)
                break
    if best is None:
        return why
    if best.fused >= apart:
        return (f"estimated {int(best.fused)} cycles fused against {int(apart)} apart "
                f"(projection kernel, then attention)")
    return best


# Steps of one head the kernel emits statically when the heads are one
# pipeline (`npu-lower-attention`'s MAX_HEAD_STEPS): the projection's jobs
# of the next head are spread over them.
MAX_STATIC_STEPS = 32
