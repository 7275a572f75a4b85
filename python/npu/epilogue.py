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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from mlir import ir

from npu import fusion
from npu import ir as nir
from npu.target import Target

MATMULS = ("ascend.matmul", "ascend.batch_matmul")
EPILOGUE_ATTR = "npu.epilogue"
CONSTANT_ATTR = "npu.constant"


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

    @property
    def short(self) -> str:
        return ", ".join(m.short for m in self.members)


@dataclass
class Plan:
    """Buffers of one drained tile: `reuse[k]` is the root whose UB buffer
    member k's result overwrites (None: a new buffer); `per_fractal` the
    peak UB bytes per C fractal (256 elements of every live buffer)."""

    reuse: list
    per_fractal: int


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
          leaves: Callable[[ir.Value], bool]) -> Epilogue:
    """Which tensors the epilogue loads and stores; `leaves(root)`: the
    tensor is needed outside the group (stored per tile)."""
    e = Epilogue(matmul, c, sorted(members, key=lambda m: m.index))
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
                  leaves: Callable[[ir.Value], bool]) -> list[fusion.RowOp]:
    """`members` with each GELU chain as one recipe member (`npu.gelu`)."""
    from npu import gelu

    leaving = {o.root for o in [c] + [m.out for m in members] if leaves(o.root)}
    return gelu.collapse(members, leaving)


def lowered_plan(e: Epilogue, target: Target) -> Plan:
    """`plan` of the members as npu-lower-matmul runs them: GELU chains
    collapsed to their one recipe (fewer temporaries than the ops apart)."""
    from dataclasses import replace

    from npu import gelu

    return plan(replace(e, members=gelu.collapse(e.members, e.leaving)), target)


def row_broadcast(value: ir.Value) -> bool:
    """Whether `value`, an operand shaped like C, is a host constant
    (`npu.constant` argument) whose rows within each column block are all
    the same (and the same in every batch): a bias the frontend broadcast
    over the rows. Compared bit for bit, so reading one row is exact."""
    import numpy as np

    if not isinstance(value, ir.BlockArgument) and not ir.BlockArgument.isinstance(value):
        return False
    arg = ir.BlockArgument(value)
    func = arg.owner.owner
    attr = nir.arg_attrs(func, arg.arg_number).get(CONSTANT_ATTR)
    if attr is None:
        return False
    shape = nir.memref_shape(value)
    data = nir.constant_data(attr, shape, nir.memref_element(value))
    bits = data.view(f"u{data.itemsize}").reshape(-1, shape[-4], shape[-3] * shape[-2], shape[-1])
    return bool(np.array_equal(bits, np.broadcast_to(bits[:1, :, :1, :], bits.shape)))


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
    from npu.passes.lower_elementwise import Input, LowerElementwise

    *ins, out = [fusion.Operand(v, tensor_key(v), "full", nir.memref_element(v))
                 for v in op.operands]
    compute = LowerElementwise(target).compute_of(
        op, [Input(i.value, "full", i.elem) for i in ins], out.elem)
    return fusion.RowOp(op, index, 0, None, ins, out, compute)


def gm_bytes(e: Epilogue) -> int:
    """GM bytes the epilogue adds to the matmul's A and B traffic."""
    values = {e.c.root: e.c.value} | {m.out.root: m.out.value for m in e.members}
    return (sum(fusion.nbytes(o.value) for r, o in e.loaded.items() if r not in e.broadcast)
            + broadcast_bytes(e) + sum(fusion.nbytes(values[r]) for r in e.leaving))


def unfused_gm_bytes(e: Epilogue, users: dict, granule: int) -> int:
    """C written once, then each member as its own kernel."""
    return fusion.nbytes(e.c.value) + sum(
        fusion.gm_bytes(fusion.model([m], users), granule) for m in e.members)


def plan(e: Epilogue, target: Target) -> Plan:
    """The buffers of one drained tile, by liveness in member order."""
    fractal = target.fractal * target.fractal
    last_use: dict = {}
    for k, m in enumerate(e.members):
        for i in m.ins:
            last_use[i.root] = k
    live: dict = {e.c.root: 4 * fractal}   # the f32 accumulator drained from L0C
    peak = live[e.c.root]
    if e.c.elem != "f32":  # C itself is the rounded copy
        peak += e.c.es * fractal
        live[e.c.root] = e.c.es * fractal
    elem_of = {e.c.root: e.c.elem}
    reuse = []
    for k, m in enumerate(e.members):
        for i in m.ins:
            if i.root not in live and i.root not in e.broadcast:
                live[i.root] = i.es * fractal
                elem_of[i.root] = i.elem
        dying = [i.root for i in m.ins if last_use[i.root] == k and i.root not in e.broadcast]
        mine = next((r for r in dying if elem_of[r] == m.out.elem), None)
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
    from npu.simulator.vector_unit import TRANSCENDENTAL

    def rate(op: str) -> int:
        return target.vector_cycles("transcendental" if op in TRANSCENDENTAL else "simple")

    total = 0
    for m in members:
        k = m.compute
        if k.kind == "unary":
            per_repeat = sum(rate(s.op) for s in k.steps) + (2 * rate("cce.vconv") if k.widen
                                                              else 0)
        elif k.kind == "cast":
            per_repeat = len(k.chain) * target.vector_cycles("convert")
        else:
            per_repeat = rate(k.vop)
        widest = max(o.es for o in m.ins + [m.out])
        total += -(-fusion.elements(m.out.value) // target.lanes(widest)) * per_repeat
    return total
