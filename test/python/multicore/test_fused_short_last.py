"""The kernel's last row group in a long chunk, then its last row block
(`LayoutChoice.short_last`): with a few rows a core the chunks are a chain
of latencies (each chunk's loads wait for the previous chunk's flag), and
the kernel ends with the last chunk's vector work and stores, so that
chunk is best the short one when the chain says so (`ChunkProfile.chain_end`). BERT seq
128 on 32 cores: ln2 (4 rows a core) 2 + 2 -> 3 + 1 rows, its phase 1,893
-> 1,653 cycles; the README example on 8 cores 8,999 -> 8,844. Rows are
computed alone: the bits are the one-core program's."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from helpers import simulate_options

import npu
from npu.costmodel.vector.chunk_pipeline import ChunkProfile
from npu.ir import memref_shape, walk


def _model(rows: int = 128, depth: int = 256, cols: int = 768) -> onnx.ModelProto:
    """y = LayerNorm(x W + b): the layernorm is the kernel's last op."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(a.astype(np.float32), name) for name, a in (
        ("w", rng.standard_normal((depth, cols)) / np.sqrt(depth)),
        ("b", rng.standard_normal(cols) * 0.1), ("g", 1 + 0.1 * rng.standard_normal(cols)),
        ("beta", 0.1 * rng.standard_normal(cols)))]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
             helper.make_node("Add", ["m", "b"], ["h"], name="bias"),
             helper.make_node("LayerNormalization", ["h", "g", "beta"], ["y"], name="ln",
                              axis=-1, epsilon=1e-5)]
    graph = helper.make_graph(
        nodes, "ln", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, depth])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, cols])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=9)


def _last_phase_loads(model: onnx.ModelProto, options: str) -> list[list[int]]:
    """The shapes of the UB loads after the kernel's last chip barrier."""
    emitted = npu.compile(model, pipeline=f"builtin.module(npu-lower{{{options} emit=cce}})")
    ops = list(walk(emitted.module.operation,
                    lambda o: o.name in ("cce.copy_gm_to_ub", "cce.sync_all")))
    last = max(i for i, o in enumerate(ops) if o.name == "cce.sync_all")
    return [memref_shape(o.operands[1]) for o in ops[last + 1:]]


def test_the_last_groups_short_chunk_goes_last_with_the_same_bits() -> None:
    model = _model()
    x = np.random.default_rng(0).standard_normal((128, 256)).astype(np.float32)
    # 4 rows a core; max-chunk=1536 (two rows of 768) keeps the 2 + 2 chunks
    options = {"cores=32": [[2304], [768]], "cores=32 max-chunk=1536": [[1536], [1536]]}
    for opts, loads in options.items():
        assert _last_phase_loads(model, opts) == loads
    (short, short_cycles), (even, even_cycles) = simulate_options(model, x, options,
                                                                  target="ascend910")
    assert np.array_equal(short.view(np.uint8), even.view(np.uint8))
    assert short_cycles < even_cycles, (short_cycles, even_cycles)  # 6,496 against 7,136 (6,555 before, uncapped)


def test_the_chain_ends_with_the_last_chunk() -> None:
    # one row: 100 cycles of loads, 160 of vector work, a 50-cycle store after
    # it; 350 of GM latency a flag
    row = ChunkProfile(350, [("x", 100.0)], [((), ("y",), 160.0)], [("y", 50.0, 0)])
    slots = {"x": 2, "y": 2}
    # 2 + 2: the second chunk's loads land at 550 + 200 + 350 = 1,100, its
    # vector work runs to 1,420, its store lands at 1,100 + 320 + 100 + 350;
    # 3 + 1: the first chunk's vector work (650 -> 1,130) covers the second's
    # loads (landed at 1,100), whose 160 cycles and 50-cycle store follow
    assert row.chain_end([2, 2], slots) == 1870
    assert row.chain_end([3, 1], slots) == 1130 + 160 + 50 + 350
    assert row.chain_end([4], slots) == 400 + 350 + 640 + 200 + 350
