"""The softmax of `npu-lower-attention`'s steps in f16 (`softmax = "f16"`):
the scores leave L0C rounded to f16 by the move itself, and the row max,
the scaled shift and exp run on 128 lanes a repeat; no cast of P. This is
CANN's high-performance mode of PromptFlashAttention (innerPrecise = 1);
the f32 mode (`softmax.py`) keeps the max and the shift in f32.

The shift of a row is an f16 offset r = round16(-a * max) (a: the scale's
f16 value when it rides on the shift, else 1), so P = exp(a * s + r) with
one vmadd (a = 1: one vadd). Rounding is monotone, so over key tiles the
running offset is the minimum of the tiles' offsets, and alpha =
exp(r_new - r_old) (in f32) rescales the earlier tiles' context by exactly
the change of the offset their P was made with. The row sums stay the
cube's (the ones column of V: f32 sums of the f16 P).

Padded keys: their lanes of the last slab are clamped (vmin) to -F16_MAX
before the row max (so the max is a valid key's) and again after the
shift (exp(-F16_MAX) is 0 in f16 whatever the scale, where a -6e4 score
times a tiny scale would not vanish). Scores past f16's range (|s| >
65504) become infinite: the f32 mode is the one for such inputs."""

from __future__ import annotations

from typing import Callable

import numpy as np
from mlir import ir

from npu import ir as nir
from npu.costmodel.vector.recipes import Compute, cast_compute, unary_compute

# The largest finite f16 (valid lanes of the key clamp: min(s, F16_MAX) = s).
F16_MAX = float(np.finfo(np.float16).max)
# Half-precision element sizes for `apply` (dst bytes, src bytes).
HALF, WIDEN, NARROW = (2, 2), (4, 2), (2, 4)


class HalfSoftmax:
    """Mixed into the kernel with `SoftmaxSteps` (its `apply`, `row_reduce`,
    `broadcast`, `per_run`, `emit_runs`; `a`, `t`, `mm`, `prescale`,
    `scale_p`, `scale_block` (f16), `row_max`)."""

    def softmax_tile_f16(self, sc: ir.Value, pl1: ir.Value, mq: int, kbk: int,
                         alpha: ir.Value | None, masked: bool, key0=0) -> None:
        """`softmax_tile` in f16: scores L0C -> UB as f16, key clamp, the
        tile's row max and offset, the running offset (online: `row_max`
        holds it in f32; `alpha` = exp(r_new - r_old), None: the first
        tile), then P = exp(a * s + r) in place and P -> L1."""
        a = self.a
        rows = mq * 16
        slab, count = rows * 16, kbk * rows * 16
        scores = nir.alloc([count], "f16", "ub")
        self.mm.move_to_ub(sc, scores, kbk * mq)  # rounded to f16 by the move
        self.add_key_mask(scores, kbk, rows, key0, scaled=False)
        if self.prescale:
            self.apply(Compute("scalar", vop="cce.vmuls", scalar=a.scale), scores, [scores],
                       count, sizes=HALF)
        self.add_key_mask(scores, kbk, rows, key0, scaled=True)
        limit = self.key_limit(rows, a.seq % 16) if masked else None
        if masked:
            self.clamp_keys(scores, limit, kbk, slab)
        offset = self.row_reduce(scores, kbk, rows, "cce.vmax", "cce.vcmax", None, "f16")
        # r = round16(-a * max), in place of the tile's max.
        self.apply(Compute("scalar", vop="cce.vmuls", scalar=-(a.scale if self.scale_p else 1.0)),
                   offset, [offset], rows, sizes=HALF)
        online = kbk < a.seq_blocks
        if alpha is None:
            if online:  # the running offset starts at the first tile's
                self.apply(cast_compute("f16", "f32", "none"), self.row_max, [offset], rows,
                           sizes=WIDEN)
        else:
            tile = nir.alloc([rows], "f32", "ub")
            self.apply(cast_compute("f16", "f32", "none"), tile, [offset], rows, sizes=WIDEN)
            new = nir.alloc([rows], "f32", "ub")
            vmin, vsub = Compute("binary", vop="cce.vmin"), Compute("binary", vop="cce.vsub")
            self.apply(vmin, new, [self.row_max, tile], rows)
            self.apply(vsub, alpha, [new, self.row_max], rows)
            self.apply(vmin, self.row_max, [self.row_max, tile], rows)  # after alpha's read
            offset = nir.alloc([rows], "f16", "ub")
            self.apply(cast_compute("f32", "f16", "rint"), offset, [new], rows,
                       sizes=NARROW)  # exact: the minimum of f16 values
            self.apply(unary_compute("ascend.exp", "f32"), alpha, [alpha], rows)
            self.guard_alpha(alpha, new, rows)
        shift = self.broadcast(offset, rows, "f16")
        self.guard_rows(shift, rows, "f16")
        per_run = self.per_run(kbk)
        self.emit_runs([self.p_run_f16(scores, pl1, shift, limit, j0, min(kbk, j0 + per_run),
                                       mq, kbk) for j0 in range(0, kbk, per_run)])

    def p_run_f16(self, scores: ir.Value, pl1: ir.Value, shift: ir.Value,
                  limit: ir.Value | None, j0: int, j1: int, mq: int,
                  kbk: int) -> list[Callable[[], None]]:
        """The stages of P's run of key slabs j0..j1-1 in f16: a * s + r
        (one vmadd with the scale's block, or one vadd), the padded keys
        clamped again, then exp in place and the copy to L1."""
        slab = mq * 16 * 16

        def shifted() -> None:
            self.shift_slabs(scores, shift, j0, j1, slab, "cce.vadd", sizes=HALF)
            if limit is not None and j1 == kbk:
                self.clamp_keys(scores, limit, kbk, slab)

        def exp_to_l1() -> None:
            self.exp_to_l1(scores, pl1, j0, j1, mq, kbk)

        return [shifted, exp_to_l1]

    def clamp_keys(self, scores: ir.Value, limit: ir.Value, kbk: int, slab: int) -> None:
        """The last slab's padded keys -> -F16_MAX (min with `key_limit`)."""
        last = (kbk - 1) * slab
        self.apply(Compute("binary", vop="cce.vmin"), scores, [scores, limit], slab,
                   offsets=(last, last, 0), sizes=HALF)

    def key_limit(self, rows: int, valid_keys: int) -> ir.Value:
        """A [rows, 16] f16 slab: F16_MAX for the first `valid_keys` lanes of
        each row, -F16_MAX for the padded keys."""
        limit = nir.alloc([rows * 16], "f16", "ub")
        self.fill(limit, rows * 16, "f16", -F16_MAX)
        nir.create_op("cce.vdup", [limit], repeat=rows, mask=valid_keys, dst_blk_stride=1,
                      dst_rep_stride=16 * 2 // self.granule, scalar=F16_MAX)
        return limit
