"""Scalings of a batched matmul's operands moved onto its result.

Attention's scale 1/sqrt(d) may be applied to the scores, to Q alone, or
split over Q and K (torch.onnx's scaled_dot_product_attention multiplies
each by d^-1/4), or to Q's projection before the heads split (BART's
`q_proj(x) * scaling`). The fused attention (`npu.costmodel.attention.pattern`)
takes the scale on the scores, where it costs nothing on chip. An operand
`muls(X, c) -> [defractalize, transpose, ...] -> cast f32->f16 -> fractalize
-> batch_matmul` (reshapes between them too), each step a temporary read only by the next, loses its muls
(the chain reads X), and the product of the factors of both operands
scales the result after its defractalize (or after the batch_matmul when
no defractalize alone reads it). A scaling already on the scores then
folds with it (`scalings.fold_scalings`).

Rounding accepted: the scaled operand was rounded to f16 after the scaling;
now the unscaled one is, and the f32 scores are scaled once: each score
moves by at most one f16 rounding of its operands, the error the cube's
f16 operands have anyway (the scores are no less accurate: one rounding
of the scale's product instead of two).
"""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.passes.canonicalize import buffers as buf
from npu.passes.canonicalize.scalings import factor_ok

# Ops between the scaling and the batch_matmul that move values unchanged
# (or round them to f16, the cast), so the scaling commutes with them.
PASS_THROUGH = ("ascend.transpose", "ascend.cast", "ascend.fractalize", "ascend.defractalize")


def move_matmul_scales(func: ir.Operation) -> list[ir.Operation]:
    """Every batch_matmul whose operands are scaled: the scaling moved to
    its result; returns the batch_matmuls changed."""
    changed = []
    for op in [o.operation for o in func.regions[0].blocks[0].operations]:
        if op.name != "ascend.batch_matmul" or nir.memref_element(op.operands[-1]) != "f32":
            continue
        scales = [s for s in (_operand_scale(op, i) for i in (0, 1)) if s is not None]
        if not scales:
            continue
        c = 1.0
        for m in scales:
            c *= nir.float_attr(m, "scalar")
        if not factor_ok("f32", c):
            continue
        for m in scales:
            _drop(m)
        if c != 1.0:
            _scale_result(op, c)
        changed.append(op)
    return changed


def _operand_scale(mm: ir.Operation, i: int) -> ir.Operation | None:
    """The muls scaling operand `i` through a chain of pass-through steps
    ending in a cast to f16 and a fractalize, or None."""
    value, reader = mm.operands[i], mm
    while True:
        found = buf.link(value)
        if found is None or found.reader != reader:
            return None
        writer = found.writer
        if writer.name == "ascend.muls":
            src = writer.operands[0]
            if src.type != found.root.type or _written_after(src, writer):
                return None
            return writer
        if writer.name not in PASS_THROUGH or len(writer.operands) != 2:
            return None
        value, reader = writer.operands[0], writer


def _written_after(value: ir.Value, op: ir.Operation) -> bool:
    """Some op after `op` writes `value`'s buffer (then `op`'s readers may
    not read it in place of `op`'s result)."""
    root = nir.view_root(value)
    return any(buf.writes(o, root) and o.parent == op.parent and op.is_before_in_block(o)
               for o in buf.touching(root))


def _drop(m: ir.Operation) -> None:
    """Erase muls `m`: its readers read its input instead."""
    src, dst = m.operands[0], m.operands[-1]
    root = nir.view_root(dst)
    m.erase()
    first = nir.in_block_order([u.owner.operation for u in root.uses])[0]
    if not nir.hoist_definition(src, first):
        raise AssertionError("the input of a muls is a view or an alloc")
    alloc = nir.defining_op(root)
    root.replace_all_uses_with(src)
    alloc.erase()


def _scale_result(mm: ir.Operation, c: float) -> None:
    """The scores, scaled by `c` once they are computed."""
    out = mm.operands[-1]
    d = buf.consumer(out, "ascend.defractalize", mm)
    at = d if d is not None and buf.plain(d.operands[-1]) else mm
    final = at.operands[-1]
    temp = buf.fresh_like(final, at)
    at.operands[len(at.operands) - 1] = temp
    buf.scalar_op("ascend.muls", temp, final, c, at, after=True)
