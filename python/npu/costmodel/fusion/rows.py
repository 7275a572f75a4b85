"""What `npu-fuse` and `npu-lower-fused` share: which ascend ops are row ops,
how each operand of one relates to the group's rows, and the cost model
(GM bytes a group moves; the UB of a chunk is `npu.kernels.fused_chunk`'s).

A *row group* works on tensors viewed as [R, N] (R rows of N elements).
Each operand of a member op is one of
  full    R x N elements (a row-chunk of it is loaded, computed or stored),
  col     R elements, one per row (a reduction's result, `[..., 1]`),
  row     N elements shared by all rows (a bias, a layernorm's gamma),
  scalar  one element.
Member ops: elementwise binary/scalar/unary ops and casts whose output is
full (any operand kinds) or col (col/scalar operands only), and reductions
along the last axis (full -> col). Tensors are identified by their *root*
buffer (the alloc or argument behind memref views), so two views of one
tensor are one value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from mlir import ir

from npu import ir as nir
from npu.costmodel.vector.broadcast import classify
from npu.costmodel.vector.nz_limits import layout_limits
from npu.costmodel.vector.recipes import BINARY, SCALAR, UNARY, Compute, compute_of
from npu.diagnostics import PassError
from npu.dialects.ascend import CAST, reduce_axis
from npu.target import Target

REDUCE = {"ascend.reduce_sum": ("cce.vadd", "cce.vcadd"),
          "ascend.reduce_max": ("cce.vmax", "cce.vcmax"),
          "ascend.reduce_min": ("cce.vmin", "cce.vcmin")}
ELEMENTWISE = tuple(BINARY) + tuple(SCALAR) + tuple(UNARY) + ("ascend.cast",)
# Masks: a compare's i8 result and a select's i8 condition (sdpa's NaN guard
# after the softmax, attention masks) stay in the row kernel too.
MASK_OPS = ("ascend.cmp", "ascend.select")
ROW_OPS = ELEMENTWISE + MASK_OPS + tuple(REDUCE)
FUSED_ATTR = "npu.fused"
# UB share of a fused chunk as the footprint model counts it. Double buffering
# needs half of UB; the model frees buffers at op granularity, and the memory
# planner's pipe-aware lifetimes hold them up to ~1.25x longer (measured on
# softmax chunks), so 0.35 rather than 0.5.
FUSED_UB_FRACTION = 0.35
# Ops whose result is a view of their first operand (address arithmetic only).


def elements(value: ir.Value) -> int:
    # math.prod: numpy's reduction of a short list cost 0.07 CPU s of BERT-12's npu-fuse
    return math.prod(nir.memref_shape(value))


nbytes = nir.memref_bytes  # the name this package's cost terms use


@dataclass
class Operand:
    value: ir.Value
    root: ir.Value
    kind: str  # "full" | "col" | "row" | "scalar"
    elem: str

    @property
    def es(self) -> int:
        return nir.element_bytes(self.elem)


@dataclass
class RowOp:
    """One member candidate: its rows, row length (None: it works on col
    values only, any row length fits), operands and what it computes."""

    op: ir.Operation
    index: int
    rows: int
    n: int | None
    ins: list[Operand]
    out: Operand
    compute: Compute | None  # None for reductions

    @property
    def short(self) -> str:
        return self.op.name.split(".", 1)[1]


def fold_chains(n: int, lanes: int, most: int = 4) -> int:
    """Independent accumulators a row reduction folds its `lanes`-wide
    segments into (1, 2 or 4, at most `most`: two whole segments each to
    start): the folds of one round need no pipe_barrier(V) between them."""
    chains = 1
    while chains < most and 4 * chains * lanes <= n:
        chains *= 2
    return chains


def accumulator(m: RowOp) -> str:
    """Element type a reduction accumulates in: f16 sums in f32 (rounded once)."""
    elem = m.ins[0].elem
    return "f32" if m.op.name == "ascend.reduce_sum" and elem == "f16" else elem


def _one_per_row(value: ir.Value, out_shape: list[int]) -> bool:
    """`value` holds one element per row of `out_shape` ([..., 1] with the
    same leading dims): a reduction's result, whatever the number of rows."""
    shape = nir.memref_shape(value)
    return len(shape) == len(out_shape) and shape[-1] == 1 and shape[:-1] == out_shape[:-1]


