"""Depthwise convs on many cores take the compact weights too
(`passes/lower_conv/compact_weights.py`): npu-split-cores has cut the
constant fractals by channel parts before npu-lower-conv runs, so the
constant is retyped whole and each core's slice re-cut along the compact
C1. Numerics against onnxruntime; the GM bytes read are the model's."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import npu
from npu.ir import make_context, parse_module
from npu.pipeline import run_pipeline
from npu.target import get_target

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "conv"))
from conv_cases import conv_model, ort_run, random_input  # noqa: E402

_spec = importlib.util.spec_from_file_location(  # bench/conv.py's layers (its name is common)
    "bench_conv", Path(__file__).resolve().parents[3] / "bench" / "conv.py")
bench_conv = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_conv)

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
    _, one = npu.compile(m, target="ascend910", pipeline="npu-lower{cores=1}")(x)
    assert report["bytes"]["gm_to_ub"] == one["bytes"]["gm_to_ub"]


def test_grid_weighs_the_vector_path():
    """MobileNetV2's 144@56 stride-2 depthwise layer on 32 cores: npu-split-
    cores' conv rule weighs the vector path's estimate of a core's share
    beside the cube's, and takes 1 x 28 (rows) on the vector unit; by the
    cube's estimate alone it took 9 x 2 and stayed on the cube (3,727
    cycles against 2,420: bench/conv.py --cores 32)."""
    text, _ = bench_conv.conv_module(*bench_conv.LAYERS["dw 3x3/2 144 56"], depthwise=True)
    module = parse_module(text, make_context())
    run_pipeline(module, "npu-lower{cores=32}", get_target("ascend910"))
    lowered = str(module)
    assert "vmla" in lowered and "npu.block_dim = 28" in lowered


@pytest.mark.slow
def test_row_grid_on_the_vector_unit_matches_onnxruntime() -> None:
    """The same layer from ONNX on 32 cores (28 runs of one output row,
    each reading its halo rows), against onnxruntime."""
    m = conv_model(c=144, cout=144, group=144, h=56, w=56, stride=2, dtype=np.float16)
    x = random_input(m)
    kernel = npu.compile(m, target="ascend910", pipeline="npu-lower{cores=32}")
    assert "vmla" in str(kernel.module)
    (got,), report = kernel(x)
    np.testing.assert_allclose(got.astype(np.float32), ort_run(m, {"x": x})[0].astype(np.float32),
                               **TOL)
    assert report["block_dim"] == 28 and report["hazards"] == []
