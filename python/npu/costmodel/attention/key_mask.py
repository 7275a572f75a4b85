"""An additive mask on the scores as part of the attention pattern, in one
of two forms:
  key     `scores + M` with M [1, .., 1, S] (one value per key), as HF
          exports BERT-style encoders with an `attention_mask` (0 for a
          key attended, a large negative value for a padded one): the
          fused kernel keeps M in UB and adds it to every row of the scores;
  scores  M [1, .., 1, S, S] (one value per query and key), as decoders
          export their causal mask (GPT-2: the causal triangle and the
          `attention_mask` combined at run time into one additive tensor),
          or [1, .., H, S, S], one per head (T5's relative position bias):
          the fused kernel keeps a shared M in UB when it is small, else
          reads each step's [query rows, keys] tile of M beside the scores'
          tile, and adds it on chip.
An attention may have one of each.
Both take any S: a row of S f32 values that ends inside a 32-byte block
has its last values realigned in UB (the key mask once a kernel; a mask of
the scores a row at a time, the last row of each tile realigned). Both are
lowered by `npu-lower-attention` (`key_mask`, `scores_mask`)."""

from __future__ import annotations

import math
from typing import Callable

from mlir import ir

from npu import ir as nir

KEY, SCORES = "key", "scores"  # the two forms (`Attention.mask_form`)


def key_mask_operand(add: ir.Operation, scores: ir.Value, scores_shape: list[int],
                     root: Callable[[ir.Value], ir.Value]) -> tuple[ir.Value, str, bool] | str:
    """(the mask operand of `add`, its form, whether it has one mask per
    head), where one of `add`'s operands is the scores' root `scores` (of
    `scores_shape`, [H, S, S]); or why it is not a mask the kernel takes."""
    a, b = add.operands[0], add.operands[1]
    if root(a) == scores and root(b) != scores:
        mask = b
    elif root(b) == scores and root(a) != scores:
        mask = a
    else:
        return "the scores are added to themselves"
    heads, seq = scores_shape[0], scores_shape[-1]
    shape = nir.memref_shape(mask)
    lead = [d for d in shape[:-2] if d != 1]
    per_head = False
    if shape and shape[-1] == seq and all(d == 1 for d in shape[:-1]):
        form = KEY
    elif len(shape) >= 2 and shape[-2:] == [seq, seq] and (not lead or math.prod(lead) == heads):
        # one per head: its leading dims those of the scores' heads (Swin's
        # windows x heads, `onnx_attention_bias`), contiguous: [heads, S, S]
        form, per_head = SCORES, bool(lead) and heads > 1
    else:
        return (f"the scores' addend has shape {shape}: the fused kernel takes a key mask "
                f"[1, .., 1, {seq}] or a mask of the scores [1, .., 1, {seq}, {seq}] "
                f"(shared by heads) or [1, .., {heads}, {seq}, {seq}] (one per head)")
    if nir.memref_element(mask) != "f32":
        return f"the mask is {nir.memref_element(mask)}, the fused kernel takes f32"
    if not nir.is_contiguous(mask):
        return "the mask is not a contiguous tensor"
    return mask, form, per_head
