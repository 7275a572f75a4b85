"""A peeled row group's rest (`peel`: the 5 rows past 32 whole blocks
here, ViT-base's 5 of 197) beside its whole blocks: no chip barrier
between them (`barriers._apart`: their views of one tensor, through its
reshapes, span disjoint elements; the rest's read-only operands, gamma and
beta, reads), and on a core its phase leaves idle (`alone.move`). Before,
the rest waited at a barrier for the whole blocks on every core, then ran
on core 0: ViT-base on 32 cores 102,483 -> 96,065 (barriers) -> 92,434
cycles (idle cores) -> 76,800 (the final layernorm on 24 cores, its rest
on core 24), BERT-base at seq 100 152,634 -> 143,204."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import compile_remarks  # noqa: E402

ROWS, HIDDEN = 37, 768


def _model(projection: bool) -> bytes:
    """x + r, its layernorm (and a projection of it: the layernorm then
    stores the matmul's Nz A operand, split over its 2 whole row blocks)."""
    rng = np.random.default_rng(4)
    inits = [numpy_helper.from_array(rng.standard_normal(HIDDEN).astype(np.float32), "g"),
             numpy_helper.from_array(rng.standard_normal(HIDDEN).astype(np.float32), "b")]
    nodes = [helper.make_node("Add", ["x", "r"], ["s"], name="residual"),
             helper.make_node("LayerNormalization", ["s", "g", "b"], ["n" if projection else "y"],
                              name="ln", axis=-1, epsilon=1e-5)]
    if projection:
        inits.append(numpy_helper.from_array(
            (rng.standard_normal((HIDDEN, HIDDEN)) / 32).astype(np.float32), "w"))
        nodes.append(helper.make_node("MatMul", ["n", "w"], ["y"], name="proj"))
    rows = [1, ROWS, HIDDEN]
    graph = helper.make_graph(
        nodes, "ln", [helper.make_tensor_value_info("x", TensorProto.FLOAT, rows),
                      helper.make_tensor_value_info("r", TensorProto.FLOAT, rows)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, rows),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, rows)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                             ir_version=8).SerializeToString()


def _inputs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    return tuple(rng.standard_normal((1, ROWS, HIDDEN)).astype(np.float32) for _ in range(2))


def _split(model: bytes, cores: int) -> tuple:
    kernel, remarks = compile_remarks(model, target="ascend910",
                                      pipeline=f"npu-lower{{cores={cores} split-cores-remarks=true}}")
    (said,) = [r for r in remarks if "npu-split-cores:" in r]
    return kernel, said


def test_no_barrier_between_the_whole_blocks_and_the_rest() -> None:
    model = _model(projection=False)
    kernel, said = _split(model, 8)
    # on 4 cores of 8 rows each, its rest on core 4 (`alone._narrow`: all 8
    # cores' 4 rows each, and the rest's 5 after them on core 0, were longer)
    assert ("0 chip barriers; fused rows 4; fused rows: 1 core (no even split of every "
            "tensor) on core 4") in said, said
    one, _ = compile_remarks(model, target="ascend910", cores=1)
    many, report = kernel(*_inputs())
    assert report["hazards"] == [] and report["block_dim"] == 5
    ones, _ = one(*_inputs())
    assert all(np.array_equal(a, b) for a, b in zip(ones, many))
    # 4,836 cycles with the barrier; 3,266 without, the rest on core 0; 2,792


def test_the_rest_on_an_idle_core(monkeypatch) -> None:
    from npu.passes.split_cores import alone

    model = _model(projection=True)
    kernel, said = _split(model, 32)
    assert "fused rows 2x8; fused rows: 1 core (no even split of every tensor) on core 16" in said
    x, r = _inputs()
    (y, s), report = kernel(x, r)
    assert report["hazards"] == []
    want_y, want_s = onnxruntime.InferenceSession(model).run(None, {"x": x, "r": r})
    np.testing.assert_allclose(s, want_s, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(y, want_y, rtol=2e-2, atol=2e-2)
    monkeypatch.setattr(alone, "move", lambda *args: [])
    on_core_0, said0 = _split(model, 32)
    assert "on core 16" not in said0
    _, before = on_core_0(x, r)
    assert report["cycles"] < before["cycles"]  # 6,146 -> 5,541


def test_prefetch_beside_a_rest_on_its_own_core() -> None:
    # The layernorm's blocks on cores 0-3 and its rest on core 4, then the
    # Q projection on cores 0-7: npu-prefetch's loads of its weights for the
    # cores outside those two guards went to cores 5-15, and cores 8-15 read
    # past the weights (a bounds fault); now to 5-7 only
    from npu.frontend.bert import self_attention

    model = self_attention(ROWS, 512, 8, out_projection=True)
    kernel, remarks = compile_remarks(
        model.SerializeToString(), target="ascend910",
        pipeline="npu-lower{cores=16 fuse-horizontal=false split-cores-remarks=true}")
    (said,) = [r for r in remarks if "npu-split-cores:" in r]
    assert "fused rows: 1 core (no even split of every tensor) on core 4" in said, said
    x = np.random.default_rng(3).standard_normal((1, ROWS, 512)).astype(np.float32)
    (y,), report = kernel(x)
    assert report["hazards"] == [] and report["block_dim"] == 16
    (want,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    np.testing.assert_allclose(y, want, rtol=2e-2, atol=1e-2)
