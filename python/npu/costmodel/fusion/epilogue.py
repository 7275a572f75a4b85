"""Matmul epilogues: elementwise ops applied to a matmul's C tile in UB as it
drains from L0C, before anything is written to GM. What `npu-fuse` (which
ops join a matmul, by the cost model below) and `npu-lower-matmul` (which
emits them per drained tile, `npu.passes.matmul_epilogue`) share.

An epilogue member is an elementwise op (binary, scalar, unary recipe,
cast) whose output and tensor operands all have C's shape and layout (Nz
fractals, `[batch,] K1, M1, 16, 16`): a tile of C and the same tile of each
operand are the same elements, so every member runs on the tile as one
flat vector run. Operands not computed in the group (a bias, a residual)
are loaded per tile with the tile's own burst pattern; tensors read after
the group are stored per tile.

Cost model:
  * GM bytes: unfused, C is written by the matmul and every member loads
    its operands and stores its result; fused, only operands from outside
    are loaded and only tensors used outside (or function results) stored.
  * UB per C fractal (`Footprint.per_fractal`): the f32 accumulator
    drained from L0C, each loaded operand, each result and each recipe's
    temporaries, by liveness in member order; a result overwrites an input
    of its element type that no later member reads (`Plan.reuse`). One
    column block of the matmul's C tile (its row blocks times that) must
    fit the UB share, which is what the drain needs at the least. A
    broadcast operand (a bias: `row_broadcast`) is instead read once, one
    row per column block of C, and stays in UB for the whole matmul.
  * Vector work (`vector_cycles`): the drain runs in the matmul's loop, so
    an epilogue whose vector cycles exceed the matmul's own time (cube or
    A/B traffic) holds the matmul back; npu-fuse then forms none (a row
    group of the same ops overlaps its neighbours instead).

Row-major stores (`NdStore`): an `ascend.defractalize` of a tensor the
group makes (C or a member's result) joins as the tensor's store, the way
the hardware's fixpipe writes C in ND: each drained column block leaves
as 16-element rows straight to their row-major places (one burst per row
of the block), so the Nz tensor is neither stored nor read back. Several
defractalizes of adjacent column ranges that together cover the tensor (the
Q/K/V siblings of `npu-fuse-horizontal`) each get their columns, in their
own row-major tensors. A row whose bytes are not whole 32-byte blocks
cannot be written by bursts without running into the next row (which an
earlier column block may already hold): such a defractalize stays.

When an epilogue runs in f16 is `npu.costmodel.fusion.precision`'s policy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from mlir import ir

from npu import ir as nir
from npu.costmodel.fusion import rows as fusion
from npu.costmodel.fusion.broadcast_rows import row_broadcast
from npu.costmodel.vector.recipes import compute_of, repeat_cycles
from npu.target import Target

MATMULS = ("ascend.matmul", "ascend.batch_matmul")
EPILOGUE_ATTR = "npu.epilogue"


@dataclass
class Epilogue:
    """A matmul and its members, in program order. `c` is the matmul's
    result; `loaded`: roots read from GM per tile (first use order);
    `leaving`: roots stored per tile (C included when it leaves);
    `broadcast`: loaded roots whose rows repeat (`row_broadcast`), read
    once for the whole matmul as one row per column block."""

    matmul: ir.Operation
    c: fusion.Operand
    members: list[fusion.RowOp]
    loaded: dict = field(default_factory=dict)
    leaving: set = field(default_factory=set)
    broadcast: set = field(default_factory=set)
    stores: list["NdStore"] = field(default_factory=list)

    @property
    def short(self) -> str:
        return ", ".join([m.short for m in self.members]
                         + (["row-major store"] * bool(self.stores)))


@dataclass
class NdStore:
    """An absorbed `ascend.defractalize`: column blocks `first` ..
    `first + width` of the group's tensor `src.root` (Nz) written row-major
    to `dst` ([rows, cols], `cols` elements a row)."""

    op: ir.Operation
    index: int
    src: fusion.Operand
    dst: fusion.Operand
    first: int
    width: int

    def as_member(self) -> fusion.RowOp:
        """For `illegal`: reads its Nz columns, writes its row-major tensor."""
        return fusion.RowOp(self.op, self.index, 0, None, [self.src], self.dst, None)


@dataclass
class Plan:
    """Buffers of one drained tile: `reuse[k]` is the root whose UB buffer
    member k's result overwrites (None: a new buffer); `per_fractal` the
    peak UB bytes per C fractal (256 elements of every live buffer)."""

    reuse: list
    per_fractal: int


# On an `npu.epilogue` group: its first N members add partial sums of the
# matmul's reduction to C, each its second operand (npu-split-cores'
# split-k, `passes/split_cores/split_k.py`); on an `npu.fused` row group:
# its first N members add the partials of the matmul result it reads
# (`passes/split_cores/split_k_rows.py`).
PARTIAL_SUMS_ATTR = "npu.partial_sums"

def result_of(matmul: ir.Operation) -> fusion.Operand | str:
    """The matmul's C as an operand, or why no epilogue can follow it."""
    c = matmul.operands[-1]
    if nir.memory_space(c) != "gm" or not nir.is_contiguous(c):
        return "its result is not a contiguous GM tensor"
    if fusion.nbytes(nir.view_root(c)) != fusion.nbytes(c):
        return "its result is a partial view of a tensor"
    return fusion.Operand(c, nir.view_root(c), "full", nir.memref_element(c))


