"""Lone elementwise ops over [1, H, S, D] with H below the cores
(`passes/split_cores/leading_grid.py`): a LLaMA's rotary on its 2 KV heads,
`k * cos + rotate(k) * sin` by [1, 1, S, D] tables, ran on 2 cores (cut
along H alone); on a grid of the heads and runs of rows it takes more."""

from __future__ import annotations

import re

import numpy as np
import pytest

from helpers import compile_remarks

SHAPE = [1, 2, 128, 64]  # batch, KV heads, seq, head dim
TABLE = [1, 1, 128, 64]


def _rotary_model(cos: np.ndarray, sin: np.ndarray):
    """The exporter's rotary: Mul(k, cos), Mul(k_rot, sin), Add."""
    from onnx import TensorProto, helper, numpy_helper

    nodes = [helper.make_node("Mul", ["k", "cos"], ["kc"], name="/self_attn/Mul_3"),
             helper.make_node("Mul", ["k_rot", "sin"], ["ks"], name="/self_attn/Mul_4"),
             helper.make_node("Add", ["kc", "ks"], ["k_out"], name="/self_attn/Add_1")]
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, SHAPE) for n in ("k", "k_rot")]
    graph = helper.make_graph(nodes, "rotary", inputs,
                              [helper.make_tensor_value_info("k_out", TensorProto.FLOAT, SHAPE)],
                              [numpy_helper.from_array(cos, "cos"), numpy_helper.from_array(sin, "sin")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(scope="module")
def compiled():
    rng = np.random.default_rng(0)
    cos, sin = (rng.uniform(-1, 1, TABLE).astype(np.float32) for _ in range(2))
    kernel, remarks = compile_remarks(_rotary_model(cos, sin), cores=32,
                                      pipeline="npu-lower{split-cores-remarks=true}")
    return kernel, remarks, cos, sin


def test_rotary_ops_split_over_heads_and_rows(compiled) -> None:
    _, remarks, _, _ = compiled
    said = [m for m in remarks if m.startswith("npu-split-cores: ")]
    assert len(said) == 1, remarks
    grids = re.findall(r"ascend\.(?:mul|add) ([0-9x]+)", said[0])
    assert grids, said[0]
    # each op on a grid of its 2 heads by runs of rows (was "2": one head a core)
    for grid in grids:
        assert "x" in grid, said[0]
        heads, runs = (int(n) for n in grid.split("x"))
        assert heads == 2 and runs >= 2, said[0]


def test_rotary_numerics(compiled) -> None:
    kernel, _, cos, sin = compiled
    rng = np.random.default_rng(1)
    k, k_rot = (rng.uniform(-1, 1, SHAPE).astype(np.float32) for _ in range(2))
    (out,), _ = kernel(k, k_rot)
    np.testing.assert_allclose(out, k * cos + k_rot * sin, rtol=1e-5, atol=1e-5)


def test_leading_dims() -> None:
    from npu.passes.split_cores.leading_grid import leading_dims

    assert leading_dims([1, 8, 128, 64], 32) == [(1, 8), (2, 4)]
    assert leading_dims([1, 2, 4, 128, 64], 32) == [(1, 2), (2, 4), (3, 4)]
    assert leading_dims([1, 32, 128], 32) is None  # one dim cuts: the plain split's
    assert leading_dims([1, 3, 128], 32) is None  # 3 does not divide the cores
    assert leading_dims([1, 8, 6, 64], 32) is None  # 6 rows in 4 runs
    assert leading_dims([2, 2048], 4) is None  # whole rows a core: not the columns
