"""Whole models on many cores: split with chip barriers, they still match
onnxruntime; a model too small to pay for its barriers stays the one-core
program (never slower); npu-run's --cores for every kind of input."""

from __future__ import annotations

import json

import numpy as np
import onnxruntime
import pytest

import sys
from pathlib import Path

import npu
from npu.tools import npu_run

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "frontend"))
from onnx_models import mlp  # noqa: E402  (the frontend tests' model builders)

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
FORCED = "npu-lower{{cores={n} split-cores-min-bytes=0 split-cores-estimate=false}}"


def _run(model, n: int, x: np.ndarray, pipeline: str = FORCED):
    kernel = npu.compile(model, target="ascend910", pipeline=pipeline.format(n=n))
    (out,), report = kernel(x)
    return out, report


@pytest.mark.parametrize("n", [2, 8, 32])
def test_mlp_on_many_cores_matches_onnxruntime(n: int) -> None:
    model = mlp(batch=256, d_in=128, d_hidden=512, d_out=128)
    x = np.random.default_rng(1).standard_normal((256, 128)).astype(np.float32)
    (want,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    out, report = _run(model, n, x)
    np.testing.assert_allclose(out, want, rtol=2e-2, atol=2e-3)
    assert report["block_dim"] > 1 and report["hazards"] == []
    assert len(report["cores"]) == report["block_dim"]


@pytest.mark.parametrize("n", [2, 8, 32])
def test_ffn_block_on_many_cores_matches_onnxruntime(n: int) -> None:
    path = str(EXAMPLES / "ffn_block.onnx")
    x = np.random.default_rng(2).standard_normal((64, 128)).astype(np.float32)
    (want,) = onnxruntime.InferenceSession(path).run(None, {"x": x})
    out, report = _run(path, n, x)
    np.testing.assert_allclose(out, want, rtol=2e-2, atol=5e-3)
    assert report["block_dim"] > 1


def test_a_model_too_small_for_its_barriers_stays_on_one_core() -> None:
    model = mlp()  # 6 x 40 -> 72 -> 24
    x = np.random.default_rng(2).standard_normal((6, 40)).astype(np.float32)
    _, one = _run(model, 1, x, "npu-lower{{cores=1}}")
    _, many = _run(model, 32, x, "npu-lower{{cores={n}}}")
    assert many["cycles"] == one["cycles"] and many.get("block_dim", 1) == 1


@pytest.mark.parametrize("n", [2, 8, 32])
def test_many_cores_are_never_slower_than_one(n: int) -> None:
    path = str(EXAMPLES / "ffn_block.onnx")
    x = np.random.default_rng(2).standard_normal((64, 128)).astype(np.float32)
    _, one = _run(path, 1, x, "npu-lower{{cores=1}}")
    _, many = _run(path, n, x, "npu-lower{{cores={n}}}")
    assert many["cycles"] < one["cycles"]


def test_report_gives_each_core_and_the_chip(capsys) -> None:
    src = str(EXAMPLES / "ffn_block.onnx")
    assert npu_run.main([src, "--cores", "8", "--json", "--pipeline",
                         "npu-lower{split-cores-min-bytes=0}"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["block_dim"] == 8
    for c in rep["cores"]:
        assert 0 < c["busy_cycles"] <= rep["cycles"] and 0 < c["utilization"] <= 1
        assert c["barrier_wait_cycles"] >= 0
    chip = rep["chip"]
    assert chip["cores"] == 32 and chip["bound_cycles"] > 0
    assert chip["bound_unit"] in ("cube", "gm")


@pytest.mark.parametrize("src", ["ffn_block.onnx", "exp_1m.mlir"])
def test_cores_above_the_targets_are_refused(src: str, capsys) -> None:
    with pytest.raises(SystemExit) as e:
        npu_run.main([str(EXAMPLES / src), "--cores", "33"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["npu-run: error: --cores 33: ascend910 has 32 cores (see --help)"]


def test_cores_zero_is_all_of_the_targets(capsys) -> None:
    assert npu_run.main([str(EXAMPLES / "exp_1m.mlir"), "--cores", "0", "--json",
                         "--no-numerics"]) == 0
    assert json.loads(capsys.readouterr().out)["block_dim"] == 32


def _bert(**kw):
    from npu.frontend.bert import bert_layer

    return bert_layer(**kw).SerializeToString()


@pytest.mark.parametrize("n", [2, 8, 32])
def test_small_bert_layer_on_many_cores_matches_onnxruntime(n: int) -> None:
    model = _bert(seq=64, hidden=256, heads=4, ffn=1024)
    x = np.random.default_rng(3).standard_normal((1, 64, 256)).astype(np.float32)
    (want,) = onnxruntime.InferenceSession(model).run(None, {"x": x})
    out, report = _run(model, n, x, "npu-lower{{cores={n}}}")
    np.testing.assert_allclose(out, want, rtol=2e-2, atol=1e-2)
    assert report["hazards"] == []


@pytest.mark.slow
@pytest.mark.parametrize("n", [2, 8, 32])
def test_bert_base_layer_on_many_cores_matches_onnxruntime(n: int) -> None:
    model = _bert(seq=128)
    x = np.random.default_rng(0).standard_normal((1, 128, 768)).astype(np.float32)
    (want,) = onnxruntime.InferenceSession(model).run(None, {"x": x})
    out, report = _run(model, n, x, "npu-lower{{cores={n}}}")
    np.testing.assert_allclose(out, want, rtol=2e-2, atol=1e-2)
    assert report["block_dim"] == n and report["hazards"] == []


LINALG_ADD = """#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @f(%a: tensor<256x512xf32>, %b: tensor<256x512xf32>) -> tensor<256x512xf32> {
  %e = tensor.empty() : tensor<256x512xf32>
  %r = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<256x512xf32>, tensor<256x512xf32>) outs(%e : tensor<256x512xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<256x512xf32>
  return %r : tensor<256x512xf32>
}
"""


def test_cores_for_a_linalg_module(tmp_path, capsys) -> None:
    src = tmp_path / "add.mlir"
    src.write_text(LINALG_ADD)
    assert npu_run.main([str(src), "--cores", "8", "--check", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["block_dim"] == 8 and rep["check"]["passed"]


def test_the_default_is_every_core_and_cores_one_is_one() -> None:
    path = str(EXAMPLES / "ffn_block.onnx")
    x = np.random.default_rng(3).standard_normal((64, 128)).astype(np.float32)
    (want,) = onnxruntime.InferenceSession(path).run(None, {"x": x})
    (out,), default = npu.compile(path)(x)
    (single,), one = npu.compile(path, cores=1)(x)
    np.testing.assert_allclose(out, want, rtol=2e-2, atol=5e-3)
    assert default["block_dim"] > 1 and default["cycles"] < one["cycles"]
    assert one.get("block_dim", 1) == 1
    _, pinned = _run(path, 1, x, "npu-lower{{cores=1}}")
    assert one["cycles"] == pinned["cycles"]


def test_a_cnn_splits_its_convs_over_the_cores() -> None:
    """Each conv (and its epilogue: bias, ReLU, the residual add) over a grid
    of its two images, its output channel blocks and runs of its rows.
    Against one core within an f16 ulp, not bit for bit: each core's conv
    is tiled for its own share, and the host's f32 products of another tile
    shape may round differently."""
    from npu.frontend.cnn import resnet

    model = resnet(18, size=32, width=64, classes=10, layers=[1, 1, 1, 1], batch=2)
    x = np.random.default_rng(4).standard_normal((2, 3, 32, 32)).astype(np.float32)
    (want,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"input": x})
    (one_out,), one = npu.compile(model, cores=1)(x)
    (out,), many = npu.compile(model, cores=32)(x)
    np.testing.assert_allclose(out, want, rtol=3e-2, atol=3e-2)
    np.testing.assert_allclose(out, one_out, rtol=0, atol=2e-3)  # an f16 ulp of the logits
    assert many["block_dim"] == 32 and many["hazards"] == []
    assert many["cycles"] * 3 < one["cycles"]