def describe_member(op: ir.Operation, index: int, c: fusion.Operand,
                    target: Target) -> fusion.RowOp | str:
    """The op as an epilogue member on C's tiles, or why it cannot be one."""
    if op.name not in fusion.ELEMENTWISE:
        return f"'{op.name}' is not elementwise"
    d = fusion.describe(op, index, target)
    if isinstance(d, str):
        return d
    shape = nir.memref_shape(c.value)
    for o in d.ins + [d.out]:
        if o.kind == "scalar":
            return "a scalar tensor operand (epilogues take scalars as attributes)"
        if nir.memref_shape(o.value) != shape:
            return (f"operand {o.value.type} is not shaped like the matmul's C "
                    f"{c.value.type} (epilogue operands are loaded per C tile)")
    return d


def view_shift(value: ir.Value) -> tuple[ir.Value, int]:
    """The buffer a `memref.view` with a constant byte shift reads, and the
    shift (the value itself and 0 for anything else)."""
    op = nir.defining_op(value)
    if op is not None and op.name == "memref.view":
        shift = nir.constant_int(op.operands[1])
        if shift is not None:
            return op.operands[0], shift
    return value, 0


def column_blocks(src: ir.Value, tensor: ir.Value) -> tuple[int, int] | None:
    """(first, count) of the column blocks of the Nz `tensor` that `src`
    is: the tensor itself (all of them, a batch of matrices too), or a
    `memref.view` of the same buffer a whole number of column blocks further
    on (2-D only); None when it is not such a run."""
    s, t = nir.memref_shape(src), nir.memref_shape(tensor)
    if nir.memref_element(src) != nir.memref_element(tensor):
        return None
    if tensor_key(src) == tensor_key(tensor):
        return (0, t[-4]) if s == t and len(t) in (4, 5) else None
    if len(s) != 4 or len(t) != 4 or s[1:] != t[1:]:
        return None
    (s_buf, s_shift), (t_buf, t_shift) = view_shift(src), view_shift(tensor)
    column = t[1] * t[2] * t[3] * nir.element_bytes(nir.memref_element(tensor))
    delta = s_shift - t_shift
    if s_buf != t_buf or delta < 0 or delta % column or delta // column + s[0] > t[0]:
        return None
    return delta // column, s[0]