def _row_blocks_of(nz: ir.Value) -> bool:
    """An Nz subview of whole column blocks and a run of row blocks of a
    contiguous Nz tensor (or of such a subview: `split_cores.peel`), or a
    run of rows of one row block: one core's rows (npu-split-cores)."""
    op = nir.defining_op(nz)
    if op is None or op.name != "memref.subview" or not (
            nir.is_contiguous(op.operands[0]) or _row_blocks_of(op.operands[0])):
        return False  # (a subview of one: a core's rows of a peeled group's blocks)
    whole, part = nir.memref_shape(op.operands[0]), nir.memref_shape(nz)
    if len(whole) != 4 or part[0] != whole[0] or part[3] != whole[3]:
        return False
    return part[2] == whole[2] or (part[1] == 1 and whole[2] % part[2] == 0)


def _core_slice(v: ir.Value) -> bool:
    """A contiguous `memref.subview` of whole rows: one core's share of a
    tensor (npu-split-cores), addressed through the view's offset."""
    op = nir.defining_op(v)
    return op is not None and op.name == "memref.subview" and nir.is_contiguous(v)


def byte_view(v: ir.Value) -> bool:
    """A `memref.view` (of views) of a byte buffer: a tensor held inside
    another's bytes (an NC1HWC0 concat's prefix, `linalg_to_ascend.slices`),
    contiguous and addressed through the views' shifts. Its root is the
    whole buffer, so a group takes no two such views of one root
    (`npu-fuse`'s `illegal`)."""
    op = nir.defining_op(v)
    while op is not None and op.name == "memref.view":
        op = nir.defining_op(op.operands[0])
        if op is None or op.name != "memref.view":
            return nir.memref_element(nir.view_root(v)) == "i8"
    return False


def per_block(shape: list[int], out_shape: list[int]) -> bool:
    """`shape` holds one row of C0 values per channel block of the NC1HWC0
    map `out_shape` ([1, C1, 1, 1, C0] of [1, C1, H, W, C0], C1 > 1): a
    per-channel scale or shift (DenseNet's BatchNorm on its concat)."""
    return (len(out_shape) == 5 and out_shape[0] == 1 and out_shape[1] > 1
            and out_shape[2] * out_shape[3] > 1
            and list(shape) == [1, out_shape[1], 1, 1, out_shape[4]])


def has_per_block(region: ir.Operation) -> bool:
    """A fused group with a member reading a `per_block` operand."""
    return any(o.name.startswith("ascend.") and any(
        per_block(nir.memref_shape(v), nir.memref_shape(o.operands[-1]))
        for v in list(o.operands)[:-1])
        for o in (op.operation for op in region.regions[0].blocks[0].operations))


