"""A fused attention's f16 K and V tiles load through UB when that saves
MTE2 time (`npu.costmodel.attention.core_start.staged_f16`, read by
`passes/lower_attention/operands.py`): each row one 128-byte burst to UB,
then each column block to L1, in place of one 32-byte GM burst per row and
column block straight to L1 (a burst's set-up cost made MTE2 the wait of
the vector's first softmax and of the first P.V in a BERT layer at seq 512
on 32 cores). The same bytes land in L1: the outputs are bit for bit those
of the direct loads."""

from __future__ import annotations

import numpy as np
import pytest

import npu
from npu.costmodel.attention import core_start
from npu.frontend.bert import bert_layer
from npu.ir import walk
from npu.passes.lower_attention import operands
from npu.target import get_target

HIDDEN, HEADS, FFN = 256, 4, 512


def _compile(seq: int, cores: int, emit: str = "hivm", options: str = ""):
    return npu.compile(bert_layer(seq, HIDDEN, HEADS, FFN), cores=cores,
                       pipeline=f"builtin.module(npu-lower{{emit={emit}{options}}})")


def _attention_copies(kernel) -> dict[str, int]:
    """The GM -> L1 and GM -> UB copies of the attention kernel."""
    counts = {"cce.copy_gm_to_l1": 0, "cce.copy_gm_to_ub": 0}
    for o in walk(kernel.module.operation):
        if o.name in counts and "scores" in str(o.location):
            counts[o.name] += 1
    return counts


def test_staging_pays_past_its_gm_latencies() -> None:
    """The bursts saved against the GM latencies the staging flag adds:
    BERT's 64-wide heads stage 128-row K and V tiles (seq 128, 16 KB: 384
    cycles of bursts saved against 350), not 64-row ones (192), nor Q tiles
    under 256 rows (K's load waits behind Q's flag: 700)."""
    t = get_target("ascend910")
    assert core_start.staged_f16(128, 4, t)
    assert core_start.staged_f16(512, 4, t)
    assert not core_start.staged_f16(64, 4, t)
    assert not core_start.staged_f16(128, 4, t, first=True)
    assert core_start.staged_f16(256, 4, t, first=True)


# seq 256: 32 KB K and V tiles; seq 128: 16 KB ones (loaded straight to L1
# before the rule counted the bursts saved)
@pytest.mark.parametrize("seq", [256, 128])
def test_f16_tiles_load_through_ub(monkeypatch, seq: int) -> None:
    x = np.random.default_rng(5).standard_normal((1, seq, HIDDEN)).astype(np.float32)
    staged = _attention_copies(_compile(seq, 8, "cce"))
    ys, report = _compile(seq, 8)(x)
    assert report["hazards"] == []
    monkeypatch.setattr(operands, "staged_f16", lambda *args, **kwargs: False)
    direct = _attention_copies(_compile(seq, 8, "cce"))
    ys_old, report_old = _compile(seq, 8)(x)
    # K's and V's four column-block copies each become one copy to UB
    assert staged["cce.copy_gm_to_ub"] >= direct["cce.copy_gm_to_ub"] + 2, (staged, direct)
    assert staged["cce.copy_gm_to_l1"] <= direct["cce.copy_gm_to_l1"] - 8, (staged, direct)
    for y, y_old in zip(ys, ys_old):
        np.testing.assert_array_equal(y, y_old)
    # seq 256 measured 40,609 against 40,627 cycles (ascend910, 8 cores: each
    # core's K and V are read once; at seq 512 on 32 cores the attention
    # phase went 20,331 -> 18,713)
    assert report["cycles"] < report_old["cycles"], (report["cycles"], report_old["cycles"])


def test_tiles_loaded_per_query_tile_go_straight_to_l1() -> None:
    """Seq 208 on one core, the attention apart from its projection: two
    query tiles a head, each loading the head's K and V tiles again. Those
    go straight to L1 (`OperandTiles.reloads_kv`): staged, the next query
    tile's first L1 load waited for the step's MTE3 work as a whole, its
    context stores included (this model: 160,848 cycles staged, 144,181
    straight; BERT-base 170,221 against 103,174)."""
    import onnxruntime

    seq, options = 208, " cores=1 fuse-attention-projection=false"
    assert _attention_copies(_compile(seq, 1, "cce", options))["cce.copy_gm_to_ub"] == 0
    model = bert_layer(seq, HIDDEN, HEADS, FFN)
    x = np.random.default_rng(5).standard_normal((1, seq, HIDDEN)).astype(np.float32)
    (y,), report = _compile(seq, 1, options=options)(x)
    (want,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    assert report["hazards"] == []
    np.testing.assert_allclose(y, want, rtol=2e-2, atol=1e-2 * float(np.abs(want).max()))
