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
so once per row tile and head. The cost model is
`npu.costmodel.attention.projection_plan`.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from npu.costmodel.fusion import epilogue

from npu.costmodel.fusion import rows as fusion
from npu.costmodel.fusion import precision
from npu import ir as nir
from npu.costmodel.attention.pattern import Attention
from npu.target import Target

PROJECTION_ATTR = "npu.projection"  # the plan, beside `npu.attention` on its region
FRACTAL_F16, FRACTAL_F32 = 512, 1024


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
    f16 on the piece the L0C -> UB move rounded (`npu.costmodel.fusion.epilogue.plan`)."""
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
    `npu.costmodel.attention.plan.footprint`) with the projection's buffers: X in L1
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
    p_tile = attention["l0a"] - q_tile  # P's blocks (two chunks' with key chunks)
    l0a = (max(q_tile, p_tile, slot_a) if whole or s1 % qb
           else q_tile + max(p_tile, slot_a))
    l0b = max(attention["l0b"], slot_b)
    l0c = (pp.scores_slots * kb + 2 * (d1 + 1)) * qb * FRACTAL_F32 \
        + pp.c_slots * pp.rows * pp.cols * FRACTAL_F32
    ub = attention["ub"] + 2 * pp.rows * pp.cols * p.per_fractal + p.resident_ub
    return {"ub": ub, "l0a": l0a, "l0b": l0b, "l0c": l0c, "l1": l1}