def describe(op: ir.Operation, index: int, target: Target, tails: bool = False,
             channels: int = 0) -> RowOp | str:
    """The op as a row op, or why it is not one. `tails`: rows that are not
    whole 32-byte blocks are row ops too (a group of them is a kernel only
    with its rows resident, `tail_block`). `channels` (the cores of a
    split): an operand of one row per channel block (`per_block`) of a
    map of at most that many blocks counts as a row operand, as it is on
    each core of the split that gives every core one block
    (`split_cores.groups._leading_pair`); npu-lower-fused lowers a group
    left with more than one a core as its ops alone."""
    name = op.name
    if name not in ROW_OPS:
        return f"'{name}' is not a row op (elementwise, or a reduction along the last axis)"
    operands = list(op.operands)
    # An int8 matmul's i32 accumulator is converted to float by its first reader.
    dequantizing = name == CAST and [nir.memref_element(v) for v in operands] == ["i32", "f32"]
    for v in operands:
        if elements(v) == 0:
            return "an operand has no elements"
        if not nir.is_contiguous(v) or nir.memory_space(v) != "gm":
            return "an operand is not a contiguous GM tensor"
        if nir.memref_element(v) not in ("f16", "f32") and not (
                name in MASK_OPS and nir.memref_element(v) == "i8") and not (
                dequantizing and v == operands[0]):
            return f"element type {nir.memref_element(v)} (fused kernels take f16/f32)"
        if nbytes(nir.view_root(v)) != nbytes(v) and not _core_slice(v) and not byte_view(v):
            # a memref.view of a whole byte buffer is whole
            return "an operand is a partial view of its tensor"
    out = operands[-1]
    if any(nir.view_root(v) == nir.view_root(out) for v in operands[:-1]):
        return "it writes over its own input"
    out_shape = nir.memref_shape(out)
    compute = None
    if name in REDUCE:
        src = operands[0]
        shape = nir.memref_shape(src)
        if not shape or reduce_axis(op) % len(shape) != len(shape) - 1:
            return "it reduces an axis other than the last"
        if nir.has_attr(op, "scale"):
            return "its sums are scaled (npu-lower-reduce's own kernel)"
        n = shape[-1]
        rows = elements(src) // n
        ins = [Operand(src, nir.view_root(src), "full", nir.memref_element(src))]
        out_kind = "col"
    else:
        n = out_shape[-1] if out_shape else 1
        col_level = n == 1
        rows = elements(out) if col_level else elements(out) // n
        ins = []
        for v in operands[:-1]:
            try:
                kind = classify(op, nir.memref_shape(v), out_shape)
            except PassError as e:
                if not (per_block(nir.memref_shape(v), out_shape) and out_shape[1] <= channels):
                    return e.message
                kind = "row"
            if col_level:
                kind = "col" if kind == "full" else kind
            else:
                kind = {"column": "col"}.get(kind, kind)
                if kind == "scalar" and rows == 1 and _one_per_row(v, out_shape):
                    kind = "col"  # one row: its [..., 1] column, not a broadcast scalar
            if kind not in ("full", "col", "row", "scalar") or (col_level and kind != "col"
                                                               and kind != "scalar"):
                return f"operand broadcast '{kind}' at the col level"
            ins.append(Operand(v, nir.view_root(v), kind, nir.memref_element(v)))
        try:
            compute = compute_of(op, [nir.memref_element(v) for v in operands[:-1]],
                                 nir.memref_element(out))
        except PassError as e:
            return e.message
        if compute.temps and any(i.kind in ("row", "col") for i in ins) and not col_level:
            return "a composed recipe with temporaries cannot broadcast a row or col operand"
        out_kind = "col" if col_level else "full"
        if col_level:
            n = None
    row_op = RowOp(op, index, rows, n, ins, Operand(out, nir.view_root(out), out_kind,
                                                    nir.memref_element(out)), compute)
    if n is not None and not tails:
        for o in row_op.ins + [row_op.out]:
            if o.kind in ("full", "row") and (n * o.es) % target.granule("ub"):
                return (f"rows of {n} {o.elem} elements are not whole 32-byte blocks "
                        "(fused kernels move whole-block rows)")
    return row_op


# ----------------------------------------------------------------------------
# Cost model
# ----------------------------------------------------------------------------


@dataclass
class GroupModel:
    members: list[RowOp]
    leaving: set = field(default_factory=set)     # roots written to GM
    loaded: dict = field(default_factory=dict)    # root -> Operand read from GM
    # Nz stores: root -> the Nz tensor an absorbed `ascend.fractalize` of it
    # makes (the matmul A operand written in the cube's layout as it leaves).
    nz: dict = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return self.members[0].rows

    @property
    def n(self) -> int | None:
        return next((m.n for m in self.members if m.n is not None), None)


def tail_block(g: GroupModel, target: Target) -> int:
    """Elements of the block that ends each row when the rows are not whole
    32-byte blocks of every full and row operand (0 when they are): a UB row
    is then its whole blocks and this block, whose first lanes repeat the
    last elements of the whole blocks (`npu.kernels.resident_rows`)."""
    sizes = [o.es for m in g.members for o in m.ins + [m.out] if o.kind in ("full", "row")
             and (o.elem != "i8" or o.root in g.loaded or o.root in g.leaving)]
    block = target.granule("ub") // min(sizes) if sizes else 1
    return block if (g.n or 1) % block else 0


