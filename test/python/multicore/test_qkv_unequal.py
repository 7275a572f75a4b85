"""A horizontal group of sibling projections of unequal widths on many
cores (`passes/split_cores/qkv.py`): a GQA attention's Q is H heads wide,
K and V the fewer KV heads. Each core takes its part of every sibling's
columns (Q's 1/pk, K's 1/pk, ...), the weights laid out [part][sibling]
on the host. Before, unequal widths stayed apart ("the siblings differ in
width"), and apart they were modelled side by side on shares of the cores,
where a LLaMA's head transposes and rotary after each projection put a
barrier between every two of them."""

from __future__ import annotations

import re

import numpy as np
import pytest

from helpers import compile_remarks

S, D, HEADS, KV, HD = 128, 512, 8, 2, 64


def _model(weights: dict, cos: np.ndarray):
    """The exporter's GQA projections: MatMul, Reshape [1, S, h, HD],
    Transpose (0, 2, 1, 3) each, q's 8 heads, k's and v's 2; q's and k's
    heads then times a [1, 1, S, HD] table (the rotary's cos), which keeps
    the siblings apart in phases of their own."""
    from onnx import TensorProto, helper, numpy_helper

    nodes, outs, inits = [], [], [numpy_helper.from_array(cos, "cos")]
    for name, w in weights.items():
        heads = w.shape[1] // HD
        nodes += [helper.make_node("MatMul", ["x", f"w_{name}"], [f"{name}_p"],
                                   name=f"/self_attn/{name}_proj/MatMul"),
                  helper.make_node("Reshape", [f"{name}_p", f"shape_{name}"], [f"{name}_r"]),
                  helper.make_node("Transpose", [f"{name}_r"], [f"{name}_t"], perm=[0, 2, 1, 3])]
        if name == "v":
            nodes.append(helper.make_node("Identity", ["v_t"], ["v"]))
        else:
            nodes.append(helper.make_node("Mul", [f"{name}_t", "cos"], [name]))
        inits += [numpy_helper.from_array(w, f"w_{name}"),
                  numpy_helper.from_array(np.array([1, S, heads, HD], np.int64), f"shape_{name}")]
        outs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, heads, S, HD]))
    graph = helper.make_graph(nodes, "gqa_projections",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, S, D])],
                              outs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(scope="module")
def compiled():
    rng = np.random.default_rng(0)
    weights = {n: rng.uniform(-0.05, 0.05, (D, h * HD)).astype(np.float32)
               for n, h in (("q", HEADS), ("k", KV), ("v", KV))}
    cos = rng.uniform(-1, 1, (1, 1, S, HD)).astype(np.float32)
    kernel, remarks = compile_remarks(
        _model(weights, cos), cores=32, pipeline="npu-lower{fuse-remarks=true split-cores-remarks=true}")
    return kernel, remarks, weights, cos


def test_one_matmul_over_unequal_siblings(compiled) -> None:
    _, remarks, _, _ = compiled
    fused = [m for m in remarks if "npu-fuse-horizontal" in m]
    assert len(fused) == 1 and "are one matmul 128x512x768" in fused[0], fused
    split = [m for m in remarks if m.startswith("npu-split-cores: ")]
    grid = re.search(r"matmul epilogue of 3 siblings \(each core its columns of every one\) (\d+)x", split[0])
    assert grid and int(grid[1]) > 1, split  # cut along the columns: Q's 32 blocks, K's 8, V's 8


def test_numerics(compiled) -> None:
    kernel, _, weights, cos = compiled
    x = np.random.default_rng(1).uniform(-1, 1, (1, S, D)).astype(np.float32)
    outs, _ = kernel(x)
    for out, (name, w) in zip(outs, weights.items()):
        want = (x[0] @ w).reshape(1, S, -1, HD).transpose(0, 2, 1, 3) * (cos if name != "v" else 1)
        np.testing.assert_allclose(out, want, rtol=2e-2, atol=2e-2)

