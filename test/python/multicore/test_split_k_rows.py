"""A matmul's reduction split whose partial sums the fused row group that
reads its result adds (`passes/split_cores/split_k_rows.py`): a matmul with
a bias, then a residual add and a layernorm (BERT's ffn_out and ln2). The
partials write f32 rows, the row group adds them before its residual, so
the split costs no phase and no chip barrier of its own; the model
(`split_k_model`) takes it where the phase saved beats the added loads."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import npu
from npu import diagnostics
from npu.ir import is_memref, make_context, parse_module
from npu.passes.split_cores import split_k_model
from npu.simulator import SimulationError, simulate
from npu.target import get_target


def _model(rows: int, depth: int, cols: int, then: bool = False) -> onnx.ModelProto:
    """y = LayerNorm(x W + b + r); `then`: y = LayerNorm(...) W3."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(a.astype(np.float32), name) for name, a in (
        ("w", rng.standard_normal((depth, cols)) / np.sqrt(depth)),
        ("b", rng.standard_normal(cols) * 0.1), ("g", 1 + rng.standard_normal(cols) * 0.1),
        ("be", rng.standard_normal(cols) * 0.1))]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
             helper.make_node("Add", ["m", "b"], ["a"], name="bias"),
             helper.make_node("Add", ["a", "r"], ["s"], name="residual"),
             helper.make_node("LayerNormalization", ["s", "g", "be"], ["y"], name="ln", axis=-1,
                              epsilon=1e-12)]
    if then:
        nodes[-1].output[0] = "h"
        nodes.append(helper.make_node("MatMul", ["h", "w3"], ["y"], name="next"))
        inits.append(numpy_helper.from_array(
            (rng.standard_normal((cols, cols)) / np.sqrt(cols)).astype(np.float32), "w3"))
    graph = helper.make_graph(
        nodes, "ffn_out",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, depth]),
         helper.make_tensor_value_info("r", TensorProto.FLOAT, [rows, cols])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, cols])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=9)


def _compile(model: onnx.ModelProto, cores: int, options: str = ""):
    with diagnostics.collecting() as engine:
        kernel = npu.compile(model, cores=cores, pipeline=(
            f"builtin.module(npu-lower{{{options} split-cores-remarks=true}})"))
    return kernel, [d.message for d in engine.diagnostics if "npu-split-cores:" in d.message]


def _inputs(rows: int, depth: int, cols: int) -> list[np.ndarray]:
    rng = np.random.default_rng(4)
    return [rng.standard_normal((rows, depth)).astype(np.float32),
            rng.standard_normal((rows, cols)).astype(np.float32)]


def _onnxruntime(model: onnx.ModelProto, x: np.ndarray, r: np.ndarray) -> np.ndarray:
    session = onnxruntime.InferenceSession(model.SerializeToString())
    return session.run(None, {"x": x, "r": r})[0]


SMALL = (64, 1024, 256)  # 64 blocks of reduction


def test_the_row_group_sums_a_forced_split() -> None:
    model = _model(*SMALL)
    ins = _inputs(*SMALL)
    kernel, remarks = _compile(model, 8, "split-cores-split-k=64x1024x256:3x16 "
                               "split-cores-min-bytes=0 split-cores-estimate=false")
    assert "3 partial matmul(s) of 256 and 256 summed by the fused row group" in remarks[0], remarks
    _, plain = _compile(model, 8, "split-cores-split-k-model=false split-cores-min-bytes=0 "
                        "split-cores-estimate=false")
    # no phase for the sums: as many chip barriers as unsplit
    barriers = [r.split(" chip barrier")[0].rsplit(" ", 1)[1] for r in (remarks[1], plain[0])]
    assert barriers[0] == barriers[1], (remarks, plain)
    program = kernel.module.operation.get_asm()
    assert program.count("hivm.sync_all") == int(barriers[0])
    (y,), report = kernel(*ins)
    assert report["hazards"] == [] and report["block_dim"] == 8
    np.testing.assert_allclose(y, _onnxruntime(model, *ins), rtol=2e-2, atol=1e-2)
    # the order of the sums is the IR's: another core count gives the same bits
    (again,), _ = _compile(model, 4, "split-cores-split-k=64x1024x256:3x16 "
                           "split-cores-min-bytes=0 split-cores-estimate=false")[0](*ins)
    assert np.array_equal(y.view(np.uint8), again.view(np.uint8))


