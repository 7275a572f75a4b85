"""One-node ONNX pooling models and the onnxruntime oracle, for the pooling tests."""

from __future__ import annotations

import numpy as np

F32, F16 = 1, 10
NUMPY = {F32: np.float32, F16: np.float16}


def pool_model(op: str, shape, elem: int = F32, **attrs):
    """A model of one `op` node `p` on input `x` (opset 17, IR 8 for onnxruntime)."""
    import onnx
    from onnx import helper

    x = helper.make_tensor_value_info("x", elem, list(shape))
    y = helper.make_tensor_value_info("y", elem, None)
    graph = helper.make_graph([helper.make_node(op, ["x"], ["y"], name="p", **attrs)], "pool",
                              [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return onnx.shape_inference.infer_shapes(model)


def run_ort(model, feeds: dict) -> list[np.ndarray]:
    import onnxruntime as ort

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def compare(model, x: np.ndarray, atol: float, rtol: float = 0.0) -> dict:
    """Compile with npu, run on the simulator and check against onnxruntime; the report."""
    import npu

    want = run_ort(model, {"x": x})[0]
    (got,), report = npu.compile(model)(x)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), atol=atol, rtol=rtol)
    return report
