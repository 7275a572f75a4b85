"""The bounds npu-double-buffer decides from (`lifetime_bounds`,
`BufferCollector.space_bounds`) must hold for the planner's real peak and
agree with bounding the whole function's buffers at once."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest
from mlir import ir

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


UB = 'memref<2048xf16, "ub">'
GM = 'memref<2048xf16, "gm">'
COPY_IN = ('"cce.copy_gm_to_ub"(%in, DST) {n_burst = 1 : i64, burst_len = 128 : i64, '
           'src_gap = 0 : i64, dst_gap = 0 : i64} : (' + GM + ', ' + UB + ') -> ()')
EXP = ('"cce.vexp"(DST, SRC) {repeat = 16 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, '
       'dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : ('
       + UB + ', ' + UB + ') -> ()')
COPY_OUT = ('"cce.copy_ub_to_gm"(SRC, %out) {n_burst = 1 : i64, burst_len = 128 : i64, '
            'src_gap = 0 : i64, dst_gap = 0 : i64} : (' + UB + ', ' + GM + ') -> ()')


def _op(text: str, dst: str = "", src: str = "") -> str:
    return "  " + text.replace("DST", dst).replace("SRC", src)


# Function-level UB allocs living over the top-level ops from their first to
# their last user: %a over ops 3-5 and %b over 4-7 (one component), %d over
# 9-10 alone; %c is unused.
SPANS = "\n".join([
    f"func.func @spans(%in: {GM}, %out: {GM}) {{",
    f"  %a = memref.alloc() : {UB}", f"  %b = memref.alloc() : {UB}",
    f"  %c = memref.alloc() : {UB}",
    _op(COPY_IN, dst="%a"), _op(EXP, dst="%b", src="%a"),
    _op(EXP, dst="%a", src="%b"), _op(EXP, dst="%b", src="%b"),
    _op(COPY_OUT, src="%b"),
    f"  %d = memref.alloc() : {UB}",
    _op(COPY_IN, dst="%d"), _op(COPY_OUT, src="%d"),
    "  return", "}", ""])


def _profile(collector, func, n):
    return ([collector.space_bounds_at(func, "ub", k) for k in range(n)],
            [collector.tied_span(func, "ub", k) for k in range(n)],
            collector.space_bounds(func, "ub"))


def _fresh(target, func):
    collector = BufferCollector(target)
    collector.track(func)
    return collector


def test_space_profile_follows_changes_of_function_level_lifetimes():
    """The per-op bounds of a tracked collector, whose function-level allocs'
    users are numbered per top-level op and spliced on `inserted`, agree with
    a fresh collector's after an op extending %a's lifetime goes in, and with
    planning the whole function's buffers at once."""
    ctx = make_context()
    module = parse_module(SPANS, ctx)
    target = get_target("ascend910")
    func = functions(module)[0]
    tracked = BufferCollector(target)
    tops = tracked.track(func)
    n = len(tops)
    before = _profile(tracked, func, n)
    assert before == _profile(_fresh(target, func), func, n)
    assert before[1][3] == (3, 7) and before[1][9] == (9, 10) and before[1][8] is None
    assert before[2] == lifetime_bounds(tracked.collect(func))
    # A use of %a and %b before %d's copy out: they live over ops 3-10, joining %d.
    with ctx, ir.Location.unknown(), ir.InsertionPoint(tops[10]):
        clone = tops[5].clone()
    tracked.inserted(10, [clone])
    after = _profile(tracked, func, n + 1)
    assert after == _profile(_fresh(target, func), func, n + 1)
    assert after[1][3] == (3, 11) and after != before
    assert after[2] == lifetime_bounds(tracked.collect(func))


def test_space_bounds_over_reads_space_bounds_at_over_a_range():
    """npu-prefetch's window query gives each op's `space_bounds_at` bound
    (lower and upper, negative indices counting from the end as there),
    and nothing for an empty range."""
    ctx = make_context()
    module = parse_module(SPANS, ctx)
    func = functions(module)[0]
    collector = BufferCollector(get_target("ascend910"))
    n = len(collector.track(func))
    for bound in (0, 1):
        at = [collector.space_bounds_at(func, "ub", k)[bound] for k in range(-2, n)]
        assert collector.space_bounds_over(func, "ub", -2, n, bound) == at
        assert collector.space_bounds_over(func, "ub", 3, 8, bound) == at[5:10]
        assert collector.space_bounds_over(func, "ub", -2, -1, bound) == at[:1]
        assert len(set(at)) > 1  # (the range is not uniform: a wrong slice shows)
    assert collector.space_bounds_over(func, "ub", 5, 5, 0) == []
