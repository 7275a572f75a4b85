"""BERT-base's encoder layer at seq 128 on the whole chip (issue 28): its
simulated cycles against the chip's ideal (the target's cube cycles over
its cores or the model's GM bytes once over its bus, report["chip"]).
Its output is onnxruntime's (within the tolerance of test_models.py), and
bit for bit that of the same split without npu-prefetch, which moves loads
but no arithmetic. (Not the one-core program's bit for bit: on one core
Q, K and V are one matmul, npu-fuse-horizontal, which sums in another
order; 22,733 of its outputs differed in their last bits before this
test too.)"""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest

import npu

# bench/chip.py, ascend910, 32 cores: 52,031 cycles (3.38x the ideal of
# 15,412) before the sync pass took the chip barrier as an order and the
# share-guarded projections' weights were prefetched; 51,327 (3.33x) after;
# 50,751 (3.29x) before the split's grids counted npu-prefetch's early
# weights (out_proj 8x4, ffn_in 16x2), 49,151 (3.19x) after. The report's
# ideal is now the model's, 12,486 (npu.frontend.problem): 50,751 is 4.06x,
# 49,151 3.94x; 48,481 3.88x before npu-prefetch counted a matmul tail's
# last load landing, 48,127 3.85x after; 46,719 3.74x once MTE2's loads
# (the next op's weights) streamed on through the chip barriers.
RATIO = 3.8


def _layer():
    from npu.frontend.bert import bert_layer

    return bert_layer(seq=128).SerializeToString()


@pytest.mark.slow
def test_bert_base_layer_on_32_cores_within_its_bound_of_the_chip_ideal() -> None:
    model = _layer()
    x = np.random.default_rng(0).standard_normal((1, 128, 768)).astype(np.float32)
    many = npu.compile(model, target="ascend910", pipeline="npu-lower{cores=32}")
    (out,), report = many(x)
    assert report["block_dim"] == 32 and report["hazards"] == []
    assert report["cycles"] <= RATIO * report["chip"]["bound_cycles"], (
        report["cycles"], report["chip"]["bound_cycles"])
    (want,) = onnxruntime.InferenceSession(model).run(None, {"x": x})
    np.testing.assert_allclose(out, want, rtol=2e-2, atol=1e-2)
    plain = npu.compile(model, target="ascend910", pipeline="npu-lower{cores=32 prefetch=false}")
    (same,), _ = plain(x)
    assert np.array_equal(out.view(np.uint8), same.view(np.uint8))
