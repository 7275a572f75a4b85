"""npu-hoist-casts: an f32 -> f16 cast of a batched matmul's operand moves
ahead of the layout ops (transpose, defractalize) that make its input.

Attention's Q, K and V arrive as projection -> bias add -> defractalize
(row-major) -> head transpose -> cast to f16 -> fractalize -> batch_matmul.
Layout ops move values unchanged, so casting first gives the same f16
values, and every layout op on the way then moves half the bytes. Moved
all the way, the cast follows the bias add in Nz: `npu-fuse-horizontal`
joins the three casts, `npu-fuse` applies the cast in the projection's
epilogue (the f16 rows are stored as C drains), and `npu-fuse-attention`
reads each head's f16 rows straight from the projection (the transposes
become its members) instead of casting them outside the kernel, or inside
it, per tile.

A hop moves `cast(X -> H)` where X's buffer is written by one layout op L
and read only by the cast: the cast is made at L, of L's input into a new
f16 buffer, L reads that, L's result buffer (and its views) becomes f16 and
stands for H. Only casts whose result is read by one fractalize whose
result only a batch_matmul reads are moved: the merged attention context
(transpose -> cast -> fractalize -> matmul) is left to npu-fuse-attention,
whose kernel stores it merged. And only when the cast then reads what an
op of the program computes (it joins that op's kernel): a cast of a
function argument would be a kernel of its own, which the attention
kernel does better on chip.
"""

from __future__ import annotations

import math

from mlir import ir

from npu import ir as nir
from npu.passes.base import Option, Pass
from npu.passes.applies import BATCH_MATMULS

LAYOUT_OPS = ("ascend.transpose", "ascend.defractalize")
# Views that keep the element type of their source (no byte reinterpretation).
TYPED_VIEWS = ("memref.subview", "memref.collapse_shape", "memref.expand_shape", "memref.cast")


class HoistCastsPass(Pass):
    name = "npu-hoist-casts"
    acts_on = BATCH_MATMULS  # every option: the program has one
    summary = "Move f32 -> f16 casts of batch_matmul operands ahead of transposes and defractalizes"
    options = (
        Option("remarks", bool, True, "report each cast moved and the layout ops it crossed"),
    )

    def run(self, module: ir.Operation) -> None:
        for func in nir.functions(module):
            if len(func.regions[0].blocks):
                self.hoist_function(func)

    def hoist_function(self, func: ir.Operation) -> None:
        casts = [o.operation for o in func.regions[0].blocks[0].operations
                 if o.operation.name == "ascend.cast" and _feeds_batch_matmul(o.operation)]
        for cast in casts:
            if _planned_crossings(cast) is None:
                continue
            crossed = []
            while True:
                moved = _hop(cast)
                if moved is None:
                    break
                cast, layout = moved
                crossed.append(layout)
            if crossed and self.remarks:
                self.remark(cast, "npu-hoist-casts: cast to f16 moved ahead of "
                            + ", ".join(f"'{op}'" for op in crossed)
                            + " (the same values; the layout ops move half the bytes)")


def touching(root: ir.Value) -> list[ir.Operation]:
    """The ops other than views that use `root` (an alloc or an argument)
    or a view of it."""
    found, pending, seen = [], [root], []
    while pending:
        for use in pending.pop().uses:
            owner = use.owner.operation
            if owner.name in nir.VIEW_OPS:
                if owner not in seen:
                    seen.append(owner)
                    pending.extend(owner.results)
            elif owner not in found:
                found.append(owner)
    return found


def _feeds_batch_matmul(cast: ir.Operation) -> bool:
    half = cast.operands[-1]
    readers = [o for o in touching(nir.view_root(half)) if o != cast]
    if len(readers) != 1 or readers[0].name != "ascend.fractalize":
        return False
    nz = nir.view_root(readers[0].operands[-1])
    users = [o for o in touching(nz) if o != readers[0]]
    return (len(users) == 1 and users[0].name == "ascend.batch_matmul"
            and nir.view_root(users[0].operands[-1]) != nz)


