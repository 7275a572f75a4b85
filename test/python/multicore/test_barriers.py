"""Chip barriers (`cce.sync_all`) in programs whose ops depend on each other.

A program split over cores with barriers computes the single-core results bit
for bit; deleting any one of its barriers is caught as a race, and putting a
core-local pipe_barrier(ALL) in its place as a race between cores (the
barriers npu-split-cores places are all needed).
"""

from __future__ import annotations

import numpy as np
import pytest

from npu.ir import ParseError, make_context, parse_module
from npu.pipeline import run_pipeline
from npu.simulator import SimulationError, simulate
from npu.target import get_target

R4 = 'memref<4x1024xf16, "gm">'
R2 = 'memref<2x2048xf16, "gm">'
FLAT = 'memref<4096xf16, "gm">'

# exp on 4 cores (a row each), an add over rows twice as long on 2 cores (core
# 0 reads what cores 0 and 1 wrote), then exp on 4 cores again: two barriers.
CHAIN = f"""func.func @chain(%a: {R4}, %b: {R4}, %c: {R2}, %d: {R4}) {{
  "ascend.exp"(%a, %b) : ({R4}, {R4}) -> ()
  %b1 = memref.collapse_shape %b [[0, 1]] : {R4} into {FLAT}
  %b2 = memref.expand_shape %b1 [[0, 1]] output_shape [2, 2048] : {FLAT} into {R2}
  "ascend.add"(%b2, %b2, %c) : ({R2}, {R2}, {R2}) -> ()
  %c1 = memref.collapse_shape %c [[0, 1]] : {R2} into {FLAT}
  %c2 = memref.expand_shape %c1 [[0, 1]] output_shape [4, 1024] : {FLAT} into {R4}
  "ascend.exp"(%c2, %d) : ({R4}, {R4}) -> ()
  return
}}
"""
SPLIT = "builtin.module(npu-split-cores{cores=4 min-bytes=0 estimate=false},npu-lower)"
BARRIER = '"hivm.sync_all"() : () -> ()'


def _compiled(text: str, pipeline: str) -> str:
    module = parse_module(text, make_context())
    run_pipeline(module, pipeline, get_target())
    return module.operation.get_asm(print_generic_op_form=True)


def _inputs():
    rng = np.random.default_rng(5)
    return [rng.uniform(-2, 2, (4, 1024)).astype(np.float16), np.zeros((4, 1024), np.float16),
            np.zeros((2, 2048), np.float16), np.zeros((4, 1024), np.float16)]


def test_dependent_ops_on_many_cores_equal_one_core() -> None:
    one = simulate(parse_module(_compiled(CHAIN, "builtin.module(npu-lower)"), make_context()),
                   _inputs())
    text = _compiled(CHAIN, SPLIT)
    assert text.count(BARRIER) == 2
    many = simulate(parse_module(text, make_context()), _inputs())
    assert many.report["block_dim"] == 4 and many.hazards == []
    for a, b in zip(one.outputs, many.outputs):
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


def _without_barrier(k: int, instead: str = "") -> str:
    """The split CHAIN with its k-th chip barrier replaced by `instead`."""
    text = _compiled(CHAIN, SPLIT)
    at = -1
    for _ in range(k + 1):
        at = text.index(BARRIER, at + 1)
    return text[:at] + instead + text[at + len(BARRIER):]


@pytest.mark.parametrize("k", [0, 1])
def test_deleting_any_barrier_is_a_race(k: int) -> None:
    # npu-insert-sync counts on the chip barrier for the core's own pipe
    # order across it too (no flags there), so without it the first race
    # found may be one inside a core.
    with pytest.raises(SimulationError) as e:
        simulate(parse_module(_without_barrier(k), make_context()), _inputs())
    assert e.value.kind == "race"


@pytest.mark.parametrize("k", [0, 1])
def test_a_core_barrier_in_place_of_any_chip_barrier_is_a_race_between_cores(k: int) -> None:
    # With the core's pipes still drained there (pipe_barrier(ALL)), what
    # is left unordered is the cores: each chip barrier is needed for them.
    text = _without_barrier(k, '"hivm.pipe_barrier"() {pipe = "ALL"} : () -> ()')
    with pytest.raises(SimulationError) as e:
        simulate(parse_module(text, make_context()), _inputs())
    assert e.value.kind == "race" and "no ordering between the cores" in str(e.value)