def describe_store(op: ir.Operation, index: int, tensors: dict, target: Target) -> NdStore | str:
    """The defractalize as a row-major store of a tensor the group makes
    (`tensors`: root -> the operand it is written through), or why not."""
    if op.name != "ascend.defractalize":
        return f"'{op.name}' is not elementwise"
    src, dst = op.operands
    t = tensors.get(nir.view_root(src))
    if t is None:
        return "it reads no tensor the group makes"
    run = column_blocks(src, t.value)
    if run is None:
        return "it reads a part of the result that is not a run of whole column blocks"
    shape = nir.memref_shape(dst)
    rank = len(nir.memref_shape(t.value)) - 2  # [batch,] rows, columns
    if len(shape) != rank or nir.memory_space(dst) != "gm" or not nir.is_contiguous(dst):
        return f"its row-major result is not a contiguous {rank}-D GM tensor"
    elem = nir.memref_element(dst)
    row_bytes = shape[-1] * nir.element_bytes(elem)
    if row_bytes % target.vector_block_bytes:
        return (f"its rows of {shape[-1]} {elem} are not whole {target.vector_block_bytes}-byte "
                f"blocks: a burst per row would run into the next row")
    return NdStore(op, index, fusion.Operand(src, nir.view_root(src), "full", elem),
                   fusion.Operand(dst, nir.view_root(dst), "full", elem), *run)


def stores_refusal(stores: list[NdStore], tensor: ir.Value) -> str | None:
    """Why the row-major stores of one tensor cannot replace its Nz store
    (None: they can): together they must cover its column blocks, each once
    (several runs: siblings, each written to its own row-major tensor)."""
    blocks = nir.memref_shape(tensor)[-4]
    runs = sorted((s.first, s.width) for s in stores)
    ends = [0] + [first + width for first, width in runs]
    if [first for first, _ in runs] != ends[:-1] or ends[-1] != blocks:
        return f"the row-major stores cover column blocks {runs} of {blocks}, not each once"
    return None


def illegal(mm: ir.Operation, members: list[fusion.RowOp], index: dict,
            touches: dict) -> str | None:
    """Why the matmul and `members` cannot run as one drain (None: they
    can). The group runs at its last member's position, tile by tile;
    `index`: op -> position in the block, `touches[position]`: the roots
    the op there reads and writes."""
    a_b = {nir.view_root(v) for v in mm.operands[:-1]}
    written = {nir.view_root(mm.operands[-1])}
    for m in members:
        if m.out.root in written:
            return "two members write the same tensor"
        if m.out.root in a_b:
            return "it writes an input of the matmul"
        written.add(m.out.root)
    for k, m in enumerate(members):
        if any(i.root in {w.out.root for w in members[k:]} for i in m.ins):
            return "a member reads a tensor before another member writes it"
    place = members[-1].index
    moved = [(index[mm], a_b, nir.view_root(mm.operands[-1]))] + [
        (m.index, {i.root for i in m.ins}, m.out.root) for m in members[:-1]]
    member_index = {m.index for m in members}
    for at, reads, out in moved:
        for k in range(at + 1, place):
            if k in member_index or k not in touches:
                continue
            r, w = touches[k]
            if out in r | w or reads & w:
                return ("an op between the matmul and it uses a member's result or writes "
                        "a member's input")
    return None


def model(matmul: ir.Operation, c: fusion.Operand, members: list[fusion.RowOp],
          leaves: Callable[[ir.Value], bool], stores: list[NdStore] = ()) -> Epilogue:
    """Which tensors the epilogue loads and stores; `leaves(root)`: the
    tensor is needed outside the group (stored per tile in Nz; `stores`
    write it row-major)."""
    e = Epilogue(matmul, c, sorted(members, key=lambda m: m.index), stores=list(stores))
    written = {c.root}
    for m in e.members:
        for i in m.ins:
            if i.root not in written:
                e.loaded.setdefault(i.root, i)
        written.add(m.out.root)
    e.leaving = {o.root for o in [c] + [m.out for m in e.members] if leaves(o.root)}
    e.broadcast = {r for r, o in e.loaded.items()
                   if all(m.compute.kind == "binary" for m in e.members
                          if any(i.root == r for i in m.ins)) and row_broadcast(o.value)}
    return e


