"""Where npu-prefetch's loads go among the previous op's own, on 32 cores
(BERT's ln1 -> ffn_in -> ffn_out in small: a residual layernorm of 128 x 768
whose row group runs as straight-line chunks on every core, then two
matmuls with bias epilogues):

* weights prefetched into the layernorm's tail go after its last chunk's
  first vector step, so the flag that releases that step stays right
  after the chunk's loads (`gaps._issue_index`); right after the loads,
  npu-insert-sync sank it past the weights, and the vector unit waited
  for them (BERT seq 128: ln1's phase 4,033 -> 3,481 cycles);
* a matmul's bias row (its epilogue's broadcast operand) loads with its
  prefetched weights, before the chip barrier, instead of first in its own
  phase, where its flag held MTE2 a GM latency ahead of the matmul's
  loads (`rows.py`; BERT seq 128: 356-362 cycles in each of three phases).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npu
from npu.ir import arg_attrs, view_root

ROWS, WIDTH, HIDDEN = 128, 768, 1536


def _model() -> onnx.ModelProto:
    rng = np.random.default_rng(7)

    def w(shape, name, scale):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32),
                                       name)

    inits = [w((WIDTH,), "gamma", 1.0), w((WIDTH,), "beta", 1.0),
             w((WIDTH, HIDDEN), "w1", 1 / np.sqrt(WIDTH)), w((HIDDEN,), "b1", 1.0),
             w((HIDDEN, WIDTH), "w2", 1 / np.sqrt(HIDDEN)), w((WIDTH,), "b2", 1.0)]
    n = helper.make_node
    nodes = [n("Add", ["x", "r"], ["s"], name="residual"),
             n("LayerNormalization", ["s", "gamma", "beta"], ["ln"], name="ln", axis=-1,
               epsilon=1e-12),
             n("MatMul", ["ln", "w1"], ["h0"], name="ffn_in"),
             n("Add", ["h0", "b1"], ["h1"], name="bias1"),
             n("Gelu", ["h1"], ["g"], name="gelu"),
             n("MatMul", ["g", "w2"], ["y0"], name="ffn_out"),
             n("Add", ["y0", "b2"], ["y"], name="bias2")]
    graph = helper.make_graph(
        nodes, "ffn", [helper.make_tensor_value_info(v, TensorProto.FLOAT, [ROWS, WIDTH])
                       for v in "xr"],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [ROWS, WIDTH])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=9)


@pytest.fixture(scope="module")
def program():
    """The cce program's top-level ops, its arguments, its host constants
    (gamma, beta, W1, b1, W2, b2: their model order) as a set and in order
    (the kernel, which owns the module, lives as long as the fixture)."""
    kernel = npu.compile(_model(), cores=32, pipeline="builtin.module(npu-lower{emit=cce})")
    func = kernel.module.body.operations[0]
    args = list(func.regions[0].blocks[0].arguments)
    ordered = [args[k] for k, role in enumerate(kernel.interface.roles) if role == "constant"]
    constants = {a for a in args if "npu.constant" in arg_attrs(func, a.arg_number)}
    assert constants == set(ordered)
    tops = [o.operation for o in func.regions[0].blocks[0].operations]
    yield tops, args, constants, ordered
    del kernel


def _loads(tops, source) -> list[int]:
    """Indices of the top-level GM copies whose source is `source`(root)."""
    return [k for k, op in enumerate(tops)
            if op.name.startswith("cce.copy_gm_to_") and source(view_root(op.operands[0]))]


def test_weights_in_a_row_groups_tail_follow_its_last_chunks_flag(program) -> None:
    tops, args, constants, _ = program
    x, r = args[:2]  # the residual's inputs, loaded chunk by chunk
    last = max(_loads(tops, lambda root: root in (x, r)))
    weights = [k for k in _loads(tops, lambda r: r in constants)
               if tops[k].name == "cce.copy_gm_to_l1" and k > last]
    assert weights, "no weights prefetched into the layernorm's tail"
    between = tops[last + 1:weights[0]]
    flag = [k for k, op in enumerate(between) if op.name == "cce.set_flag"
            and op.attributes["src"].value == "MTE2" and op.attributes["dst"].value == "V"]
    assert flag, "the last chunk's flag to the vector unit comes after the prefetched weights"
    # nothing but index arithmetic and views between the chunk's loads and it
    assert all(not op.name.startswith("cce.") for op in between[:flag[0]])


def test_a_bias_row_loads_before_its_matmuls_barrier(program) -> None:
    tops, _, _, (_, _, _, _, w2, b2) = program
    barriers = [k for k, op in enumerate(tops) if op.name == "cce.sync_all"]
    loops = [k for k, op in enumerate(tops) if op.name == "scf.for"
             and "ffn_out" in str(op.location)]
    bias = _loads(tops, lambda r: r == b2)  # ffn_out's broadcast row
    assert len(bias) == 1 and tops[bias[0]].name == "cce.copy_gm_to_ub"
    barrier = max(k for k in barriers if k < loops[0])
    assert bias[0] < barrier, (bias, barrier)
    # in the run of ffn_out's prefetched weights, whose one flag it shares
    weights = [k for k in _loads(tops, lambda r: r == w2) if k < barrier]
    assert weights and max(weights) < bias[0]
    assert all(not op.name.startswith("cce.") for op in tops[max(weights) + 1:bias[0]])


def test_results_and_cycles_against_no_prefetch() -> None:
    rng = np.random.default_rng(5)
    x, r = (rng.standard_normal((ROWS, WIDTH)).astype(np.float32) for _ in range(2))
    on = npu.compile(_model(), cores=32, pipeline="builtin.module(npu-lower)")
    off = npu.compile(_model(), cores=32, pipeline="builtin.module(npu-lower{prefetch=false})")
    (y,), report = on(x, r)
    (y_off,), report_off = off(x, r)
    np.testing.assert_array_equal(y, y_off)  # the same instructions, loaded earlier
    assert report["hazards"] == [] and report["block_dim"] == 32
    # measured 17,182 against 19,166 cycles (18,334 before the two orders)
    assert report["cycles"] < 0.92 * report_off["cycles"], (report["cycles"],
                                                            report_off["cycles"])
