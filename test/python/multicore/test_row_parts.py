"""An intermediate Nz buffer stored row part by row part
(`passes/split_cores/row_parts.py`): between two matmuls split into the same
row parts, the second's A (all column blocks of its core's rows) is one
contiguous run of GM and leaves in one burst (`lower_matmul.blocks.copy_nz`)
instead of one a column block. BERT seq 128 on 32 cores: ffn_out's phase
9,126 -> 8,948 cycles, the layer 37,820 -> 37,628 (bench/chip.py). Only
where the values sit in GM changes: the bits are the same."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import npu
from npu.ir import int_attr, memref_shape, walk


def _ffn(rows: int, width: int, hidden: int) -> onnx.ModelProto:
    """y = relu(x W1 + b1) W2 + b2."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(a.astype(np.float32), name) for name, a in (
        ("w1", rng.standard_normal((width, hidden)) / np.sqrt(width)),
        ("b1", rng.standard_normal(hidden) * 0.1),
        ("w2", rng.standard_normal((hidden, width)) / np.sqrt(hidden)),
        ("b2", rng.standard_normal(width) * 0.1))]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"], name="ffn_in"),
             helper.make_node("Add", ["m1", "b1"], ["h1"], name="bias1"),
             helper.make_node("Relu", ["h1"], ["r"], name="act"),
             helper.make_node("MatMul", ["r", "w2"], ["m2"], name="ffn_out"),
             helper.make_node("Add", ["m2", "b2"], ["y"], name="bias2")]
    graph = helper.make_graph(
        nodes, "ffn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, width])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=9)


def _second_a_bursts(module, hidden_blocks: int, part_blocks: int) -> list[int]:
    """n_burst of each GM -> L1 copy of the second matmul's A (L1 buffers
    [reduction blocks, part_blocks, 16, 16] over the hidden dimension)."""
    return [int_attr(op, "n_burst")
            for op in walk(module.operation, lambda o: o.name == "cce.copy_gm_to_l1")
            if memref_shape(op.operands[1])[1] == part_blocks
            and memref_shape(op.operands[0])[0] > 1
            and memref_shape(op.operands[1])[0] <= hidden_blocks]


def test_a_row_part_of_the_intermediate_copies_in_one_burst_with_the_same_bits() -> None:
    rows, width, hidden = 64, 128, 512
    model = _ffn(rows, width, hidden)
    grids = (f"split-cores-grids={rows}x{width}x{hidden}:4x2;{rows}x{hidden}x{width}:4x2")
    x = np.random.default_rng(0).standard_normal((rows, width)).astype(np.float32)
    runs = {}
    for parts in ("false", "true"):
        options = f"cores=8 {grids} split-cores-row-parts={parts}"
        emitted = npu.compile(model, pipeline=f"builtin.module(npu-lower{{{options} emit=cce}})")
        bursts = _second_a_bursts(emitted.module, hidden // 16, rows // 32)
        kernel = npu.compile(model, target="ascend910", pipeline=f"npu-lower{{{options}}}")
        (out,), report = kernel(x)
        assert report["hazards"] == []
        runs[parts] = (np.asarray(out), report["cycles"], bursts)
    (off, off_cycles, off_bursts), (on, on_cycles, on_bursts) = runs.values()
    assert off_bursts and min(off_bursts) > 1, off_bursts  # one a column block
    assert on_bursts and set(on_bursts) == {1}, on_bursts
    assert np.array_equal(off.view(np.uint8), on.view(np.uint8))
    assert on_cycles < off_cycles, (on_cycles, off_cycles)
    w1, b1, w2, b2 = (numpy_helper.to_array(i) for i in model.graph.initializer)
    want = np.maximum(x @ w1 + b1, 0) @ w2 + b2
    np.testing.assert_allclose(on, want, rtol=2e-2, atol=2e-2)


def test_a_core_view_of_a_peeled_row_part_takes_the_parts_strides() -> None:
    """A [20, 512] x [512, 64] matmul on 32 cores: A's Nz, peeled into its
    16 whole rows and the other 4, is stored as row parts; each core's view
    of a part (a subview of the part's view) was left with the whole
    buffer's strides, and the matmul read A past its end (a bounds error)."""
    rng = np.random.default_rng(5)
    w = (rng.standard_normal((512, 64)) / np.sqrt(512)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "mm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [20, 512])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [20, 64])], [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=9)
    x = rng.standard_normal((20, 512)).astype(np.float32)
    (out,), report = npu.compile(model, target="ascend910", cores=32)(x)
    assert report["hazards"] == []
    np.testing.assert_allclose(out, x @ w, rtol=2e-2, atol=2e-2)
