"""A [1, k, j, l] -> [1, j, k, l] transpose whose k (3 channels) no core
count above 3 divides splits over runs of its j, the result's rows
(`rules._split_swapped_rows` with SOURCE_J; npu-lower-transpose reads each
k row's run as a burst of its own): ViT-base's patch gather, [1, 3, 196,
256] f32, ran on one core (18,281 cycles of its phase on 32 cores; 2,469
on 28): the export on 32 cores 132,326 -> 116,534 cycles."""

from __future__ import annotations

import numpy as np

from npu import diagnostics
from npu.ir import make_context, parse_module
from npu.pipeline import run_pipeline
from npu.simulator import simulate
from npu.target import get_target

SRC = 'memref<1x3x56x64xf32, "gm">'
DST = 'memref<1x56x3x64xf32, "gm">'
GATHER = f"""func.func @gather(%x: {SRC}, %y: {DST}) {{
  "ascend.transpose"(%x, %y) {{permutation = array<i64: 0, 2, 1, 3>}} : ({SRC}, {DST}) -> ()
  return
}}
"""
MANY = ("builtin.module(npu-lower{{cores={n} split-cores-min-bytes=0 split-cores-estimate=false "
        "split-cores-remarks=true}})")


def _run(pipeline: str, x: np.ndarray) -> tuple:
    t = get_target("ascend910")
    module = parse_module(GATHER, make_context())
    with diagnostics.collecting() as engine:
        run_pipeline(module, pipeline, t)
    said = [d.message for d in engine.diagnostics if "npu-split-cores:" in d.message]
    return simulate(module, [x, np.zeros((1, 56, 3, 64), np.float32)], target=t), said


def test_a_transpose_of_three_channels_splits_over_its_rows() -> None:
    x = np.random.default_rng(2).standard_normal((1, 3, 56, 64)).astype(np.float32)
    one, _ = _run("builtin.module(npu-lower{cores=1})", x)
    many, said = _run(MANY.format(n=8), x)
    assert any("ascend.transpose 8" in s for s in said), said
    assert many.report["block_dim"] == 8 and many.hazards == []
    assert np.array_equal(many.outputs[1], x.transpose(0, 2, 1, 3))
    assert np.array_equal(one.outputs[1], many.outputs[1])
    assert many.cycles < one.cycles
