"""A conv's first band on a core's share of 32 (`lower_conv/kernel.defer_map`,
`weights.map_in_blocks_pays`): its map goes out in one run, not block by
block beside the weight pieces, which npu-prefetch loads during the op
before it. Block by block, each run's flag held MTE2 for a GM latency
(ResNet-50 on 32 cores 320,739 -> 332,503 cycles); on one core the blocks
still go beside the pieces (test_conv_schedule.py)."""

from __future__ import annotations

import numpy as np

from npu.ir import make_context, parse_module
from npu.pipeline import run_pipeline
from npu.reference import evaluate
from npu.simulator import simulate
from npu.target import get_target


def _t(shape: list[int]) -> str:
    return f'memref<{"x".join(map(str, shape))}xf16, "gm">'


def _conv(x: str, w: str, b: str, y: str, types: list[str], k: int) -> str:
    pad = k // 2
    return (f'  "ascend.conv2d"({x}, {w}, {b}, {y}) {{strides = array<i64: 1, 1>, '
            f"pads = array<i64: {pad}, {pad}, {pad}, {pad}>, dilations = array<i64: 1, 1>, "
            f'groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: {k}, {k}>}} : '
            f"({', '.join(types)}) -> ()\n")


def chain() -> tuple[str, list[np.ndarray]]:
    """ResNet-50's layer2 bottleneck: 1x1 512 -> 128 then 3x3 128 -> 128 on
    28 x 28, weights host constants (npu-prefetch's conv form needs them)."""
    tx, ty = _t([1, 32, 28, 28, 16]), _t([1, 8, 28, 28, 16])
    tw1, tw2, tb = _t([32, 8, 16, 16]), _t([72, 8, 16, 16]), _t([128])

    def const(name: str, ty: str, shape: list[int]) -> str:
        dims = "x".join(map(str, shape))
        return f"{name}: {ty} {{npu.constant = dense<0.01> : tensor<{dims}xf16>}}"

    text = (f"func.func @f(%x: {tx}, {const('%w1', tw1, [32, 8, 16, 16])}, "
            f"{const('%b1', tb, [128])}, {const('%w2', tw2, [72, 8, 16, 16])}, "
            f"{const('%b2', tb, [128])}, %y1: {ty}, %y2: {ty}) {{\n"
            + _conv("%x", "%w1", "%b1", "%y1", [tx, tw1, tb, ty], 1)
            + _conv("%y1", "%w2", "%b2", "%y2", [ty, tw2, tb, ty], 3) + "  return\n}\n")
    x = np.random.default_rng(0).uniform(-1, 1, (1, 32, 28, 28, 16)).astype(np.float16)
    return text, [x, np.full((32, 8, 16, 16), 0.01, np.float16), np.full(128, 0.01, np.float16),
                  np.full((72, 8, 16, 16), 0.01, np.float16), np.full(128, 0.01, np.float16),
                  np.zeros((1, 8, 28, 28, 16), np.float16), np.zeros((1, 8, 28, 28, 16), np.float16)]


def test_prefetched_conv_map_goes_out_in_one_run_on_32_cores() -> None:
    """The 3x3 conv's pieces load before the chip barrier (npu-prefetch);
    its map in blocks went out in four runs, each behind the last one's
    GM latency, the last with the one piece left: 9,362 cycles. In one
    run as before the blocks: 8,536."""
    text, inputs = chain()
    module = parse_module(text, make_context())
    run_pipeline(module, "npu-lower{cores=32}", get_target())
    result = simulate(module, inputs, target=get_target())
    assert result.hazards == [] and result.report["block_dim"] > 16
    source = parse_module(text, make_context())
    want = evaluate(source.body.operations[0], inputs)[-1]
    np.testing.assert_allclose(result.outputs[-1].astype(np.float32), want.astype(np.float32),
                               rtol=3e-3, atol=3e-3)
    assert result.cycles < 8_800, result.cycles
