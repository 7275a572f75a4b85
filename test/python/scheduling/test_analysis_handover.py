"""`npu-lower` hands the lifetimes `npu-double-buffer` kept up to date to
`npu-plan-memory`, and their access analyses (moved to the planned offsets)
to `npu-insert-sync`, instead of analysing every op again. Both must be
exactly what a fresh analysis of the IR at that point gives."""

from __future__ import annotations

import pytest

from npu.analysis.access import AccessAnalysis, is_access_op
from npu.ir import functions, make_context, parse_module, walk
from npu.passes import registry
from npu.passes.buffer_lifetimes import collect_buffers, collector_for
from npu.passes.double_buffer import SLOT_ATTR
from npu.pipeline import run_pipeline
from npu.target import get_target

ND16 = 'memref<256x512xf16, "gm">'
ND32 = 'memref<256x512xf32, "gm">'
A_NZ = 'memref<32x16x16x16xf16, "gm">'   # 256 x 512
B_NZ = 'memref<16x32x16x16xf16, "gm">'   # 512 x 256
C_NZ = 'memref<16x16x16x16xf32, "gm">'   # 256 x 256
PROGRAM = "\n".join([
    f"func.func @f(%x: {ND16}, %w: {ND16}, %t: {ND16}, %u: {ND16}, %a: {A_NZ}, %b: {B_NZ}, "
    f"%c: {C_NZ}) {{",
    f'  "ascend.add"(%x, %w, %t) : ({ND16}, {ND16}, {ND16}) -> ()',
    f'  "ascend.matmul"(%a, %b, %c) : ({A_NZ}, {B_NZ}, {C_NZ}) -> ()',
    f'  "ascend.exp"(%t, %u) : ({ND16}, {ND16}) -> ()',
    "  return", "}", ""])


def _lowered_to_cce_ops(target):
    """The module after the lowerings, before npu-double-buffer."""
    module = parse_module(PROGRAM, make_context())
    run_pipeline(module, "npu-lower-elementwise,npu-lower-matmul", target)
    return module


@pytest.mark.parametrize("unmarked", [True, False])
def test_handed_over_analyses_equal_fresh_ones(unmarked):
    target = get_target("ascend910")
    module = _lowered_to_cce_ops(target)
    passes = registry()
    double_buffer = passes["npu-double-buffer"](target, unmarked=unmarked)
    double_buffer.run(module.operation)
    func = functions(module)[0]
    collector = collector_for(double_buffer.collectors, func)
    assert collector is not None

    # The planner's lifetimes: the tracked collector's are a fresh walk's.
    fresh = collect_buffers(func, target)
    kept = collector.collect(func)
    key = lambda b: (b.space, b.size, b.start, b.end, b.first_pipe, b.last_pipe)
    assert [key(b) for b in kept] == [key(b) for b in fresh]
    assert len(fresh) > 3

    plan_memory = passes["npu-plan-memory"](target)
    plan_memory.collectors = double_buffer.collectors
    plan_memory.run(module.operation)

    # After planning (the function now carries its plan, so its hash changed):
    # the adopted accesses are those a fresh analysis derives from the offsets.
    collector = collector_for(double_buffer.collectors, func)
    assert collector is not None
    adopted = AccessAnalysis(target)
    adopted.adopt(collector.analyses(func))
    fresh_analysis = AccessAnalysis(target)
    ops = [op for op in walk(func) if is_access_op(op)]
    planned = 0
    for op in ops:
        mine, theirs = adopted.access(op), fresh_analysis.access(op)
        assert (mine.pipe, mine.reads, mine.writes) == (theirs.pipe, theirs.reads, theirs.writes)
        planned += sum(r.root[0] == "space" for r in mine.reads + mine.writes)
    assert len(adopted._accesses) == len(ops)  # every op came from the hand-over
    assert planned > len(ops) // 2


def test_npu_lower_output_is_that_of_the_passes_run_apart():
    """The hand-over changes nothing: npu-lower equals the passes one by one
    (each analysing the IR itself)."""
    target = get_target("ascend910")
    together = _lowered_to_cce_ops(target)
    run_pipeline(together, "npu-double-buffer", target)
    steps = ("npu-plan-memory", "npu-insert-sync{sink-sets=true}")
    apart = parse_module(str(together), make_context())
    for step in steps:
        run_pipeline(apart, step, target)
    # the same three passes with the hand-over, as npu-lower runs them
    module = _lowered_to_cce_ops(target)
    passes = registry()
    double_buffer = passes["npu-double-buffer"](target)
    double_buffer.run(module.operation)
    plan_memory = passes["npu-plan-memory"](target)
    insert_sync = passes["npu-insert-sync"](target, **{"sink-sets": True})
    plan_memory.collectors = insert_sync.collectors = double_buffer.collectors
    plan_memory.run(module.operation)
    insert_sync.run(module.operation)
    assert str(module) == str(apart)
    assert "cce.set_flag" in str(module)


def test_unrolled_copies_analyses_equal_fresh_ones():
    """npu-double-buffer derives the accesses of an unrolled loop's copies
    from the original's (induction variables substituted, the copies' allocs
    for the original's) instead of analysing them: they must be a fresh
    analysis's, here with odd trip counts (a remainder loop) and buffers too
    large to double (shared by both halves)."""
    target = get_target("ascend910")
    module = parse_module(PROGRAM, make_context())
    run_pipeline(module, "npu-lower-elementwise{max-chunk=26214},"
                 "npu-lower-matmul{schedule=pipelined}", target)
    double_buffer = registry()["npu-double-buffer"](target)
    double_buffer.run(module.operation)
    func = functions(module)[0]
    top_loops = [op.operation for op in func.regions[0].blocks[0].operations
                 if op.operation.name == "scf.for"]
    slots = [[SLOT_ATTR in o.operation.attributes for o in loop.regions[0].blocks[0].operations
              if o.operation.name == "memref.alloc"] for loop in top_loops]
    assert any(s and all(s) for s in slots)  # every buffer doubled
    assert any(any(s) and not all(s) for s in slots)  # some shared by both halves
    assert sum(not any(s) for s in slots if s) >= 2  # the two remainder iterations
    kept = AccessAnalysis(target)
    kept.adopt(collector_for(double_buffer.collectors, func).analyses(func))
    fresh = AccessAnalysis(target)
    ops = [op for op in walk(func) if is_access_op(op)]
    for op in ops:
        mine, theirs = kept.access(op), fresh.access(op)
        assert (mine.pipe, mine.reads, mine.writes) == (theirs.pipe, theirs.reads, theirs.writes)
        assert [r.alloc for r in mine.reads + mine.writes] == [r.alloc for r in theirs.reads + theirs.writes]
    assert len(kept._accesses) == len(ops)
