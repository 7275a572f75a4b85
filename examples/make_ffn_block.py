"""Write `ffn_block.onnx`: the feed-forward half of a transformer layer.

x[64,128] -> MatMul(W1) + b1 -> GELU (erf form) -> MatMul(W2) + b2
-> + x (residual) -> LayerNormalization. Random weights, fixed seed, so the
file is reproducible: `python examples/make_ffn_block.py`.
"""

from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEQ, HIDDEN, FFN = 64, 128, 512


def ffn_block(seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)

    def weight(*shape: int, scale: float = 1.0) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    inits = {
        "w1": weight(HIDDEN, FFN, scale=HIDDEN ** -0.5), "b1": weight(FFN, scale=0.1),
        "w2": weight(FFN, HIDDEN, scale=FFN ** -0.5), "b2": weight(HIDDEN, scale=0.1),
        "gamma": 1 + weight(HIDDEN, scale=0.1), "beta": weight(HIDDEN, scale=0.1),
        "inv_sqrt2": np.array(2 ** -0.5, np.float32), "one": np.array(1, np.float32),
        "half": np.array(0.5, np.float32),
    }
    node = helper.make_node
    nodes = [
        node("MatMul", ["x", "w1"], ["h0"], name="ffn_in"),
        node("Add", ["h0", "b1"], ["h1"], name="ffn_in_bias"),
        node("Mul", ["h1", "inv_sqrt2"], ["g0"], name="gelu_scale"),
        node("Erf", ["g0"], ["g1"], name="gelu_erf"),
        node("Add", ["g1", "one"], ["g2"], name="gelu_shift"),
        node("Mul", ["h1", "g2"], ["g3"], name="gelu_gate"),
        node("Mul", ["g3", "half"], ["g4"], name="gelu_half"),
        node("MatMul", ["g4", "w2"], ["o0"], name="ffn_out"),
        node("Add", ["o0", "b2"], ["o1"], name="ffn_out_bias"),
        node("Add", ["o1", "x"], ["r"], name="residual"),
        node("LayerNormalization", ["r", "gamma", "beta"], ["y"], name="layernorm",
             axis=-1, epsilon=1e-5),
    ]
    graph = helper.make_graph(
        nodes, "ffn_block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [SEQ, HIDDEN])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [SEQ, HIDDEN])],
        [numpy_helper.from_array(a, n) for n, a in inits.items()])
    # IR 9 / opset 17: what onnxruntime and torch-mlir's importer both read.
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    onnx.checker.check_model(model)
    return model


if __name__ == "__main__":
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ffn_block.onnx")
    onnx.save(ffn_block(), out)
    print(out)