def _layout_writer(src: ir.Value, reader: ir.Operation) -> ir.Operation | None:
    """The layout op writing all of `src`'s buffer, when only `reader`
    reads it (as a whole) and its views keep their element type."""
    root = nir.view_root(src)
    alloc = nir.defining_op(root)
    if alloc is None or alloc.name != "memref.alloc" \
            or any(op.name not in TYPED_VIEWS for op in nir.view_closure(root)[1:]):
        return None
    others = [o for o in touching(root) if o != reader]
    if len(others) != 1 or others[0].name not in LAYOUT_OPS:
        return None
    layout = others[0]
    if nir.view_root(layout.operands[-1]) != root or not _whole(layout.operands[-1], root) \
            or not _whole(src, root) or layout.parent != reader.parent \
            or not layout.is_before_in_block(reader):
        return None
    return layout


def _planned_crossings(cast: ir.Operation) -> list[ir.Operation] | None:
    """The layout ops the cast would cross, when it would then read the
    result of the op computing its values (a bias add, a matmul: the cast
    joins that op's epilogue or row group); None when it would end at a
    function argument or another layout op, as a kernel of its own (an
    attention kernel casts such inputs on chip)."""
    crossed, src, reader = [], cast.operands[0], cast
    while (layout := _layout_writer(src, reader)) is not None:
        crossed.append(layout)
        src, reader = layout.operands[0], layout
    root = nir.view_root(src)
    producers = [o for o in touching(root) if o != reader]
    if not crossed or nir.defining_op(root) is None or len(producers) != 1 \
            or not producers[0].name.startswith("ascend.") or producers[0].name in LAYOUT_OPS \
            or nir.view_root(producers[0].operands[-1]) != root:
        return None
    return crossed


def _whole(value: ir.Value, root: ir.Value) -> bool:
    """`value` is all of `root`'s elements, dense, from its first."""
    return (nir.is_contiguous(value) and nir.memref_layout(value)[1] == 0
            and math.prod(nir.memref_shape(value)) == math.prod(nir.memref_shape(root)))


def _hop(cast: ir.Operation) -> tuple[ir.Operation, str] | None:
    """Move `cast` ahead of the layout op writing its input: (the new cast,
    that op's name), or None (nothing changed) when it may not move."""
    src, dst = cast.operands[0], cast.operands[-1]
    if nir.memref_element(src) != "f32" or nir.memref_element(dst) != "f16":
        return None
    layout = _layout_writer(src, cast)
    if layout is None or nir.view_root(dst) is not dst or nir.defining_op(dst) is None \
            or nir.defining_op(dst).name != "memref.alloc":
        return None
    root = nir.view_root(src)
    closure = nir.view_closure(root)
    # The cast's result becomes `src` retyped: same shape and layout.
    if nir.memref_shape(src) != nir.memref_shape(dst) or nir.memref_layout(src) != nir.memref_layout(dst):
        return None
    readers = [o for o in touching(dst) if o != cast]
    if any(o.parent != cast.parent or not cast.is_before_in_block(o) for o in readers):
        return None
    uses = [u.owner.operation for u in dst.uses if u.owner.operation != cast]
    if any(u.parent != cast.parent for u in uses):
        return None
    if uses and not nir.hoist_definition(src, nir.in_block_order(uses)[0]):
        return None
    wide = layout.operands[0]
    with layout.context, cast.location, ir.InsertionPoint(layout):
        half = nir.alloc(nir.memref_shape(wide), "f16", nir.memory_space(wide))
        attrs = {name: cast.attributes[name] for name in cast.attributes}
        moved = ir.Operation.create("ascend.cast", results=[], operands=[wide, half],
                                    attributes=attrs)
        for value in [root] + [r for op in closure[1:] for r in op.results]:
            t = nir.memref_type(value)
            value.set_type(ir.MemRefType.get(t.shape, ir.F16Type.get(), t.layout, t.memory_space))
    layout.operands[0] = half
    cast.erase()
    dst_alloc = nir.defining_op(dst)
    dst.replace_all_uses_with(src)
    dst_alloc.erase()
    return moved, layout.name

