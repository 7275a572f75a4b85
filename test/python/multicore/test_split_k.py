"""A matmul's reduction split over the cores (`passes/split_cores/split_k.py`,
npu-split-cores' `split-k`): partial matmuls over runs of the reduction
write f32 sums to GM, and after a chip barrier the epilogue group reduces
its own run, adds the partial sums in a fixed order and only then applies
its bias and GELU. The result matches numpy on several core counts, with a
reduction that does not divide by the parts, the simulator's race checks
are clean, and the barrier before the sum is needed."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npu
from npu import diagnostics
from npu.frontend.compile import CompileError
from npu.ir import is_memref, make_context, parse_module
from npu.simulator import SimulationError, simulate

ROWS, DEPTH, COLS, OUT = 64, 1040, 128, 64  # DEPTH: 65 blocks of 16
SPLIT = f"{ROWS}x{DEPTH}x{COLS}"
SECOND = f"{ROWS}x{COLS}x{OUT}"


def _model(ffn: bool = False) -> onnx.ModelProto:
    """y = gelu(x W + b); `ffn`: y = gelu(x W + b) W2 + b2 (the first
    group's result is the next matmul's f16 operand: its epilogue computes
    in f16 unless split)."""
    rng = np.random.default_rng(7)
    w = (rng.standard_normal((DEPTH, COLS)) / np.sqrt(DEPTH)).astype(np.float32)
    b = (rng.standard_normal(COLS) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((COLS, OUT)) / np.sqrt(COLS)).astype(np.float32)
    b2 = (rng.standard_normal(OUT) * 0.1).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
             helper.make_node("Add", ["m", "b"], ["a"], name="bias"),
             helper.make_node("Gelu", ["a"], ["g" if ffn else "y"], name="gelu")]
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")]
    if ffn:
        nodes += [helper.make_node("MatMul", ["g", "w2"], ["m2"], name="mm2"),
                  helper.make_node("Add", ["m2", "b2"], ["y"], name="bias2")]
        inits += [numpy_helper.from_array(w2, "w2"), numpy_helper.from_array(b2, "b2")]
    graph = helper.make_graph(
        nodes, "ffn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [ROWS, DEPTH])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [ROWS, OUT if ffn else COLS])],
        inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=9)


def _f16(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float16).astype(np.float64)


def _want(x: np.ndarray, ffn: bool = False) -> np.ndarray:
    from math import erf
    init = {i.name: numpy_helper.to_array(i) for i in _model(ffn).graph.initializer}
    # f16 operands, as the cube takes them; sums and epilogue in f64
    a = _f16(x) @ _f16(init["w"]) + init["b"]
    g = 0.5 * a * (1 + np.vectorize(erf)(a / np.sqrt(2)))
    return _f16(g) @ _f16(init["w2"]) + init["b2"] if ffn else g


def _compile(cores: int, split_k: str, ffn: bool = False, grids: str = ""):
    """The kernel and npu-split-cores' remarks (`grids`: forced, and any op
    large enough to split)."""
    options = f"split-cores-split-k={split_k} " if split_k else ""
    options += f"split-cores-grids={grids} split-cores-min-bytes=0 " if grids else ""
    with diagnostics.collecting() as engine:
        kernel = npu.compile(_model(ffn), cores=cores, pipeline=(
            f"builtin.module(npu-lower{{{options}split-cores-estimate=false "
            "split-cores-remarks=true})"))
    return kernel, [d.message for d in engine.diagnostics if "npu-split-cores:" in d.message]


X = np.random.default_rng(8).standard_normal((ROWS, DEPTH)).astype(np.float32)


@pytest.mark.parametrize("cores,parts,last", [(4, 2, 1), (8, 4, 5), (16, 4, 1), (32, 3, 2)])
def test_split_k_matches_numpy(cores: int, parts: int, last: int) -> None:
    kernel, remarks = _compile(cores, f"{SPLIT}:{parts}x{last}")
    run = (DEPTH // 16 - last) // parts * 16
    assert (f"{parts} partial matmul(s) of {run} and {last * 16} in its epilogue group"
            in remarks[0]), remarks
    # the partial matmuls side by side, then a barrier, then the group
    assert remarks[1].count("ascend.matmul") == parts and "matmul epilogue" in remarks[1], remarks
    (y,), report = kernel(X)
    assert report["hazards"] == [], report["hazards"][:3]
    np.testing.assert_allclose(y, _want(X), rtol=1e-2, atol=1e-2)
    (y_whole,), _ = _compile(cores, "")[0](X)
    # the same sums associated otherwise: f32 rounding apart, the epilogue
    # (f16 GELU) rounding the same values alike almost everywhere
    np.testing.assert_allclose(y, y_whole, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("split", [f"{SPLIT}:4x1", f"{SPLIT}:4x1;{SECOND}:2x2"])
def test_an_f16_epilogue_sums_and_computes_in_f32(split: str) -> None:
    # GELU's result is the second matmul's f16 operand: unsplit, its group
    # computes in f16; split, the f32 sums come first and it computes in f32
    kernel, remarks = _compile(8, split, ffn=True)
    assert remarks[0].count("its reduction split") == split.count(":"), remarks
    assert kernel.module.operation.get_asm().count("hivm.sync_all") >= 1
    (y,), report = kernel(X)
    assert report["hazards"] == [] and report["block_dim"] == 8
    np.testing.assert_allclose(y, _want(X, ffn=True), rtol=1e-2, atol=1e-2)


def _without_last_barrier(kernel) -> None:
    """The program runs race-free, and with its last chip barrier deleted
    the race checker stops it."""
    program = kernel.module.operation.get_asm(print_generic_op_form=True)
    barrier = '"hivm.sync_all"() : () -> ()'
    # the last barrier orders the partial sums before the group adds them
    cut_at = program.rindex(barrier)
    cut = program[:cut_at] + program[cut_at + len(barrier):]
    func = kernel.module.body.operations[0]
    extra = [a for a in list(func.regions[0].blocks[0].arguments)[len(kernel.interface.roles):]
             if is_memref(a.type)]
    ins = kernel.interface.arguments([X], extra)
    simulate(kernel.module, ins, numerics=False)  # with it: no race
    with pytest.raises(SimulationError) as e:
        simulate(parse_module(cut, make_context()), ins, numerics=False)
    assert e.value.kind == "race"


def test_the_barrier_before_the_sum_is_needed() -> None:
    _without_last_barrier(_compile(8, f"{SPLIT}:4x5")[0])


# Megatron's FFN: the first matmul on 4 column parts x 2 row parts (core =
# column part x 2 + row part), the second's reduction cut at those columns,
# partial r on the two cores that computed column part r, each over its own
# rows: every core reads only the GELU output it wrote, so no barrier goes
# between the two matmuls; one goes before the group that sums the parts.
MEGATRON = dict(split_k=f"{SECOND}:3x2", grids=f"{SPLIT}:4x2;{ROWS}x32x{OUT}:1x2")


def test_megatron_ffn_partials_need_no_barrier_after_the_first_matmul() -> None:
    kernel, remarks = _compile(8, ffn=True, **MEGATRON)
    assert [f"ascend.matmul 1x2 on cores {2 * r}-{2 * r + 1}" in remarks[1]
            for r in range(3)] == [True] * 3, remarks
    assert "2 chip barriers;" in remarks[1], remarks  # the input's, the sums'
    (y,), report = kernel(X)
    assert report["hazards"] == [] and report["block_dim"] == 8
    np.testing.assert_allclose(y, _want(X, ffn=True), rtol=1e-2, atol=1e-2)
    _without_last_barrier(kernel)


@pytest.mark.parametrize("entry,why", [
    (f"{SPLIT}:4x2", "do not make 4 equal runs"),
    (f"{SPLIT}:1x65", "do not make 1 equal runs"),
    ("64x1024x128:2x2", "no matmul epilogue group of 64x1024x128"),
    (f"{SPLIT}:4", "expected 'MxNxK:PxL'"),
])
def test_bad_entries_are_refused(entry: str, why: str) -> None:
    with pytest.raises(CompileError, match=why):
        _compile(8, entry)
