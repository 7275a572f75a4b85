"""A ResNet stem's max pool (3x3/2, pad 1) on its conv's drain
(`npu.costmodel.conv.stem_pool`, `passes/lower_conv/drain_pool.py`): npu-fuse
joins the pool to the conv's group on one core, and only the pooled map
leaves the core. Numerics against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

import npu

from conv_cases import ort_run, stem_pool_model

CUBE = dict(rtol=2e-2, atol=2e-2)


def _stem_pool_model(h: int, w: int):
    return stem_pool_model(np.random.default_rng(0), h, w)


def _run(m, x: np.ndarray, cores: int = 1,
         pipeline: str = "npu-lower") -> tuple[np.ndarray, dict, bool]:
    """(output, report, whether the pool ran in the conv's kernel: a member of its op)."""
    (got,), report = npu.compile(m, cores=cores, pipeline=pipeline)(x)
    np.testing.assert_allclose(got.astype(np.float32), ort_run(m, {"x": x})[0].astype(np.float32),
                               **CUBE)
    conv = next(o for o in report["per_op"] if o["op"].endswith("(Conv)"))
    return got, report, any("MaxPool" in member for member in conv["members"])


@pytest.mark.parametrize("h,w", [(64, 64), (48, 96)])
def test_pool_on_the_drain_matches_onnxruntime(h, w):
    x = np.random.default_rng(1).standard_normal((1, 3, h, w)).astype(np.float16)
    assert _run(_stem_pool_model(h, w), x)[2]


def test_rows_not_whole_fractals_keep_the_pool_kernel():
    """A conv map 30 wide (not whole 16-pixel fractals): the pool runs apart."""
    x = np.random.default_rng(2).standard_normal((1, 3, 60, 60)).astype(np.float16)
    assert not _run(_stem_pool_model(60, 60), x)[2]


def test_conv_pool_false_keeps_the_pool_apart():
    """npu-lower's fuse-conv-pool=false reaches npu-fuse (npu-lower once set
    conv-pool from the core count alone, whatever was given)."""
    x = np.random.default_rng(1).standard_normal((1, 3, 64, 64)).astype(np.float16)
    assert not _run(_stem_pool_model(64, 64), x, pipeline="npu-lower{fuse-conv-pool=false}")[2]


def test_on_cores_the_pool_runs_apart():
    """Over cores the conv's row runs would need the row above theirs: npu-lower
    leaves the pool its own kernel (conv-pool off), split like the conv."""
    x = np.random.default_rng(3).standard_normal((1, 3, 64, 64)).astype(np.float16)
    assert not _run(_stem_pool_model(64, 64), x, cores=4)[2]


def test_resnet_stem_with_its_pool_cycles():
    """ResNet's 224 stem, conv + ReLU + pool, one core: 92,097 cycles in all
    with the conv (47,736) and the pool (33,306) as two kernels; the conv
    with the pool on its drain 51,566 (62,621 in all, the rest the NCHW
    output's conversion)."""
    x = np.random.default_rng(4).standard_normal((1, 3, 224, 224)).astype(np.float16)
    _, report, joined = _run(_stem_pool_model(224, 224), x)
    assert joined and report["cycles"] <= 62_700, report["cycles"]