def collapse_gelu(c: fusion.Operand, members: list[fusion.RowOp],
                  leaves: Callable[[ir.Value], bool], kept: set = frozenset(),
                  in_f16: bool = False) -> list[fusion.RowOp]:
    """`members` with each GELU chain as one recipe member (`npu.costmodel.fusion.gelu`);
    `kept`: tensors read besides the members (row-major stores); `in_f16`:
    members computed in f16 (`in_f16`) get the f16 recipe."""
    from npu.costmodel.fusion import gelu

    leaving = {o.root for o in [c] + [m.out for m in members] if leaves(o.root)}
    return gelu.collapse(members, leaving | kept, in_f16)


def lowered_plan(e: Epilogue, target: Target) -> Plan:
    """`plan` of the members as npu-lower-matmul runs them: GELU chains
    collapsed to their one recipe (fewer temporaries than the ops apart)."""
    from dataclasses import replace

    from npu.costmodel.fusion import gelu

    kept = e.leaving | {s.src.root for s in e.stores}
    return plan(replace(e, members=gelu.collapse(e.members, kept)), target)


def broadcast_bytes(e: Epilogue) -> int:
    """UB bytes of the broadcast operands, resident for the whole matmul:
    one row of 16 elements per column block of C."""
    return sum(nir.memref_shape(e.loaded[r].value)[-4] * nir.memref_shape(e.loaded[r].value)[-1]
               * e.loaded[r].es for r in e.broadcast)


def used_outside(group: set, users: dict) -> Callable[[ir.Value], bool]:
    """`leaves` for npu-fuse: a function argument, or a tensor some op
    outside `group` uses (`users[root]`: the ops at any depth using it)."""
    def leaves(root: ir.Value) -> bool:
        alloc = nir.defining_op(root)
        return (alloc is None or alloc.name != "memref.alloc"
                or any(u not in group for u in users.get(root, ())))
    return leaves


def tensor_key(value: ir.Value) -> ir.Value:
    """The tensor a view belongs to, once GM is planned: views are followed
    up to a `memref.view` (a tensor's slot in the workspace), not into it."""
    while True:
        op = nir.defining_op(value)
        if op is None or op.name not in nir.VIEW_OPS or op.name == "memref.view":
            return value
        value = op.operands[0]


def grouped_member(op: ir.Operation, index: int, target: Target) -> fusion.RowOp:
    """A member of a formed group, as npu-lower-matmul sees it (after
    npu-plan-gm: tensors are identified by `tensor_key`)."""
    *ins, out = [fusion.Operand(v, tensor_key(v), "full", nir.memref_element(v))
                 for v in op.operands]
    compute = compute_of(op, [i.elem for i in ins], out.elem)
    return fusion.RowOp(op, index, 0, None, ins, out, compute)


def gm_bytes(e: Epilogue) -> int:
    """GM bytes the epilogue adds to the matmul's A and B traffic."""
    values = {e.c.root: e.c.value} | {m.out.root: m.out.value for m in e.members}
    return (sum(fusion.nbytes(o.value) for r, o in e.loaded.items() if r not in e.broadcast)
            + broadcast_bytes(e) + sum(fusion.nbytes(values[r]) for r in e.leaving)
            + sum(fusion.nbytes(s.dst.value) for s in e.stores))


def unfused_gm_bytes(e: Epilogue, users: dict, granule: int) -> int:
    """C written once, then each member as its own kernel, and each
    defractalize reading its Nz columns and writing them row-major."""
    return fusion.nbytes(e.c.value) + sum(
        fusion.gm_bytes(fusion.model([m], users), granule) for m in e.members) + sum(
        fusion.nbytes(s.src.value) + fusion.nbytes(s.dst.value) for s in e.stores)