def test_the_barrier_before_the_row_group_is_needed() -> None:
    model = _model(*SMALL)
    kernel, _ = _compile(model, 8, "split-cores-split-k=64x1024x256:3x16 "
                         "split-cores-min-bytes=0 split-cores-estimate=false")
    program = kernel.module.operation.get_asm(print_generic_op_form=True)
    barrier = '"hivm.sync_all"() : () -> ()'
    cut_at = program.rindex(barrier)  # orders the partials' rows before the row group
    cut = program[:cut_at] + program[cut_at + len(barrier):]
    func = kernel.module.body.operations[0]
    extra = [a for a in list(func.regions[0].blocks[0].arguments)[len(kernel.interface.roles):]
             if is_memref(a.type)]
    ins = kernel.interface.arguments(_inputs(*SMALL), extra)
    simulate(kernel.module, ins, numerics=False)
    with pytest.raises(SimulationError) as e:
        simulate(parse_module(cut, make_context()), ins, numerics=False)
    assert e.value.kind == "race"


FFN_OUT = (128, 3072, 768)  # BERT seq 128's ffn_out
MODEL = "split-cores-split-k-model=true"  # the default, said


@pytest.mark.slow
def test_the_model_splits_an_mte2_bound_reduction_and_is_faster() -> None:
    model = _model(*FFN_OUT)
    ins = _inputs(*FFN_OUT)
    kernel, remarks = _compile(model, 32, MODEL)
    assert "its reduction split by the model into 4 runs of 768" in remarks[0], remarks
    (y,), report = kernel(*ins)
    assert report["hazards"] == []
    np.testing.assert_allclose(y, _onnxruntime(model, *ins), rtol=2e-2, atol=1e-2)
    plain, said = _compile(model, 32, "split-cores-split-k-model=false")
    assert not any("reduction split" in r for r in said), said
    (_,), unsplit = plain(*ins)
    assert report["cycles"] < unsplit["cycles"], (report["cycles"], unsplit["cycles"])
    # a matmul after the row group: its prefetched weights fill the phase the split would save
    _, said = _compile(_model(*FFN_OUT, then=True), 32, MODEL)
    assert not any("reduction split" in r for r in said), said


def test_the_model_leaves_a_small_or_cube_bound_reduction_whole() -> None:
    # 768 deep into 3072 columns (BERT's ffn_in shape, f32 rows): the tiles'
    # bytes are the cube's time already; and a reduction too small to pay
    for shape in ((128, 768, 3072), (64, 256, 256)):
        _, remarks = _compile(_model(*shape), 32, MODEL)
        assert not any("reduction split" in r for r in remarks), (shape, remarks)


def test_the_model_counts_weights_loaded_before_the_barrier() -> None:
    # BERT's ffn_out on 32 cores, ffn_in's tail before it (4,224 idle MTE2
    # cycles, its split's): at seq 128 the unsplit 16x2 grid's 295 KB of
    # weights a core (three chunks) all load before the barrier (two slots
    # there, the odd last one in earlier phases), so its phase reads A
    # alone and the split does not pay; with no room before it, it does; at
    # seq 512 (six chunks a core) only two slots do, and the split pays
    t = get_target("ascend910")
    assert split_k_model.choose(128, 3072, 768, 32, 2, 4, t, 4224.0).parts == 1
    assert split_k_model.choose(128, 3072, 768, 32, 2, 4, t, 0.0).parts == 4
    assert split_k_model.choose(512, 3072, 768, 32, 2, 4, t, 4224.0).parts == 4
    assert split_k_model.weights_early(64, 3072, 48, 2, 4, 4224.0, t)
    assert not split_k_model.weights_early(64, 3072, 48, 2, 4, 1000.0, t)
    assert not split_k_model.weights_early(128, 3072, 96, 2, 4, 4224.0, t)
