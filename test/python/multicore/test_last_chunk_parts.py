"""A core's one C tile with A in parts (`passes/lower_matmul/last_chunk.py`):
every chunk but the last in one copy, the last chunk in shrinking parts,
each waited for on its own, so the mads after the last copy lands are one
sub-step's. BERT seq 128 on 32 cores: ffn_out's phase 10,094 -> 9,390
cycles, the layer 41,727 -> 41,023 (bench/chip.py). The mads keep the
even chunks' sub-steps: the bits are the same."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import npu
from npu.costmodel.matmul.col_strips import last_chunk_parts
from npu.target import get_target


def test_the_last_chunk_shrinks_towards_its_end() -> None:
    t = get_target("ascend910")
    # BERT seq 128's ffn_out a core (64 x 3072 x 48, chunks of 64 blocks,
    # sub-steps of 16): two chunks in one part, the last in 48 + 16
    assert last_chunk_parts(4, 3, 192, 64, 16, t) == (128, 48, 16)
    # two chunks: one flag for both would leave all their mads after it
    assert last_chunk_parts(4, 3, 192, 96, 16, t) == ()
    # a chunk of one sub-step has nothing to cut
    assert last_chunk_parts(8, 6, 48, 16, 16, t) == ()


def _model(rows: int, depth: int, cols: int) -> onnx.ModelProto:
    """y = x W + b, x computed on the chip first (x0 + 1: an op before the
    matmul, whose idle MTE2 npu-prefetch loads W's chunks in)."""
    rng = np.random.default_rng(5)
    inits = [numpy_helper.from_array(a.astype(np.float32), name) for name, a in (
        ("w", rng.standard_normal((depth, cols)) / np.sqrt(depth)),
        ("b", rng.standard_normal(cols) * 0.1), ("one", np.ones(1)))]
    nodes = [helper.make_node("Add", ["x0", "one"], ["x"], name="shift"),
             helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
             helper.make_node("Add", ["m", "b"], ["y"], name="bias")]
    graph = helper.make_graph(
        nodes, "mm", [helper.make_tensor_value_info("x0", TensorProto.FLOAT, [rows, depth])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, cols])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=9)


def test_a_cores_one_tile_takes_a_in_parts_with_the_same_bits() -> None:
    rows, depth, cols = 128, 3072, 768
    model = _model(rows, depth, cols)
    grid = f"split-cores-grids={rows}x{depth}x{cols}:16x2"
    x = np.random.default_rng(0).standard_normal((rows, depth)).astype(np.float32)
    runs = {}
    for parts in ("false", "true"):
        options = f"cores=32 {grid} matmul-last-chunk-parts={parts}"
        emitted = npu.compile(model, pipeline=f"builtin.module(npu-lower{{{options} emit=cce}})")
        a_copies = _a_copy_blocks(emitted.module, depth // 16)
        kernel = npu.compile(model, target="ascend910", pipeline=f"npu-lower{{{options}}}")
        (out,), report = kernel(x)
        assert report["hazards"] == []
        runs[parts] = (np.asarray(out), report["cycles"], a_copies)
    (off, off_cycles, off_copies), (on, on_cycles, on_copies) = runs.values()
    # (npu-prefetch's guard of a chunk's weights copies its A copy into both branches)
    assert set(off_copies) == {64}
    assert sorted(set(on_copies)) == [16, 48, 128], on_copies
    assert np.array_equal(off.view(np.uint8), on.view(np.uint8))
    assert on_cycles < off_cycles, (on_cycles, off_cycles)  # 17,630 -> 17,246


def _a_copy_blocks(module, n1: int) -> list[int]:
    """The reduction blocks of each GM -> L1 copy of the matmul's A (its L1
    buffers [blocks, 4, 16, 16] of a 64-row tile), in program order."""
    from npu.ir import memref_shape, walk
    sizes = []
    for op in walk(module.operation, lambda o: o.name == "cce.copy_gm_to_l1"):
        shape = memref_shape(op.operands[1])
        if len(shape) == 4 and shape[1] == 4 and shape[0] <= n1:
            sizes.append(shape[0])
    return sizes
