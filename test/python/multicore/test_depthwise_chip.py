"""Depthwise convs on many cores take the compact weights too
(`passes/lower_conv/compact_weights.py`): npu-split-cores has cut the
constant fractals by channel parts before npu-lower-conv runs, so the
constant is retyped whole and each core's slice re-cut along the compact
C1. Numerics against onnxruntime; the GM bytes read are the model's."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import npu

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "conv"))
from conv_cases import conv_model, ort_run, random_input  # noqa: E402

FORCED = "npu-lower{{cores={n} split-cores-min-bytes=0 split-cores-estimate=false}}"
TOL = dict(rtol=2e-2, atol=2e-2)  # test_depthwise_vector's


@pytest.mark.parametrize("n,c,h,stride", [(2, 64, 14, 1), (8, 96, 13, 2), (32, 960, 7, 1)])
def test_depthwise_on_many_cores_reads_compact_weights(n: int, c: int, h: int, stride: int) -> None:
    """On the vector unit over n cores, the GM reads are one core's: the
    layout conversions' and the conv's input map, C*3*3 f16 weights and
    bias, each once (test_depthwise_compact checks one core's; on n cores
    the fractals were read, 16x the weights: 960@7 on 32 cores read
    372,480 bytes against 113,280), and the result matches onnxruntime."""
    m = conv_model(c=c, cout=c, group=c, h=h, w=h, stride=stride, dtype=np.float16)
    x = random_input(m)
    kernel = npu.compile(m, target="ascend910", pipeline=FORCED.format(n=n))
    text = str(kernel.module)
    assert "vmla" in text and f"memref<{c // 16}x9x16xf16" in text
    (got,), report = kernel(x)
    np.testing.assert_allclose(got.astype(np.float32), ort_run(m, {"x": x})[0].astype(np.float32),
                               **TOL)
    assert report["block_dim"] > 1 and report["hazards"] == []
    _, one = npu.compile(m, target="ascend910", pipeline=FORCED.format(n=1))(x)
    assert report["bytes"]["gm_to_ub"] == one["bytes"]["gm_to_ub"]
