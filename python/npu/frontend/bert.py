"""BERT encoder layers as an ONNX model built with onnx.helper (random
weights): self-attention with its reshapes and transposes, softmax, two
residual layernorms and a GELU feed-forward; and the self-attention block
alone. Used by bench/bert_layer.py, bench/compile_time.py, bench/fusion.py
and the frontend and fusion tests."""

from __future__ import annotations

import numpy as np


def bert_layer(seq=128, hidden=768, heads=12, ffn=3072, batch=1, seed=0, gelu_approximation="none",
               layers=1):
    """`layers` encoder layers chained x -> ... -> y, each with its own weights.

    Layer 0's weights, names and nodes do not depend on `layers`, so the
    one-layer model is the same whatever the depth; later layers draw their
    weights after it from the same generator and prefix their names with
    `l<i>_`."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    inits: dict[str, np.ndarray] = {}
    nodes = []
    shared = {"split": np.array([batch, seq, heads, hidden // heads], np.int64),
              "merge": np.array([batch, seq, hidden], np.int64),
              "scale": np.array(1 / np.sqrt(hidden // heads), np.float32)}
    for i in range(layers):
        prefix = f"l{i}_" if i else ""
        x = "x" if i == 0 else f"layer{i - 1}_out"
        y = "y" if i == layers - 1 else f"layer{i}_out"
        layer_inits, layer_nodes = _encoder_layer(rng, prefix, x, y, hidden, ffn, gelu_approximation)
        if i == 0:
            layer_inits.update(shared)
        inits.update(layer_inits)
        nodes += layer_nodes
    graph = helper.make_graph(
        nodes, "bert_layer", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, seq, hidden])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, seq, hidden])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=9)
    onnx.checker.check_model(model)
    return model


def self_attention(seq: int, hidden: int, heads: int, head_dim: int | None = None,
                   bias: bool = True, seed: int = 0, bias_scale: float = 0.02,
                   out_projection: bool = False):
    """BERT's self-attention block: x [1, S, hidden] -> q, k, v = x W (+ b,
    drawn with deviation `bias_scale`), split into heads of `head_dim`
    (hidden / heads by default; H x D need not be `hidden`), softmax(q k^T /
    sqrt(D)) v, the heads merged into y [1, S, H*D]; with `out_projection`
    then y W_o + b_o ([1, S, hidden])."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    head_dim = head_dim or hidden // heads
    width = heads * head_dim
    inits = {"split": np.array([1, seq, heads, head_dim], np.int64),
             "merge": np.array([1, seq, width], np.int64),
             "scale": np.array(1 / np.sqrt(head_dim), np.float32)}
    nodes = []
    for q in "qkv":
        inits[f"w{q}"] = (rng.standard_normal((hidden, width)) / np.sqrt(hidden)).astype(np.float32)
        out = f"{q}0"
        nodes.append(helper.make_node("MatMul", ["x", f"w{q}"], [out], name=f"{q}_proj"))
        if bias:
            inits[f"b{q}"] = (rng.standard_normal(width) * bias_scale).astype(np.float32)
            nodes.append(helper.make_node("Add", [out, f"b{q}"], [f"{q}1"], name=f"{q}_bias"))
            out = f"{q}1"
        nodes += [helper.make_node("Reshape", [out, "split"], [f"{q}2"], name=f"{q}_split"),
                  helper.make_node("Transpose", [f"{q}2"], [f"{q}h"], name=f"{q}_heads",
                                   perm=[0, 2, 3, 1] if q == "k" else [0, 2, 1, 3])]
    nodes += [helper.make_node("MatMul", ["qh", "kh"], ["s0"], name="scores"),
              helper.make_node("Mul", ["s0", "scale"], ["s1"], name="scale"),
              helper.make_node("Softmax", ["s1"], ["p"], name="softmax", axis=-1),
              helper.make_node("MatMul", ["p", "vh"], ["c0"], name="context"),
              helper.make_node("Transpose", ["c0"], ["c1"], name="merge_heads", perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["c1", "merge"], ["c2" if out_projection else "y"],
                               name="merge")]
    if out_projection:
        inits["wo"] = (rng.standard_normal((width, hidden)) / np.sqrt(width)).astype(np.float32)
        inits["bo"] = (rng.standard_normal(hidden) * bias_scale).astype(np.float32)
        nodes += [helper.make_node("MatMul", ["c2", "wo"], ["o0"], name="out_proj"),
                  helper.make_node("Add", ["o0", "bo"], ["y"], name="out_bias")]
    graph = helper.make_graph(
        nodes, "self_attention", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, hidden])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                       [1, seq, hidden if out_projection else width])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    onnx.checker.check_model(model)
    return model


