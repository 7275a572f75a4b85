"""Independent ops on shares of the cores: the cores the least slowest
shares leave idle go to the others (`npu.passes.split_cores.share.spread`).
BERT's Q, K and V projections at seq 128 on 32 cores ran on 8 cores each
with cores 24-31 idle; Q and K now take 12 each (bench/chip.py: the layer
49,151 -> 48,703 cycles)."""

from __future__ import annotations

import numpy as np
import onnxruntime

import npu
from npu import diagnostics
from npu.frontend.bert import bert_layer
from npu.passes.split_cores.share import Choice, allocate, spread

# The matmul cost model's grids of BERT-base's 128 x 768 x 768 projection,
# by the most cores each may take (as `share.choices` gives them).
PROJECTION = {8: Choice(8, None, 6144.0), 12: Choice(12, None, 5120.0),
              16: Choice(16, None, 4224.0), 32: Choice(16, None, 4224.0)}


def test_the_idle_cores_go_to_the_costliest_units_first() -> None:
    options = {1: PROJECTION, 2: PROJECTION, 3: PROJECTION}
    picked = allocate(options, 32)
    # the slowest share is as slow as before (8 cores), the others faster
    assert [picked[i].cores for i in (1, 2, 3)] == [12, 12, 8]
    assert max(c.cost for c in picked.values()) == 6144.0


def test_spread_takes_the_fewest_cores_that_make_a_unit_cheaper() -> None:
    picked = {1: PROJECTION[8], 2: PROJECTION[8]}
    # 8 idle cores: one step of 4 each (12 + 12), not 16 + 8
    assert [c.cores for c in spread(picked, {1: PROJECTION, 2: PROJECTION}, 24).values()] == [12, 12]
    # no cheaper choice fits 3 idle cores: nothing changes
    assert spread(picked, {1: PROJECTION, 2: PROJECTION}, 19) == picked


def _split_remark(model: bytes, cores: int) -> tuple[object, str]:
    """The compiled kernel and npu-split-cores' remark on its split."""
    import npu.pipeline as pipeline

    seen: list[str] = []
    run = pipeline.run_pipeline

    def keep(module, text, target):
        run(module, text, target)
        seen.extend(d.message for d in diagnostics.current().diagnostics)

    pipeline.run_pipeline = keep
    try:
        kernel = npu.compile(model, target="ascend910",
                             pipeline=f"npu-lower{{cores={cores} split-cores-remarks=true}}")
    finally:
        pipeline.run_pipeline = run
    # the split's line (a reduction split by the model has a line before it)
    return kernel, next(m for m in seen if m.startswith("npu-split-cores:") and " cores, " in m)


def test_a_bert_layer_uses_every_core_for_its_projections_and_matches_onnxruntime() -> None:
    # hidden 384: 24 column blocks, which 6 x 2 grids on 12 cores cut evenly
    model = bert_layer(seq=64, hidden=384, heads=6, ffn=1536).SerializeToString()
    kernel, remark = _split_remark(model, 32)
    assert ("matmul epilogue 6x2 on cores 0-11; matmul epilogue 6x2 on cores 12-23; "
            "matmul epilogue 8x1 on cores 24-31") in remark, remark
    x = np.random.default_rng(5).standard_normal((1, 64, 384)).astype(np.float32)
    (want,) = onnxruntime.InferenceSession(model).run(None, {"x": x})
    (out,), report = kernel(x)
    np.testing.assert_allclose(out, want, rtol=2e-2, atol=1e-2)
    assert report["block_dim"] == 32 and report["hazards"] == []