def test_the_barrier_costs_its_cycles() -> None:
    # One core reaching a barrier alone still pays it: the launch waits
    # sync_all_cycles after the last arrival.
    text = ('func.func @k() {\n  "cce.sync_all"() : () -> ()\n  "cce.sync_all"() : () -> ()\n'
            '  return\n}\n')
    res = simulate(parse_module(text, make_context()), [])
    assert res.cycles >= 2 * get_target().sync_all_cycles


def test_sync_all_under_a_branch_is_refused() -> None:
    text = ('func.func @k(%c: i1) {\n  scf.if %c {\n    "cce.sync_all"() : () -> ()\n  }\n'
            '  return\n}\n')
    with pytest.raises(ParseError):  # the message: test/Dialect/CCE/invalid.mlir
        parse_module(text, make_context())


def test_the_trace_shows_every_core() -> None:
    res = simulate(parse_module(_compiled(CHAIN, SPLIT), make_context()), _inputs())
    events = res.chrome_trace()["traceEvents"]
    names = {e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert names == {f"AI core {c} (ascend910)" for c in range(4)}
    assert {e["pid"] for e in events if e.get("name") == "sync_all"} == {1, 2, 3, 4}


def test_the_html_timeline_shows_every_core() -> None:
    from npu.simulator.html_report import html_report

    res = simulate(parse_module(_compiled(CHAIN, SPLIT), make_context()), _inputs())
    page = html_report(res, res.report)
    assert all(f'id="timeline-core{c}"' in page for c in range(4))


def test_cores_with_the_same_timeline_share_one_drawing() -> None:
    """A split whose slices are alike draws each distinct timeline once,
    under a heading naming its cores; every core keeps its anchor."""
    import re
    from types import SimpleNamespace

    from npu.diagnostics import int_ranges
    from npu.simulator.html_report import timelines

    res = simulate(parse_module(_compiled(CHAIN, SPLIT), make_context()), _inputs())
    trace, tl = res.core_traces[0]
    other = (trace[:len(trace) // 2], tl)  # a core that stopped halfway
    twin = SimpleNamespace(core_traces=[res.core_traces[0]] * 3 + [other], target=res.target)
    page = timelines(twin, res.report)
    assert re.findall(r"<h3>([^<]*)", page) == ["cores 0-2 (the same timeline)", "core 3"]
    assert page.count("<svg") == 2 and all(f'id="timeline-core{c}"' in page for c in range(4))
    assert int_ranges([0, 1, 2, 5, 7, 8]) == "0-2, 5, 7-8"


def _rows_of_b(first: int) -> str:
    """exp on 4 cores (a row each), then exp of rows first, first + 1 of its
    result (a static subview) on 2 cores."""
    sub = f'memref<2x1024xf16, strided<[1024, 1], offset: {first * 1024}>, "gm">'
    return f"""func.func @rows(%a: {R4}, %b: {R4}, %d: memref<2x1024xf16, "gm">) {{
  "ascend.exp"(%a, %b) : ({R4}, {R4}) -> ()
  %s = memref.subview %b[{first}, 0] [2, 1024] [1, 1] : {R4} to {sub}
  "ascend.exp"(%s, %d) : ({sub}, memref<2x1024xf16, "gm">) -> ()
  return
}}
"""


@pytest.mark.parametrize("first,barriers", [(0, 0), (2, 1)])
def test_a_subview_compares_its_boxes_in_the_buffer(first: int, barriers: int) -> None:
    # A subview's boxes are placed in the view it cuts (`barriers._lifted`):
    # rows 0-1 are read on the cores that wrote them (no barrier: a split
    # reduction's partial matmul over the columns its cores computed), rows
    # 2-3 on other cores (a barrier, and without it a race).
    text = _compiled(_rows_of_b(first), SPLIT)
    assert text.count(BARRIER) == barriers
    x = np.random.default_rng(6).uniform(-2, 2, (4, 1024)).astype(np.float16)
    ins = [x, np.zeros_like(x), np.zeros((2, 1024), np.float16)]
    res = simulate(parse_module(text, make_context()), ins)
    assert res.report["block_dim"] == 4 and res.hazards == []
    np.testing.assert_allclose(res.outputs[2].astype(np.float32),
                               np.exp(np.exp(x[first:first + 2].astype(np.float32))),
                               rtol=3e-3)
    if barriers:
        cut = text.replace(BARRIER, "", 1)
        with pytest.raises(SimulationError) as e:
            simulate(parse_module(cut, make_context()), ins)
        assert e.value.kind == "race"
