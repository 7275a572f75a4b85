"""The f32 -> f16 cast after a conv, done by the drain itself (when its
`npu.conv_epilogue` group says `compute = "f16"`: `npu-fuse`'s
`epilogue-f16`, as for matmul epilogues; README "Precision").

An f16 model's conv reaches `npu-lower-conv` with an f32 result (and an f32
bias, batch-norm folded) followed by `ascend.cast` to f16, usually the first
member of its `npu.conv_epilogue` group. Run as written, each drained
fractal costs the vector unit the L0C -> UB copy (8 cycles for 1 KiB of
f32), the bias add in f32 (4 repeats) and the cast (4 repeats of 64 lanes):
16 of the 20 cycles a fractal of MobileNetV2's ReLU6 convs took, which made
its pointwise and depthwise layers bound by V. The L0C -> UB copy converts
to f16 on the way for free, so with the cast folded in the drain is the
copy and an f16 bias add (2 repeats): the bias rounded to f16 once per
conv, the sum rounded once more: the bias add rounds twice, as in a
matmul's f16 epilogue (`npu-lower{fuse-epilogue-bias-f32=true}` or
`fuse-epilogue-f16=false` keep the f32 add and one rounding).
"""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.kernels.cce_build import copy

ROWS = 256 // (16 * 2)  # rows of 16 f16 biases in one 256-byte repeat


def f32_bias_staging(co1: int) -> int:
    """UB bytes of the f32 pattern `f16_bias_pattern` converts (live beside
    the conv's drain slots: its tiling leaves them out of its budget)."""
    return co1 * ROWS * 16 * 4


def f16_bias_pattern(target, bias: ir.Value, co1: int) -> ir.Value:
    """The f32 bias of every Cout block as the f16 pattern the drain's vadd
    reads with repeat stride 0: [Co1, 8 rows, 16], each row the block's 16
    biases (8 rows of f16 = one 256-byte repeat)."""
    rows = ROWS
    wide = nir.alloc([co1 * rows * 16], "f32", "ub")
    blocks = 2  # 32-byte blocks of a row of 16 f32
    for q in range(rows):
        dst = nir.subview(wide, [q * 16], [co1 * rows * 16 - q * 16])
        copy("cce.copy_gm_to_ub", bias, dst, co1, blocks, 0, (rows - 1) * blocks)
    pattern = nir.alloc([co1 * rows * 16], "f16", "ub")
    lanes = target.lanes(4)
    repeats = co1 * rows * 16 // lanes
    for r0 in range(0, repeats, target.max_repeat):
        rep = min(target.max_repeat, repeats - r0)
        nir.create_op("cce.vconv", [nir.subview(pattern, [r0 * lanes], [rep * lanes]),
                                    nir.subview(wide, [r0 * lanes], [rep * lanes])],
                      repeat=rep, mask=lanes, dst_blk_stride=1, src_blk_stride=1,
                      dst_rep_stride=4, src_rep_stride=8, round_mode="rint")
    return pattern
