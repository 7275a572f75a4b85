"""A conv whose drain slots are all it holds in UB stores its super tiles
two at a time (`ConvDrain.stores_pair`): the two stores leave side by side
and one set_flag after them frees both slots, so MTE3 waits one GM latency
per two stores, not per store. ResNet-50's layer1 downsample (1x1 64 -> 256
at 56, no epilogue member, `drains_as_none`) is such a conv."""

from __future__ import annotations

import numpy as np
import pytest

import npu

from conv_cases import ort_run
from test_drain_only_epilogue import _relu_then_1x1


@pytest.mark.parametrize("size", [56, 54])
def test_layer1_downsample_stores_in_pairs(size):
    """Numerics against onnxruntime, also with an odd number of bands (27 at
    54: the last super tile's store, held for a partner that never comes, is
    flushed at the conv's end); the stores come in pairs (each band's ds
    store is followed directly by the next one's); the 56 map's downsample
    within its MTE3 bound plus one latency per pair."""
    m = _relu_then_1x1(size)
    x = np.random.default_rng(1).standard_normal((1, 64, size, size)).astype(np.float16)
    kernel = npu.compile(m, cores=1)
    (got,), report = kernel(x)
    want = ort_run(m, {"x": x})[0]
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-2, atol=2e-2)
    ds = next(r for r in report["per_op"] if r["op"].startswith("ds "))
    if size == 56:
        # 1.6 MB at 64 B/cycle is 25.1k cycles of MTE3; 14 pairs' latencies 4.9k
        assert ds["exclusive_cycles"] <= 33_500, ds
