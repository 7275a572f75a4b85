"""An additive key mask on the scores as part of the attention pattern:
`scores + M` with M [1, .., 1, S] (one value per key, the same for every head
and query), as HF exports BERT-style encoders with an `attention_mask`
(0 for a key attended, a large negative value for a padded one). The
fused kernel adds M to every row of the scores on chip
(`npu-lower-attention`, `key_mask`)."""

from __future__ import annotations

from typing import Callable

from mlir import ir

from npu import ir as nir


def key_mask_operand(add: ir.Operation, scores: ir.Value, seq: int,
                     root: Callable[[ir.Value], ir.Value]) -> ir.Value | str:
    """The mask operand of `add` (one of whose operands is the scores' root
    `scores`), or why it is not a key mask."""
    a, b = add.operands[0], add.operands[1]
    if root(a) == scores and root(b) != scores:
        mask = b
    elif root(b) == scores and root(a) != scores:
        mask = a
    else:
        return "the scores are added to themselves"
    shape = nir.memref_shape(mask)
    if not shape or shape[-1] != seq or any(d != 1 for d in shape[:-1]):
        return (f"the scores' addend has shape {shape}: the fused kernel takes a key mask "
                f"[1, .., 1, {seq}] (one value per key, shared by heads and queries)")
    if nir.memref_element(mask) != "f32":
        return f"the key mask is {nir.memref_element(mask)}, the fused kernel takes f32"
    if (seq * 4) % 32:
        return f"the key mask's {seq} f32 values are not whole 32-byte blocks"
    if not nir.is_contiguous(mask):
        return "the key mask is not a contiguous tensor"
    return mask
