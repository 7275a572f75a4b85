"""npu-prefetch's twin shares (`passes/prefetch/twins.py`): one ONNX node
run as matmul loops on several shares of the cores (a reduction split into
runs summed by the row group that reads them, `split_k_rows`) had only its
first share's weight slots loaded in the previous op's idle MTE2 tail: L1
holds no set of slots per share beside that op. The later shares now load
their first slots into the first share's buffers (no core runs two of
them), at the same points, on their own cores: BERT seq 512 on 32 cores
90,142 -> 87,918 cycles, seq 128 on 8 cores 92,229 -> 87,609; outputs bit
for bit those without it (`prefetch-twin-shares=false`)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import has_mad, kernel_tops, l1_weights_of, simulate_options, unlooped_l1_copies
from onnx import TensorProto, helper, numpy_helper

import npu

ROWS, HIDDEN, FFN, CORES = 64, 256, 1024, 8
# ffn_out's reduction in 3 runs of 256 on shares of 2 cores, the row group's
# own run of 256 on the last 2 (forced: the model keeps so small a matmul whole)
SPLIT = (f"split-cores-split-k={ROWS}x{FFN}x{HIDDEN}:3x16 split-cores-min-bytes=0 "
         "split-cores-estimate=false")


def _model() -> bytes:
    """y = LayerNorm(relu(x W1) W2 + b + x): an FFN, its second matmul the split one."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(a.astype(np.float32), name) for name, a in (
        ("w1", rng.standard_normal((HIDDEN, FFN)) / np.sqrt(HIDDEN)),
        ("w2", rng.standard_normal((FFN, HIDDEN)) / np.sqrt(FFN)),
        ("b", rng.standard_normal(HIDDEN) * 0.1), ("g", 1 + rng.standard_normal(HIDDEN) * 0.1),
        ("be", rng.standard_normal(HIDDEN) * 0.1))]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h0"], name="ffn_in"),
             helper.make_node("Relu", ["h0"], ["h"], name="act"),
             helper.make_node("MatMul", ["h", "w2"], ["m"], name="ffn_out"),
             helper.make_node("Add", ["m", "b"], ["a"], name="bias"),
             helper.make_node("Add", ["a", "x"], ["s"], name="residual"),
             helper.make_node("LayerNormalization", ["s", "g", "be"], ["y"], name="ln", axis=-1,
                              epsilon=1e-12)]
    graph = helper.make_graph(
        nodes, "ffn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [ROWS, HIDDEN])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [ROWS, HIDDEN])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)],
                             ir_version=9).SerializeToString()


def _early_copies(options: str) -> list[int]:
    """Per share of ffn_out's runs, the copies of its L1 weights outside
    loops before the chip barrier ahead of the runs (in ffn_in's tail)."""
    emitted = npu.compile(_model(), cores=CORES, pipeline=(
        f"builtin.module(npu-lower{{emit=cce {SPLIT} {options}}})"))
    constants, tops = kernel_tops(emitted)
    guards = [k for k, op in enumerate(tops) if op.name == "scf.if"
              and '"ffn_out"' in str(op.location) and has_mad(op)]
    assert len(guards) == 4, "three runs and the row group's own, each on a share"
    barrier = max(k for k in range(guards[0]) if tops[k].name == "cce.sync_all")
    weights = l1_weights_of(tops[guards[0]], constants)
    early = [op for op in tops[:barrier] if op.name == "scf.if"
             and unlooped_l1_copies(op, weights)]
    return [unlooped_l1_copies(op, weights) for op in early]


def test_every_share_loads_its_first_slot_before_the_barrier() -> None:
    # each share's, under a guard of its cores (without twins: the first's alone)
    assert _early_copies("") == [1, 1, 1, 1]


@pytest.mark.slow  # ~10 s: compiled three times, simulated twice on 8 cores
def test_twin_slots_keep_the_bits_and_are_faster() -> None:
    assert _early_copies("prefetch-twin-shares=false") == [1]
    x = np.random.default_rng(0).standard_normal((ROWS, HIDDEN)).astype(np.float32)
    (off, off_cycles), (on, on_cycles) = simulate_options(
        _model(), x, (f"cores={CORES} {SPLIT} prefetch-twin-shares=false",
                      f"cores={CORES} {SPLIT}"), target="ascend910")
    assert np.array_equal(off.view(np.uint8), on.view(np.uint8))
    assert on_cycles < off_cycles, (on_cycles, off_cycles)  # 10,682 against 11,702
