"""Small ONNX-building and checking helpers for the CNN tests."""

from __future__ import annotations

import numpy as np


def make(nodes, inputs, outputs, initializers=(), opset: int = 17):
    """A checked model (IR 8, which the installed onnxruntime reads); inputs
    and outputs are (name, elem type, dims)."""
    import onnx
    from onnx import helper

    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*o) for o in outputs],
                              list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    onnx.checker.check_model(model)
    return model


def bn_params(prefix: str, c: int, rng, dtype=np.float32) -> list:
    """Initializers `<prefix>.scale/.bias/.mean/.var` of a BatchNormalization."""
    from onnx import numpy_helper

    values = {"scale": rng.uniform(0.5, 1.5, c), "bias": rng.standard_normal(c) * 0.1,
              "mean": rng.standard_normal(c) * 0.1, "var": rng.uniform(0.5, 1.5, c)}
    return [numpy_helper.from_array(v.astype(dtype), f"{prefix}.{k}") for k, v in values.items()]


def ort_run(model, feeds: dict) -> list[np.ndarray]:
    import onnxruntime as ort

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def compare_npu(model, feeds: dict, atol: float, rtol: float = 1e-3, cores: int | None = None) -> dict:
    """Compile with npu (on `cores`, default all), simulate, check every
    output against onnxruntime; the report."""
    kernel = compile_npu(model, cores)
    wants = ort_run(model, feeds)
    gots, report = kernel(*[feeds[n] for n in kernel.input_names])
    for name, got, want in zip(kernel.output_names, gots, wants):
        assert got.shape == want.shape, (name, got.shape, want.shape)
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), atol=atol,
                                   rtol=rtol, err_msg=name)
    return report


def compile_npu(model, cores: int | None = None):
    """npu.compile(model): every CNN here compiles (grouped and depthwise
    convs included), so any error fails the test."""
    import npu

    return npu.compile(model, cores=cores)
