"""The bias of a 1x1 conv in the cube: one more K fractal whose A side is
ones and whose weights hold the bias, so every sum in L0C includes it and
the drain has no vadd.

Where a 1x1 conv's drain bounds it (ResNet-50's conv3 with its residual Add
and ReLU: the L0C -> UB move and three f16 passes on V, the cube a third of
that) the bias pass is a sixth of V's work, and an extra K fractal costs the
cube 1/K1 more. The map has no channel of ones (its blocks are all real
channels), so the ones come from an L1 buffer of their own, one band's pixels
of 16 ones, filled once per conv (vdup in UB, UB -> L1); the img2col of the
last K fractal reads it with the band's own fields. The weights are the
frontend's host constant [K1, Co1, 16, 16] with one fractal more: row 0 of
each block the bias (rounded to f16, as the drain's pattern rounds it),
the other rows zero, so the sum gains exactly bias * 1. Numerics: one
rounding of (sum + bias) to f16 where the drain rounded the sum, then the
sum plus the bias.

Applied where V is the busiest pipe of the conv's estimate and the
estimate is faster with it (`choose`): a cube-bound conv (a 1x1 with a
large K) gains nothing from a shorter drain and pays the extra fractal.
ResNet-50 on one core: its conv3 at 56 48.1k -> 43.5k cycles, at 28
25.9k -> 23.9k (bench/cnn_breakdown.py); the model 1,906,125 -> 1,890,901.

With the bias in the cube, a ReLU right after the drain's rounding cast is
the move's (`move_relu`): the conv drains as one of no epilogue (one store
a super tile, `one_store`). Taken where the drain's pipes bound the vector
recipe's estimate and that form's is faster: ResNet-50's layer1.0 conv3 and
downsample summed into one conv (`onnx_conv_sums`) with its ReLU, bound by
V and its stores' flags, 45,064 -> 31,894 cycles in the model.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from mlir import ir

from npu import ir as nir
from npu.costmodel.conv.stem_fold import constant_root, is_relu
from npu.costmodel.conv.tiling import ConvShape, ConvTiling, choose_tiling
from npu.dialects.ascend_conv import has_bias, layout
from npu.kernels.cce_build import copy
from npu.kernels.vector_compute import vdup_fill
from npu.passes.lower_conv.compact_weights import constant_chain

def applies(op: ir.Operation, s: ConvShape, out_f16: bool) -> bool:
    """A 1x1 f16 conv in layout "nc1hwc0" with a constant bias and constant
    weights that only it reads, whole (no core's channel part), its drain
    rounding to f16 (the bias then rounds to f16 either way)."""
    if (s.kh, s.kw) != (1, 1) or s.small or s.diagonal or s.int8 or s.fold or s.ones \
            or layout(op) != "nc1hwc0" or not has_bias(op) or not out_f16:
        return False
    if constant_root(op.operands[2]) is None:
        return False
    found = constant_chain(op.operands[1])
    return found is not None and not found[1] and nir.memref_element(op.operands[1]) == "f16"


def choose(op: ir.Operation, s: ConvShape, tiling: ConvTiling | None, out_f16: bool,
           target, budget: int, epilogue, sets: int,
           always: bool = False) -> tuple[ConvShape, ConvTiling] | None:
    """(shape with the ones fractal, its tiling) where that applies, V is
    the busiest pipe of the estimate of `tiling` (a shorter drain buys
    nothing elsewhere: ResNet-50's 14x14 conv3, bound by its weights' GM
    reads, estimated 152 cycles faster with it, simulated 4.6k slower in the
    model) and the cost model estimates it faster; else None. `always`:
    wherever it applies (option cube-bias=always, for tests)."""
    if tiling is None or not applies(op, s, out_f16) or (
            not always and max(tiling.pipes, key=lambda p: p[1])[0] != "V"):
        return None
    ones = replace(s, ones=1)
    t = choose_tiling(ones, target, budget, epilogue, sets)
    if t is None or not t.weights_resident or (not always and t.cycles >= tiling.cycles):
        return None
    return ones, t


def move_relu(op: ir.Operation, epi, s: ConvShape, out_f16: bool) -> ir.Operation | None:
    """The ReLU of a 1x1 f16 conv's epilogue that its drain's move may apply
    (`f32_to_f16_relu`), or None: the group is the drain's rounding cast and
    one f16 ReLU of its result, and nothing is added to the tile in between
    (no bias, or the bias in the cube: `applies`). The conv then drains as
    one of no epilogue, nothing on V but the move (a stem's drain does this
    already: `stem_fold.drain_relu`)."""
    if (s.kh, s.kw) != (1, 1) or s.small or s.diagonal or s.int8 or s.fold or not out_f16 \
            or layout(op) != "nc1hwc0":
        return None
    if epi is None or epi.as_none or epi.cast is None or epi.relu is not None \
            or epi.pool is not None or epi.also is not None or len(epi.members) != 1:
        return None
    relu = epi.members[0]
    if not is_relu(relu) or relu.operands[0] != epi.cast.operands[-1] \
            or nir.memref_element(relu.operands[-1]) != "f16":
        return None
    if has_bias(op) and not s.ones and not applies(op, s, out_f16):
        return None
    return relu


def drain_bound(tiling: ConvTiling) -> bool:
    """Whether the drain's pipes (V: the move and the vector passes, MTE3:
    the stores and the GM latency each one's flag pays) bound the estimate."""
    return max(tiling.pipes, key=lambda p: p[1])[0] in ("V", "MTE3")


def take_relu(epi, relu: ir.Operation) -> None:
    """`epi` drained as none (`drains_as_none`), `relu` on the move; `finish` drops it."""
    epi.as_none = True
    epi.members, epi.relu = [], relu
    epi.result = relu.operands[-1]


def with_bias_fractal(wz: ir.Value, bias: ir.Value) -> None:
    """The host constant behind `wz` ([K1, Co1, 16, 16]) with one more K
    fractal: row 0 of Cout block b the bias of its 16 channels."""
    root = constant_chain(wz)[0]
    w = nir.constant_argument(root)
    b = nir.constant_argument(constant_root(bias))
    co1 = w.shape[1]
    extra = np.zeros((1, *w.shape[1:]), w.dtype)
    extra[0, :, :, 0] = b[:co1 * 16].astype(np.float16).reshape(co1, 16)
    with wz.context:
        nir.retype_constant(root, np.concatenate([w, extra]))


def ones_map(target, in_rows: int, w: int) -> ir.Value:
    """An L1 map of one block of `in_rows` x `w` pixels, every channel 1.0:
    vdup into a UB tile, then UB -> L1 (the sync pass orders the two)."""
    count = in_rows * w * 16
    ub = nir.alloc([count], "f16", "ub")
    vdup_fill(target, ub, count, "f16", 1.0)
    l1 = nir.alloc([1, in_rows, w, 16], "f16", "l1")
    copy("cce.copy_ub_to_l1", ub, l1, 1, count * 2 // 32)
    return l1
