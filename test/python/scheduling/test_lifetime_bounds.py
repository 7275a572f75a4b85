"""The bounds npu-double-buffer decides from (`lifetime_bounds`,
`BufferCollector.space_bounds`) must hold for the planner's real peak and
agree with bounding the whole function's buffers at once."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from npu.ir import functions, make_context, parse_module
from npu.memory_planning import lifetime_bounds, lower_bound, overlap_graph, place
from npu.passes.buffer_lifetimes import BufferCollector
from npu.pipeline import run_pipeline
from npu.target import ON_CHIP_BUFFERS, get_target


@dataclass
class _Life:
    size: int
    start: int
    end: int


@pytest.mark.parametrize("seed", range(40))
def test_peak_between_bounds(seed):
    rng = random.Random(seed)
    buffers = []
    for _ in range(rng.randint(1, 40)):
        start = rng.randint(0, 60)
        buffers.append(_Life(32 * rng.randint(1, 8), start, start + rng.randint(0, 12)))
    low, high = lifetime_bounds(buffers)
    assert low == lower_bound(buffers)[0]
    peak = place(buffers, overlap_graph(buffers)).peak
    assert low <= peak <= high
    # Lifetimes that never meet: every component is one buffer.
    apart = [_Life(b.size, 20 * i, 20 * i + 5) for i, b in enumerate(buffers)]
    assert lifetime_bounds(apart) == (max(b.size for b in buffers),) * 2


ND = 'memref<256x512xf16, "gm">'
PROGRAM = "\n".join([
    f"func.func @f(%x: {ND}, %w: {ND}, %t1: {ND}, %t2: {ND}) {{",
    f'  "ascend.add"(%x, %w, %t1) : ({ND}, {ND}, {ND}) -> ()',
    f'  "ascend.exp"(%t1, %t2) : ({ND}, {ND}) -> ()',
    '  %a = memref.alloc() : memref<64xf16, "ub">',
    '  %b = memref.alloc() : memref<4096xf16, "l1">',
    "  return", "}", ""])


@pytest.mark.parametrize("pipeline", ["npu-lower{emit=cce fuse=false}", "npu-lower{emit=cce}"])
def test_space_bounds_match_the_whole_function(pipeline):
    ctx = make_context()
    module = parse_module(PROGRAM, ctx)
    target = get_target("ascend910")
    run_pipeline(module, pipeline, target)
    func = functions(module)[0]
    collector = BufferCollector(target)
    collector.track(func)
    buffers = collector.collect(func)
    assert any(b.space == "ub" for b in buffers)
    for space in ON_CHIP_BUFFERS:
        group = [b for b in buffers if b.space == space]
        assert collector.space_bounds(func, space) == lifetime_bounds(group)
