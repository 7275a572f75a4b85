"""npu-prefetch issues a fused row group's first-chunk loads of GM that no
core writes in the phase before the chip barrier opening the group's phase
(`passes/prefetch/barrier_rows.py`, `barrier-inputs`): a layernorm's
residual rows, written by an earlier layernorm phases before, stream while
the cores arrive instead of after the barrier. BERT seq 128 on 32 cores
40,035 -> 39,935 cycles (ln1's phase 3,302 -> 3,238, ln2's 1,929 -> 1,893)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from helpers import kernel_tops, simulate_options

import npu
from npu.ir import view_root

ROWS, WIDTH = 128, 768
CORES = 8


def _model(rows: int = ROWS) -> onnx.ModelProto:
    """a = layernorm(x); y = layernorm(a @ w + a): ln2's residual a is
    written two chip barriers before its phase."""
    rng = np.random.default_rng(11)
    inits = [numpy_helper.from_array((rng.standard_normal((WIDTH, WIDTH)) / 32).astype(np.float32), "w"),
             numpy_helper.from_array(rng.uniform(0.5, 1.5, WIDTH).astype(np.float32), "g1"),
             numpy_helper.from_array(rng.standard_normal(WIDTH).astype(np.float32), "b1"),
             numpy_helper.from_array(rng.uniform(0.5, 1.5, WIDTH).astype(np.float32), "g2"),
             numpy_helper.from_array(rng.standard_normal(WIDTH).astype(np.float32), "b2")]
    nodes = [helper.make_node("LayerNormalization", ["x", "g1", "b1"], ["a"], name="ln1",
                              axis=-1, epsilon=1e-5),
             helper.make_node("MatMul", ["a", "w"], ["h"], name="proj"),
             helper.make_node("Add", ["h", "a"], ["r"], name="residual"),
             helper.make_node("LayerNormalization", ["r", "g2", "b2"], ["y"], name="ln2",
                              axis=-1, epsilon=1e-5)]
    graph = helper.make_graph(
        nodes, "ln_proj_ln", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, WIDTH])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, WIDTH])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _inputs_before_last_barrier(kernel) -> int:
    """Top-level GM -> UB copies of data other than host constants between
    the last two chip barriers."""
    constants, tops = kernel_tops(kernel)
    bars = [k for k, op in enumerate(tops) if op.name == "cce.sync_all"]
    assert len(bars) >= 2, "no chip barriers around the matmul"
    return sum(1 for o in tops[bars[-2] + 1:bars[-1]] if o.name == "cce.copy_gm_to_ub"
               and view_root(o.operands[0]) not in constants)


def _layernorm(v: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
    mean, var = v.mean(-1, keepdims=True), v.var(-1, keepdims=True)
    return (v - mean) / np.sqrt(var + 1e-5) * g + b


def test_residual_rows_load_before_the_barrier() -> None:
    x = np.random.default_rng(12).standard_normal((ROWS, WIDTH)).astype(np.float32)
    options = ("prefetch-barrier-inputs=true", "prefetch-barrier-inputs=false")
    placed = [_inputs_before_last_barrier(npu.compile(_model(), cores=CORES, pipeline=(
        f"builtin.module(npu-lower{{emit=cce {opts}}})"))) for opts in options]
    (on, on_cycles), (off, off_cycles) = simulate_options(_model(), x, options, cores=CORES)
    # the residual's first chunk (ln1's output) before the barrier, ln2's
    # own input (the matmul's result, written in the phase before) after it
    assert placed == [1, 0], placed
    # the same instructions otherwise: bit for bit the same layernorm
    np.testing.assert_array_equal(on.view(np.uint32), off.view(np.uint32))
    w, g1, b1, g2, b2 = (numpy_helper.to_array(t).astype(np.float64)
                         for t in _model().graph.initializer)
    a = _layernorm(x.astype(np.float64), g1, b1)
    np.testing.assert_allclose(on, _layernorm(a @ w + a, g2, b2),
                               rtol=5e-3, atol=5e-3)  # the cube's f16 operands
    # ln2's residual rows (16 a core) land while the cores arrive: measured
    # 14,624 against 15,011 cycles (ascend910, 8 cores)
    assert on_cycles < off_cycles, (on_cycles, off_cycles)


def test_later_chunks_load_before_the_barrier_where_the_bus_binds() -> None:
    """On 32 cores (more movers than the chip's GM bus serves) each core's
    16 residual rows come in two chunks of 8: the second's loads (24 KB a
    core, 655 cycles of the bus over the chip) go before the barrier too
    (`BarrierRows._later_inputs`); on 8 cores (the movers cannot fill the
    bus) only the first's, as above. Measured with ln1's f32 store of a
    kept before its barrier (`prefetch-barrier-stores=false`): the two rules
    meet here. The loads moved first (the pass's order), the store stays,
    since its bytes are then read in the phase after its barrier: 18,200
    cycles, where the store moved and the loads left would take 17,810
    (the 128-row model on 8 cores the other way: 14,279 against 14,810).
    Which should win is a cost question the pass does not ask yet."""
    rows, cores = 512, 32
    model = _model(rows)
    x = np.random.default_rng(13).standard_normal((rows, WIDTH)).astype(np.float32)
    options = ("prefetch-barrier-inputs=true prefetch-barrier-stores=false",
               "prefetch-barrier-inputs=false prefetch-barrier-stores=false")
    placed = [_inputs_before_last_barrier(npu.compile(model, cores=cores, pipeline=(
        f"builtin.module(npu-lower{{emit=cce {opts}}})"))) for opts in options]
    assert placed == [2, 0], placed
    (on, on_cycles), (off, off_cycles) = simulate_options(model, x, options, cores=cores)
    np.testing.assert_array_equal(on.view(np.uint32), off.view(np.uint32))
    assert on_cycles < off_cycles, (on_cycles, off_cycles)


def _no_tail_rule(monkeypatch) -> None:
    from npu.passes.prefetch.barrier_rows import BarrierRows
    monkeypatch.setattr(BarrierRows, "_tail_holds", lambda self, *args: False)


def test_later_chunk_loads_go_into_the_matmuls_tail(monkeypatch) -> None:
    """128 rows on 32 cores: ln2 (the kernel's last op) takes its 4 rows a
    core as 3 + 1 (`short_last`); the second chunk's residual row (3 KB a
    core, too few bytes over the bus for `_later_pays`) goes before the
    barrier too, into the MTE2 idle of the matmul's drain before it
    (`BarrierRows._tail_holds`); after it, it held that chunk's own row
    behind it, one load after the first chunk's flag."""
    def placed() -> int:
        return _inputs_before_last_barrier(npu.compile(_model(), cores=32, pipeline=(
            "builtin.module(npu-lower{emit=cce})")))
    assert placed() == 2
    _no_tail_rule(monkeypatch)
    assert placed() == 1


def test_later_chunk_in_the_tail_same_bits_fewer_cycles(monkeypatch) -> None:
    """(slow: two runs on 32 cores)"""
    x = np.random.default_rng(14).standard_normal((ROWS, WIDTH)).astype(np.float32)
    (on,), report = npu.compile(_model(), cores=32, target="ascend910")(x)
    assert report["hazards"] == []
    _no_tail_rule(monkeypatch)
    (off,), report_off = npu.compile(_model(), cores=32, target="ascend910")(x)
    np.testing.assert_array_equal(on.view(np.uint32), off.view(np.uint32))
    # measured 9,340 against 9,359 cycles (ascend910, 32 cores)
    assert report["cycles"] < report_off["cycles"], (report["cycles"], report_off["cycles"])
