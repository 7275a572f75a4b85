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
from npu.costmodel.vector.tiling import split_repeats
from npu.kernels.cce_build import sub
from npu.passes.lower_conv.channel_pattern import Later

ROWS = 256 // (16 * 2)  # rows of 16 f16 biases in one 256-byte repeat


def f32_bias_staging(co1: int) -> int:
    """UB bytes of the f32 pattern `f16_pattern` converts (live beside
    the conv's drain slots: its tiling leaves them out of its budget)."""
    return co1 * ROWS * 16 * 4


def f16_pattern(target, wide: ir.Value, later: Later | None = None) -> ir.Value:
    """The f32 bias pattern `wide` (the kernel's `bias_pattern`, 8 rows of
    16 a Cout block: one f16 repeat) converted to the f16 one the drain's
    vadd reads; with `later`, the conversion goes there (`channel_pattern`)."""
    count = nir.memref_shape(wide)[0]
    pattern = nir.alloc([count], "f16", "ub")
    lanes = target.lanes(4)

    def convert() -> None:
        for ins in split_repeats(count, lanes, target.max_repeat):
            span = (ins.repeat - 1) * lanes + ins.mask
            nir.create_op("cce.vconv", [sub(pattern, ins.offset, span), sub(wide, ins.offset, span)],
                          repeat=ins.repeat, mask=ins.mask, dst_blk_stride=1, src_blk_stride=1,
                          dst_rep_stride=4, src_rep_stride=8, round_mode="rint")
    convert() if later is None else later.append(convert)
    return pattern