def _encoder_layer(rng, prefix: str, x: str, y: str, hidden: int, ffn: int, gelu_approximation: str):
    """One layer's initializers and nodes from input `x` to output `y`; every
    other name carries `prefix`. The shared shape and scale constants are
    `split`, `merge` and `scale` (unprefixed)."""
    from onnx import helper

    def w(*shape, scale=None):
        return (rng.standard_normal(shape) * (scale or 1 / np.sqrt(shape[0]))).astype(np.float32)

    raw = {"wq": w(hidden, hidden), "wk": w(hidden, hidden), "wv": w(hidden, hidden),
           "wo": w(hidden, hidden), "w1": w(hidden, ffn), "w2": w(ffn, hidden),
           "bq": w(hidden, scale=0.02), "bk": w(hidden, scale=0.02), "bv": w(hidden, scale=0.02),
           "bo": w(hidden, scale=0.02), "b1": w(ffn, scale=0.02), "b2": w(hidden, scale=0.02),
           "g1": 1 + w(hidden, scale=0.1), "be1": w(hidden, scale=0.1),
           "g2": 1 + w(hidden, scale=0.1), "be2": w(hidden, scale=0.1)}
    inits = {prefix + k: v for k, v in raw.items()}

    def p(name: str) -> str:
        return name if name in (x, y, "split", "merge", "scale") else prefix + name

    def n(op: str, inputs: list[str], outputs: list[str], name: str, **attrs):
        return helper.make_node(op, [p(v) for v in inputs], [p(v) for v in outputs], name=prefix + name, **attrs)

    nodes = []
    for q in "qkv":
        nodes += [n("MatMul", [x, f"w{q}"], [f"{q}0"], name=f"{q}_proj"),
                  n("Add", [f"{q}0", f"b{q}"], [f"{q}1"], name=f"{q}_bias"),
                  n("Reshape", [f"{q}1", "split"], [f"{q}2"], name=f"{q}_split"),
                  n("Transpose", [f"{q}2"], [f"{q}h"], name=f"{q}_heads",
                    perm=[0, 2, 3, 1] if q == "k" else [0, 2, 1, 3])]
    nodes += [n("MatMul", ["qh", "kh"], ["s0"], name="scores"),
              n("Mul", ["s0", "scale"], ["s1"], name="scale"),
              n("Softmax", ["s1"], ["p"], name="softmax", axis=-1),
              n("MatMul", ["p", "vh"], ["c0"], name="context"),
              n("Transpose", ["c0"], ["c1"], name="merge_heads", perm=[0, 2, 1, 3]),
              n("Reshape", ["c1", "merge"], ["c2"], name="merge"),
              n("MatMul", ["c2", "wo"], ["o0"], name="out_proj"),
              n("Add", ["o0", "bo"], ["o1"], name="out_bias"),
              n("Add", ["o1", x], ["r1"], name="residual1"),
              n("LayerNormalization", ["r1", "g1", "be1"], ["h1"], name="ln1", axis=-1, epsilon=1e-12),
              n("MatMul", ["h1", "w1"], ["f0"], name="ffn_in"),
              n("Add", ["f0", "b1"], ["f1"], name="ffn_bias1"),
              n("Gelu", ["f1"], ["f2"], name="gelu", approximate=gelu_approximation),
              n("MatMul", ["f2", "w2"], ["f3"], name="ffn_out"),
              n("Add", ["f3", "b2"], ["f4"], name="ffn_bias2"),
              n("Add", ["f4", "h1"], ["r2"], name="residual2"),
              n("LayerNormalization", ["r2", "g2", "be2"], [y], name="ln2", axis=-1, epsilon=1e-12)]
    return inits, nodes
