"""Independent ops side by side, each on its own share of the cores
(`passes/split_cores/share.py`): three projections of one input (BERT's Q,
K and V) run on cores 0-11, 12-23 and 24-31 (8 cores each is the least
slowest share; the 8 it leaves idle go to Q and K) instead of one after
another on all 32; the results are the same, the program faster, and the
barrier before their consumer needed."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import npu
from npu import diagnostics
from npu.ir import is_memref, make_context, parse_module
from npu.simulator import SimulationError, simulate

ROWS, WIDTH = 128, 768


def qkv_projections(rng) -> tuple[list, list]:
    """(initializers, nodes) of q, k, v = x Wq + bq, x Wk + bk, x Wv + bv."""
    inits, nodes = [], []
    for name in "qkv":
        w = (rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH)).astype(np.float32)
        b = (rng.standard_normal(WIDTH) * 0.1).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{name}"), numpy_helper.from_array(b, f"b{name}")]
        nodes += [helper.make_node("MatMul", ["x", f"w{name}"], [f"m{name}"], name=f"{name}_proj"),
                  helper.make_node("Add", [f"m{name}", f"b{name}"], [name], name=f"{name}_bias")]
    return inits, nodes


def _projections() -> onnx.ModelProto:
    """q, k, v = x Wq + bq, x Wk + bk, x Wv + bv; the outputs are k, v and
    q transposed (a later op reading q across every core's slice)."""
    rng = np.random.default_rng(4)
    inits, nodes = qkv_projections(rng)
    nodes.append(helper.make_node("Transpose", ["q"], ["qt"], name="q_t", perm=[1, 0]))
    graph = helper.make_graph(
        nodes, "projections",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [ROWS, WIDTH])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in
         (("qt", [WIDTH, ROWS]), ("k", [ROWS, WIDTH]), ("v", [ROWS, WIDTH]))], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _compile(share: bool, cores: int = 32):
    with diagnostics.collecting() as engine:
        kernel = npu.compile(_projections(), cores=cores, pipeline=(
            f"builtin.module(npu-lower{{split-cores-share={str(share).lower()} "
            "split-cores-remarks=true})"))
    split = [d.message for d in engine.diagnostics if "npu-split-cores:" in d.message]
    return kernel, split


X = np.random.default_rng(5).standard_normal((ROWS, WIDTH)).astype(np.float32)


def test_independent_projections_share_the_cores() -> None:
    shared, (remark,) = _compile(True)
    for share in ("6x2 on cores 0-11", "6x2 on cores 12-23", "8x1 on cores 24-31"):
        assert share in remark, remark
    apart, (remark_apart,) = _compile(False)
    assert "on cores" not in remark_apart
    ys, report = shared(X)
    ys_apart, report_apart = apart(X)
    wants = onnxruntime.InferenceSession(_projections().SerializeToString()).run(None, {"x": X})
    for y, y_apart, want in zip(ys, ys_apart, wants):
        np.testing.assert_allclose(y, want, rtol=2e-2, atol=2e-2)
        # each projection's grid is its share's: its f32 sums may associate
        # otherwise than the 32-core grid's, to f32 rounding
        np.testing.assert_allclose(y, y_apart, rtol=1e-5, atol=1e-5)
    assert report["hazards"] == [] and report["block_dim"] == 32
    # measured 15,574 against 16,854 cycles (the transpose after them is
    # the same in both)
    assert report["cycles"] < 0.95 * report_apart["cycles"], (report["cycles"],
                                                             report_apart["cycles"])


def test_the_barrier_after_the_shares_is_needed() -> None:
    kernel, _ = _compile(True)
    program = kernel.module.operation.get_asm(print_generic_op_form=True)
    barrier = '"hivm.sync_all"() : () -> ()'
    assert program.count(barrier) >= 1
    # the first barrier after the projections orders q before its
    # transpose, which reads other cores' columns: without it the cores race
    shares = program.index("npu.block_idx")
    cut_at = program.index(barrier, program.index("arith.andi", shares))
    cut = program[:cut_at] + program[cut_at + len(barrier):]
    func = kernel.module.body.operations[0]
    extra = [a for a in list(func.regions[0].blocks[0].arguments)[len(kernel.interface.roles):]
             if is_memref(a.type)]  # the GM workspace (the launch gives the block index)
    ins = kernel.interface.arguments([X], extra)
    with pytest.raises(SimulationError) as e:
        simulate(parse_module(cut, make_context()), ins, numerics=False)
    assert e.value.kind == "race"


def test_dependent_ops_do_not_share() -> None:
    # the transpose reads what q's projection wrote: never beside it
    _, (remark,) = _compile(True)
    assert remark.count("on cores") == 3 and "transpose" in remark.split("on cores 24-31")[1]


@pytest.mark.slow  # a whole ResNet-18 at 64x64 on 32 cores: ~12 s
def test_a_downsample_conv_beside_the_first_conv_of_its_block() -> None:
    # ResNet-18's stage entries: the stride-2 3x3 conv and the 1x1 shortcut
    # read the same map; each conv's grid keeps its runs of rows
    # (npu.core_part), counted from its own first core.
    from npu.frontend.cnn import resnet

    model = resnet(18, size=64, classes=10, dtype=np.float16)
    x = np.random.default_rng(4).standard_normal((1, 3, 64, 64)).astype(np.float16)
    with diagnostics.collecting() as engine:
        kernel = npu.compile(model, pipeline="builtin.module(npu-lower{split-cores-remarks=true})")
    (remark,) = [d.message for d in engine.diagnostics if "npu-split-cores:" in d.message]
    assert remark.count("conv epilogue") and remark.count("on cores") == 6, remark
    (y,), report = kernel(x)
    (want,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"input": x})
    assert report["hazards"] == []
    np.testing.assert_allclose(y.astype(np.float32), want.astype(np.float32), atol=1e-2)
    (y_apart,), report_apart = npu.compile(model, pipeline=(
        "builtin.module(npu-lower{split-cores-share=false})"))(x)
    np.testing.assert_allclose(y.astype(np.float32), y_apart.astype(np.float32), atol=4e-3)
    assert report["cycles"] < report_apart["cycles"]
