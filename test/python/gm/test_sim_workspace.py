"""The simulator and the reference on GM workspaces: `memref.view`s of an
i8 argument marked `npu.workspace` are tensors of their own for bounds, share
the workspace's bytes for races and initialised state, and the workspace is
scratch (allocated when left out, not an output)."""

from __future__ import annotations

import numpy as np
import pytest

from gm_programs import through_temporaries
from helpers import compile_program, random_inputs
from npu.ir import functions, make_context, parse_module
from npu.reference import evaluate
from npu.simulator import SimulationError, simulate

COPY = "n_burst = 1 : i64, burst_len = {n} : i64, src_gap = 0 : i64, dst_gap = 0 : i64"


def _cce(second_view_shift: int, load_after_set: bool = True, store_blocks: int = 2) -> str:
    """Load %in to UB, store `store_blocks` 32-byte blocks of it into a view of
    the workspace at `second_view_shift`, with a load of another view (at 0)
    in between that the flag does (or does not) cover."""
    copy = COPY.format(n=2)
    store = COPY.format(n=store_blocks)
    load_ws = (f'  "cce.copy_gm_to_ub"(%v1, %u2) {{{copy}}} : (memref<32xf16, "gm">, '
               f'memref<32xf16, "ub">) -> ()\n')
    return (
        'func.func @f(%in: memref<32xf16, "gm">, %ws: memref<1024xi8, "gm"> {npu.workspace}) {\n'
        '  %c0 = arith.constant 0 : index\n'
        f'  %cs = arith.constant {second_view_shift} : index\n'
        '  %v1 = memref.view %ws[%c0][] : memref<1024xi8, "gm"> to memref<32xf16, "gm">\n'
        '  %v2 = memref.view %ws[%cs][] : memref<1024xi8, "gm"> to memref<32xf16, "gm">\n'
        '  %u1 = memref.alloc() : memref<64xf16, "ub">\n'
        '  %u2 = memref.alloc() : memref<32xf16, "ub">\n'
        f'  "cce.copy_gm_to_ub"(%in, %u1) {{{copy}}} : (memref<32xf16, "gm">, memref<64xf16, "ub">) -> ()\n'
        + ("" if load_after_set else load_ws)
        + '  "cce.set_flag"() {src = "MTE2", dst = "MTE3", event = 0 : i64} : () -> ()\n'
        + (load_ws if load_after_set else "")
        + '  "cce.wait_flag"() {src = "MTE2", dst = "MTE3", event = 0 : i64} : () -> ()\n'
        f'  "cce.copy_ub_to_gm"(%u1, %v2) {{{store}}} : (memref<64xf16, "ub">, memref<32xf16, "gm">) -> ()\n'
        '  return\n}\n')


def _run(text: str, inputs, **kw):
    module = parse_module(text, make_context())
    return simulate(module, inputs, **kw)


X = np.arange(32, dtype=np.float16)


def test_views_of_one_workspace_race_on_common_bytes():
    # The store into the view at 0 overwrites bytes a load the flag does not
    # cover reads: a write-after-read race across two views.
    with pytest.raises(SimulationError, match=r"race: 'cce.copy_ub_to_gm' on pipe MTE3 overwrites "
                       r"gm:arg1 bytes \[0, 64\) read by 'cce.copy_gm_to_ub'"):
        _run(_cce(0), [X])
    # Disjoint views (the second at 512): no common byte, no race.
    res = _run(_cce(512), [X])
    assert res.hazards == [] and res.outputs[0].tolist() == X.tolist()
    # The same bytes, with the load before the set: ordered.
    assert _run(_cce(0, load_after_set=False), [X]).hazards == []


def test_the_workspace_is_scratch():
    res = _run(_cce(512), [X])
    assert len(res.outputs) == 1  # the workspace is not an output
    assert res.report["gm"]["workspace_bytes"] == 1024
    # It may also be passed in, then it is loaded like any argument.
    res = _run(_cce(512), [X, np.zeros(1024, np.int8)])
    assert len(res.outputs) == 1
    with pytest.raises(SimulationError, match=r"takes 2 memref arguments \(1 without the 1 "
                                              r"workspace argument\(s\)\), got 3 input arrays"):
        _run(_cce(512), [X, X, X])


def test_a_view_is_its_own_allocation_for_bounds():
    # 64 bytes from a view of 64: fine; 128 bytes run into the next tensor.
    assert _run(_cce(512, store_blocks=2), [X]).hazards == []
    with pytest.raises(SimulationError, match=r"bounds: 'cce.copy_ub_to_gm' writes gm:arg1 bytes "
                                              r"\[512, 640\) outside its operand #1's allocation "
                                              r"\[512, 576\) \(memref<32xf16, \"gm\"> view @ -:5:"):
        _run(_cce(512, store_blocks=4), [X])


def test_a_view_past_the_workspace_is_a_bounds_error():
    with pytest.raises(SimulationError, match=r"-:5:9: error: bounds: 'memref.view' of 64 bytes at "
                                              r"byte shift 992 does not fit its source's allocation "
                                              r"\[0, 1024\)"):
        _run(_cce(992), [X])


NEVER_WRITTEN = """
func.func @f(%out: memref<64xf32, "gm">) {
  %t = memref.alloc() : memref<64xf32, "gm">
  "ascend.relu"(%t, %out) : (memref<64xf32, "gm">, memref<64xf32, "gm">) -> ()
  return
}
"""


@pytest.mark.parametrize("pipeline", ["npu-lower{plan-gm=false}", "npu-lower"])
def test_reading_a_temporary_never_written_is_uninitialised(pipeline):
    module = compile_program(NEVER_WRITTEN, pipeline)
    with pytest.raises(SimulationError, match=r"uninitialized: 'cce.vrelu' reads ub bytes"):
        simulate(module, [np.zeros(64, np.float32)])


def test_tensors_under_one_granule_use_the_padding():
    """A 10-element f16 temporary (20 bytes): the vector lowering moves whole
    32-byte blocks, in bounds thanks to the allocation's granule padding, both
    as an alloc and as a view of the workspace."""
    source = through_temporaries("ascend.relu", [((10,), "f16")], ((10,), "f16"))
    inputs = random_inputs(source)
    for pipeline in ("npu-lower{plan-gm=false}", "npu-lower"):
        res = simulate(compile_program(source, pipeline), inputs)
        np.testing.assert_array_equal(res.outputs[1], np.maximum(inputs[0], 0))


def test_reference_evaluates_planned_programs():
    source = through_temporaries("ascend.exp", [((6, 40), "f32")], ((6, 40), "f32"))
    inputs = random_inputs(source, seed=5)
    planned_module = compile_program(source, "npu-plan-gm")  # modules outlive their functions' use
    unplanned_module = compile_program(source, "")
    planned, unplanned = functions(planned_module)[0], functions(unplanned_module)[0]
    got = evaluate(planned, inputs)
    assert len(got) == 2  # the workspace is not among the results
    for g, e in zip(got, evaluate(unplanned, inputs)):
        np.testing.assert_array_equal(g, e)