def model(members: list[RowOp], outside_users: dict, absorbed=(), layouts=()) -> GroupModel:
    """Which roots the group loads and which it stores, in member order.
    `outside_users[root]`: the non-view ops using that tensor; `absorbed`:
    ops of the group folded into a member (a GELU chain's), not outside;
    `layouts`: `ascend.fractalize` ops of members' results the group
    absorbs (their result is stored in Nz; the ND tensor leaves only when
    something else reads it)."""
    g = GroupModel(sorted(members, key=lambda m: m.index))
    for f in layouts:
        g.nz[nir.view_root(f.operands[0])] = f.operands[1]
    ops = {m.op for m in g.members} | set(absorbed) | set(layouts)
    written = set()
    for m in g.members:
        for i in m.ins:
            if i.root not in written and i.root not in g.loaded:
                g.loaded[i.root] = i
        written.add(m.out.root)
        if not _is_alloc(m.out.root) or any(u not in ops for u in outside_users.get(m.out.root, ())):
            g.leaving.add(m.out.root)
    return g


def tensor_users(func: ir.Operation) -> dict:
    """root tensor -> the ops (not views, allocs or deallocs) using it, at any depth."""
    users: dict = {}
    for op in nir.walk(func):
        if op.name in nir.VIEW_OPS or op.name in ("memref.alloc", "memref.dealloc"):
            continue
        for v in op.operands:
            if nir.is_memref(v.type):
                users.setdefault(nir.view_root(v), set()).add(op)
    return users


def _is_alloc(root: ir.Value) -> bool:
    op = nir.defining_op(root)
    return op is not None and op.name == "memref.alloc"


def gm_bytes(g: GroupModel, granule: int) -> int:
    """GM bytes the group's kernel moves: each loaded tensor once, each
    tensor leaving the group once (a scalar moves one granule)."""
    loads = sum(max(granule, nbytes(o.value)) if o.kind == "scalar" else nbytes(o.value)
                for o in g.loaded.values())
    return (loads + sum(nbytes(r) for r in g.leaving)
            + sum(nbytes(nz) for nz in g.nz.values()))


def nz_layout(nd: ir.Value, nz: ir.Value, rows: int, n: int | None, target: Target) -> str | None:
    """Why a fractalize (ND `nd` -> `nz`) cannot be a group's Nz store of
    rows x n results (None: it can): one matrix (no batch), the group's
    rows and columns, whole fractal columns (the store moves 16-element
    row pieces, the Nz tensor has no padding columns)."""
    shape = nir.memref_shape(nd)
    if len(shape) < 2 or any(d != 1 for d in shape[:-2]):
        return "it fractalizes a batch of matrices"
    if n is None or shape[-2:] != [rows, n]:
        return "its matrix is not the group's rows"
    if n % target.fractal:
        return (f"rows of {n} elements are not whole {target.fractal}-column fractals "
                "(the Nz tensor would need padding columns)")
    if not (nir.is_contiguous(nz) or _row_blocks_of(nz)) \
            or nir.memref_element(nz) != nir.memref_element(nd):
        return "its Nz tensor is not a contiguous tensor of the same type"
    return layout_limits(target, rows, n, nir.element_bytes(nir.memref_element(nd)))


def stores_at_end(g: GroupModel) -> frozenset:
    """Results whose stores wait for the chunk's end, when the last member's
    result leaves in Nz (its gather into Nz order is vector work after it,
    so its store is last anyway): that result and those only the last
    member still reads (layernorm's f32 result, cast to the f16 Nz copy),
    so that the stores go back to back and share one flag (a flag holds its
    mover until every earlier transfer has landed: the GM latency once
    instead of once per store). Elsewhere stores leave right after their
    results, overlapping the vector work that follows."""
    last = g.members[-1]
    if last.out.root not in g.nz:
        return frozenset()
    later: dict = {}
    for k, m in enumerate(g.members):
        for i in m.ins:
            later.setdefault(i.root, set()).add(k)
    end = len(g.members) - 1
    return frozenset(m.out.root for m in g.members
                     if (m.out.root in g.leaving or m.out.root in g.nz)
                     and (m is last or later.get(m.out.root, set()) <= {end}))
