"""Per-channel vectors of a conv in UB as repeating patterns: the conv's
bias (`ConvKernel.bias_pattern`) and its epilogue's per-channel operands
(`ConvEpilogue.stage_patterns`).

A drained tile holds each Cout block's pixels as rows of 16 channels, so a
vector of one value per channel is, for one block, its 16 values repeated:
one 256-byte repeat of them (`rows` rows of 16) serves every repeat of the
block's run when read with repeat stride 0. Staged once per conv, the
pattern costs UB for the whole conv and no GM traffic per tile.
"""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.kernels.cce_build import View, copy, lin, sub


def channel_pattern(src: ir.Value, co1: int, rows: int) -> ir.Value:
    """The `co1 * 16` values of GM vector `src` (any contiguous shape, e.g.
    [Cout1 * 16] or [1, Cout1, 1, 1, 16]) as [Cout1, rows, 16] in UB, in its
    own type: each block's 16 values `rows` times over (`rows` copies of
    `co1` bursts, each writing row q of every block)."""
    flat = nir.flatten_memref(src)
    elem = nir.memref_element(src)
    pattern = nir.alloc([co1 * rows * 16], elem, "ub")
    blocks = nir.element_bytes(elem) // 2  # 32-byte blocks of one row of 16
    for q in range(rows):
        dst = nir.subview(pattern, [q * 16], [co1 * rows * 16 - q * 16])
        copy("cce.copy_gm_to_ub", flat, dst, co1, blocks, 0, (rows - 1) * blocks)
    return pattern


def rows_of(elem: str, repeat_bytes: int = 256) -> int:
    """Rows of 16 values of type `elem` in one vector repeat."""
    return repeat_bytes // (16 * nir.element_bytes(elem))


def block_view(pattern: ir.Value, block: int | ir.Value, per_block: int) -> View:
    """Cout block `block`'s repeat of `pattern` (`per_block` elements), as a
    vector source read with repeat stride 0: every repeat sees it whole."""
    return View(sub(pattern, lin((block, per_block)), per_block), 1, 0)