def store_bursts(e: Epilogue) -> int:
    """GM bursts of the row-major stores: one per 16-element row piece of
    each column block (what the mover pays beyond the bytes)."""
    total = 0
    for s in e.stores:
        *batch, rows, _ = nir.memref_shape(s.dst.value)
        total += s.width * rows * (batch[0] if batch else 1)
    return total


def plan(e: Epilogue, target: Target, drained: str = "f32", early: frozenset = frozenset(),
         fresh: frozenset = frozenset()) -> Plan:
    """The buffers of one drained tile, by liveness in member order;
    `drained`: the type the accumulator arrives in UB as (f16: converted by
    the L0C -> UB move itself); `early`: loaded operands whose pieces all
    load before the first member (live from the drain on); `fresh`: the
    members whose result takes a new buffer, overwriting no input (written
    in another layout than the inputs)."""
    fractal = target.fractal * target.fractal
    last_use: dict = {}
    for k, m in enumerate(e.members):
        for i in m.ins:
            last_use[i.root] = k
    live: dict = {e.c.root: nir.element_bytes(drained) * fractal}  # drained from L0C
    peak = live[e.c.root]
    if e.c.elem != drained:  # C itself is the rounded copy
        peak += e.c.es * fractal
        live[e.c.root] = e.c.es * fractal
    elem_of = {e.c.root: e.c.elem}
    for root in early:
        live[root] = e.loaded[root].es * fractal
        elem_of[root] = e.loaded[root].elem
    peak = max(peak, sum(live.values()))
    reuse = []
    for k, m in enumerate(e.members):
        for i in m.ins:
            if i.root not in live and i.root not in e.broadcast:
                live[i.root] = i.es * fractal
                elem_of[i.root] = i.elem
            elif i.root in live and elem_of[i.root] != i.elem:  # rounded once (`f32_head`)
                peak = max(peak, sum(live.values()) + i.es * fractal)
                live[i.root] = i.es * fractal
                elem_of[i.root] = i.elem
        dying = [i.root for i in m.ins if last_use[i.root] == k and i.root not in e.broadcast]
        mine = None if k in fresh else next((r for r in dying if elem_of[r] == m.out.elem), None)
        reuse.append(mine)
        out_bytes = 0 if mine is not None else m.out.es * fractal
        temps = sum(nir.element_bytes(t) * fractal for t in m.compute.temps)
        peak = max(peak, sum(live.values()) + out_bytes + temps)
        out_size = live[mine] if mine is not None else out_bytes
        for r in dying:
            live.pop(r, None)
        if last_use.get(m.out.root, -1) > k:  # else stored (or dropped) right away
            live[m.out.root] = out_size
            elem_of[m.out.root] = m.out.elem
    return Plan(reuse, peak)


def vector_cycles(members: list[fusion.RowOp], target: Target) -> int:
    """The vector unit's busy cycles for the members over all of C: per
    element run, each instruction of each member's `Compute` costs one
    repeat at its class's rate (a recipe's steps, a cast's conversions)."""
    total = 0
    made: dict = {}  # root -> the type its producer wrote it in
    for m in members:
        for i in m.ins:  # a result read in another type is converted once (`f32_head`)
            if made.get(i.root, i.elem) != i.elem:
                widest = max(i.es, nir.element_bytes(made[i.root]))
                total += -(-fusion.elements(i.value) // target.lanes(widest)) \
                    * target.vector_cycles("convert")
                made[i.root] = i.elem
        made[m.out.root] = m.out.elem
        widest = max(o.es for o in m.ins + [m.out])
        total += -(-fusion.elements(m.out.value) // target.lanes(widest)) \
            * repeat_cycles(m.compute, target)
    return total
