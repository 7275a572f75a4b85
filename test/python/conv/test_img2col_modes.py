"""npu-lower-conv issues img2col along whichever axis needs fewer
instructions: along M (repeat mode 1, one per K fractal) for tall bands,
along K (repeat mode 0, one per M fractal of the band) for small maps with
many channels, where the scalar unit's issue of per-K-fractal loads
dominates. Both against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

import npu
from conv_cases import conv_model, ort_run

CUBE = dict(rtol=3e-2, atol=3e-2)


@pytest.mark.parametrize("shape,mode", [
    (dict(c=40, h=5, w=7, cout=24, k=3), 0),             # K fractals 27, M fractals 3
    (dict(c=64, h=7, w=7, cout=32, k=3, stride=2), 0),   # strided windows from a raster start
    (dict(c=16, h=30, w=30, cout=16, k=3), 1),           # 9 K fractals, a tall band of M fractals
])
def test_img2col_repeat_mode(shape, mode):
    m = conv_model(dtype=np.float32, **shape)
    lowered = npu.compile(m, pipeline="npu-lower{emit=cce}").stages["lowered"]
    assert f"repeat_mode = {mode}" in lowered and f"repeat_mode = {1 - mode}" not in lowered
    x = np.random.default_rng(1).standard_normal((1, shape["c"], shape["h"], shape["w"])).astype(np.float32)
    (got,), report = npu.compile(m)(x)
    assert not report["hazards"]
    np.testing.assert_allclose(got, ort_run(m, {"x": x})[0], **CUBE)
