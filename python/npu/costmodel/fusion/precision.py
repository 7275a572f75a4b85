"""The precision policy of matmul epilogues (README "Precision"): when
an epilogue may run in f16 (`f16_refusal`), which member still runs in
f32 (`f32_head`), and the members as computed in f16 (`in_f16`). The
`npu.epilogue` attribute records the choice (`compute`, `head`)."""

from __future__ import annotations

from npu import ir as nir
from npu.costmodel.fusion import rows as fusion
from npu.costmodel.fusion.epilogue import Epilogue
from npu.costmodel.vector.recipes import compute_of
from npu.target import Target

COMPUTE_F16 = "f16"  # npu.epilogue's `compute` when the members run in f16
HEAD_ATTR = "head"  # npu.epilogue's `head = "f32"`: the `f32_head` member runs in f32


def f16_refusal(e: Epilogue, stored: set | None = None) -> str | None:
    """Why the members cannot be computed in f16 (None: they can). The
    policy (README "Precision"): every tensor that leaves the group (stored
    in Nz or row-major) is an f32 -> f16 `ascend.cast` (round to nearest)
    of a tensor the group makes and nothing else reads, so no f32 value of
    the chain is seen outside and the result would be rounded to f16 anyway;
    the members are f16/f32 elementwise ops and every operand loaded per
    tile is f16 already (a broadcast row is converted once). `stored`: the
    tensors written row-major (default: those of `e.stores`)."""
    if e.c.elem != "f32":
        return f"C is {e.c.elem} already"
    kept = e.leaving | ({s.src.root for s in e.stores} if stored is None else stored)
    casts = {m.out.root: m for m in e.members if m.op.name == "ascend.cast"}
    reads = [i.root for m in e.members for i in m.ins]
    if any(root not in casts for root in kept):
        return "a result that is not an f32 -> f16 cast leaves the group"
    for root in kept:
        cast = casts[root]
        source = cast.ins[0].root
        if (cast.ins[0].elem, cast.out.elem) != ("f32", "f16") \
                or nir.str_attr(cast.op, "round_mode") != "rint":
            return "a cast that leaves the group is not f32 -> f16 to nearest"
        if source in kept or reads.count(source) > 1 or source in e.loaded:
            return "the f32 value a leaving cast reads is used besides that cast"
    for m in e.members:
        if any(o.elem not in ("f16", "f32") for o in m.ins + [m.out]):
            return f"'{m.op.name}' has operands that are not f16 or f32"
        if m.op.name == "ascend.cast" and m.out.root not in kept:
            return "a cast inside the group does not leave it"
    for root, o in e.loaded.items():
        if root not in e.broadcast and o.elem != "f16":
            return f"an {o.elem} operand is loaded per tile and would need converting per tile"
    return None


def f32_head(c: fusion.Operand, members: list[fusion.RowOp]) -> fusion.RowOp | None:
    """The member an f16 epilogue still computes in f32, on the drained f32
    accumulator: the first member when it adds an f32 operand (a bias) to
    C and is C's only reader. Rounding C to f16 before that add would round
    twice (C, then C + b); after it, once (README "Precision")."""
    if not members:
        return None
    head = members[0]
    roots = [i.root for i in head.ins]
    if (head.op.name != "ascend.add" or len(roots) != 2 or roots.count(c.root) != 1
            or any(i.elem != "f32" for i in head.ins) or head.out.elem != "f32"
            or any(i.root == c.root for m in members[1:] for i in m.ins)):
        return None
    return head


def in_f16(c: fusion.Operand, members: list[fusion.RowOp], target: Target,
           head_f32: bool = False) -> tuple[fusion.Operand, list[fusion.RowOp]]:
    """C and the members as computed in f16 (`f16_refusal` said they can
    be): each leaving cast is dropped and its result becomes the result of
    the op it read (C too: C is then f16, the drained accumulator rounded
    once); every other f32 operand is computed as f16 (`Operand.elem`; the
    value keeps its f32 memref, which is what a broadcast row is read as
    from GM). With `head_f32` (`HEAD_ATTR`), the `f32_head` member stays in
    f32 (C with it) and its result is rounded to f16 once where the next
    member reads it as f16 (its leaving cast stays a cast)."""
    from dataclasses import replace

    head = f32_head(c, members) if head_f32 else None
    casts = {m.ins[0].root: m.out for m in members
             if m.op.name == "ascend.cast" and (head is None or m.ins[0].root != head.out.root)}

    def f16(o: fusion.Operand) -> fusion.Operand:
        return replace(o, elem="f16") if o.elem == "f32" else o

    out: list[fusion.RowOp] = []
    for m in members:
        if m is head or (head is not None and m.ins[0].root == head.out.root
                         and m.op.name == "ascend.cast"):
            out.append(m)
            continue
        if m.op.name == "ascend.cast":
            continue
        ins, result = [f16(i) for i in m.ins], casts.get(m.out.root, f16(m.out))
        compute = compute_of(m.op, [i.elem for i in ins], result.elem)
        out.append(replace(m, ins=ins, out=result, compute=compute))
    return (c if head is not None else casts.get(c.root, f16(c))), out
