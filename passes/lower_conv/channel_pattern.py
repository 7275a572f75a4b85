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

from typing import Callable

from mlir import ir

from npu import ir as nir
from npu.kernels.cce_build import View, copy, lin, sub


# Vector work on the patterns that the caller emits once its first loads are out
Later = list[Callable[[], None]]


def channel_pattern(src: ir.Value, co1: int, rows: int, later: Later | None = None) -> ir.Value:
    """The `co1 * 16` values of GM vector `src` (any contiguous shape, e.g.
    [Cout1 * 16] or [1, Cout1, 1, 1, 16]) as [Cout1, rows, 16] in UB, in its
    own type: each block's 16 values `rows` times over. One GM copy writes
    row 0 of every block (`co1` bursts); UB -> UB copies on the vector unit
    then double the rows filled (1 -> 2 -> 4 -> 8). A GM copy per row made
    MTE2 move the vector `rows` times in short bursts before the conv's
    first map and weights: 1,375 cycles for 1024 f32 biases, on the pipe
    that bounds most 1x1 convs. With `later`, the UB copies are appended to
    it for the caller to emit after its first loads: right behind the GM
    copy they would need its flag there, and a flag holds MTE2 for a GM
    latency before the loads that follow it (`npu-insert-sync`'s sink-sets)."""
    flat = nir.flatten_memref(src)
    elem = nir.memref_element(src)
    size = co1 * rows * 16
    pattern = nir.alloc([size], elem, "ub")
    blocks = nir.element_bytes(elem) // 2  # 32-byte blocks of one row of 16
    copy("cce.copy_gm_to_ub", flat, pattern, co1, blocks, 0, (rows - 1) * blocks)

    def fill() -> None:
        filled = 1
        while filled < rows:
            n = min(filled, rows - filled)
            gap = (rows - n) * blocks
            copy("cce.copy_ub_to_ub", nir.subview(pattern, [0], [size - filled * 16]),
                 nir.subview(pattern, [filled * 16], [size - filled * 16]), co1, n * blocks,
                 gap, gap)
            filled += n
    fill() if later is None else later.append(fill)
    return pattern


def rows_of(elem: str, repeat_bytes: int = 256) -> int:
    """Rows of 16 values of type `elem` in one vector repeat."""
    return repeat_bytes // (16 * nir.element_bytes(elem))


def block_view(pattern: ir.Value, block: int | ir.Value, per_block: int) -> View:
    """Cout block `block`'s repeat of `pattern` (`per_block` elements), as a
    vector source read with repeat stride 0: every repeat sees it whole."""
    return View(sub(pattern, lin((block, per_block)), per_block), 1, 0)
