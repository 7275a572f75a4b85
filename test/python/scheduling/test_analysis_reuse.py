"""Compile-time reuse of the access analysis (issue 32: BERT-12 on 32 cores
compiled in seconds): `npu-double-buffer` derives each cce op's access once,
unrolling a loop nested in a top-level op included, and `BufferCollector`
keeps an op's analysis through `inserted`; the IR they leave is what a fresh
analysis gives (the lit tests and `bench/ir_digest.py --check` pin it)."""

from __future__ import annotations

from mlir import ir

from npu.analysis.access import AccessAnalysis
from npu.ir import functions, make_context, parse_module, walk
from npu.passes.buffer_lifetimes import BufferCollector
from npu.pipeline import run_pipeline
from npu.target import get_target

COPY = ('"cce.copy_gm_to_ub"({src}, {dst}) {{n_burst = 1 : i64, burst_len = 128 : i64, '
        'src_gap = 0 : i64, dst_gap = 0 : i64}} : ({st}, memref<2048xf16, "ub">) -> ()')
STORE = ('"cce.copy_ub_to_gm"({src}, {dst}) {{n_burst = 1 : i64, burst_len = 128 : i64, '
         'src_gap = 0 : i64, dst_gap = 0 : i64}} : (memref<2048xf16, "ub">, {st}) -> ()')
EXP = ('"cce.vexp"({dst}, {src}) {{repeat = 16 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, '
       'dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64}} : '
       '(memref<2048xf16, "ub">, memref<2048xf16, "ub">) -> ()')
GM = 'memref<2048xf16, strided<[1], offset: ?>, "gm">'

# An outer loop streaming one tile per trip, and inside it a loop streaming
# five more: both are unrolled by two, the inner one first.
NESTED = f"""
func.func @nested(%a: memref<32768xf16, "gm">, %o: memref<32768xf16, "gm">) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c5 = arith.constant 5 : index
  %c2048 = arith.constant 2048 : index
  %c12288 = arith.constant 12288 : index
  scf.for %j = %c0 to %c2 step %c1 {{
    %x = memref.alloc() : memref<2048xf16, "ub">
    %y = memref.alloc() : memref<2048xf16, "ub">
    %base = arith.muli %j, %c12288 : index
    %sx = memref.subview %a[%base] [2048] [1] : memref<32768xf16, "gm"> to {GM}
    %sy = memref.subview %o[%base] [2048] [1] : memref<32768xf16, "gm"> to {GM}
    {COPY.format(src="%sx", dst="%x", st=GM)}
    {EXP.format(dst="%y", src="%x")}
    {STORE.format(src="%y", dst="%sy", st=GM)}
    scf.for %i = %c0 to %c5 step %c1 {{
      %in = memref.alloc() : memref<2048xf16, "ub">
      %out = memref.alloc() : memref<2048xf16, "ub">
      %row = arith.muli %i, %c2048 : index
      %tile = arith.addi %row, %c2048 : index
      %off = arith.addi %tile, %base : index
      %sa = memref.subview %a[%off] [2048] [1] : memref<32768xf16, "gm"> to {GM}
      %so = memref.subview %o[%off] [2048] [1] : memref<32768xf16, "gm"> to {GM}
      {COPY.format(src="%sa", dst="%in", st=GM)}
      {EXP.format(dst="%out", src="%in")}
      {STORE.format(src="%out", dst="%so", st=GM)}
    }}
  }}
  return
}}
"""


def _cce_ops(func) -> int:
    return sum(1 for op in walk(func) if op.name.startswith("cce."))


def test_double_buffer_derives_each_access_once(monkeypatch):
    """Unrolling the inner loop keeps the accesses of the outer body's ops
    and derives its copies' from the original's: no access is worked out
    from the IR twice (the op holding the loop was analysed afresh after
    each inner unroll: 0.2 CPU s of BERT-12's on 32 cores)."""
    derived = []
    plain = AccessAnalysis._access
    monkeypatch.setattr(AccessAnalysis, "_access",
                        lambda self, op: derived.append(op.name) or plain(self, op))
    module = parse_module(NESTED, make_context())
    func = functions(module)[0]
    before = _cce_ops(func)
    run_pipeline(module, "builtin.module(npu-double-buffer)", get_target("ascend910"))
    after = _cce_ops(func)
    slots = [op for op in walk(func) if op.name == "memref.alloc" and "npu.slot" in op.attributes]
    # Both loops unrolled: the inner one's five trips as two pairs and one
    # more, in each of the outer one's two copies of its body.
    assert after == 2 * (3 + 3 * 3)
    assert slots
    assert len(derived) == before


def test_inserted_keeps_the_analysis_of_an_op_changed_with_same_accesses():
    """An op marked changed with `same_accesses` keeps its analysis when ops
    go in before it (npu-prefetch's guard, then the slots it moves before
    that guard), instead of having every access derived again."""
    ctx = make_context()
    module = parse_module(NESTED, ctx)
    func = functions(module)[0]
    collector = BufferCollector(get_target("ascend910"))
    tops = collector.track(func)
    loop = next(k for k, op in enumerate(tops) if op.name == "scf.for")
    kept = collector.analysis_at(func, loop)
    collector.changed(loop, same_accesses=True)
    with ctx, ir.Location.unknown(), ir.InsertionPoint(tops[loop]):
        alloc = tops[loop].regions[0].blocks[0].operations[0].operation.clone()
    collector.inserted(loop, [alloc])
    assert collector.analysis_at(func, loop + 1) is kept
    assert collector.space_bounds(func, "ub") == BufferCollector(
        get_target("ascend910")).space_bounds(func, "ub")


def test_the_copies_allocs_are_derived_as_a_fresh_analysis_finds_them():
    """`npu-double-buffer` hands each copy of a loop body the allocs its
    original used (`AccessAnalysis.allocs_used`, the copy's own allocs in
    place of the body's), and keeps those of the ops outside an inner loop
    it unrolls: every cce op's must be what its IR gives afresh, and so the
    lifetimes the planner gets from the collector."""
    from npu.passes.double_buffer import DoubleBufferPass

    target = get_target("ascend910")
    module = parse_module(NESTED, make_context())
    func = functions(module)[0]
    unroll = DoubleBufferPass(target)
    unroll.run(module.operation)
    collector = next(iter(unroll.collectors.values()))
    known = {}
    for analysis in collector.analyses(func):
        known.update(analysis._allocs_used)  # noqa: SLF001
    fresh = AccessAnalysis(target)
    ops = [op for op in walk(func) if op.name.startswith("cce.")]
    assert len(ops) == 2 * (3 + 3 * 3)
    for op in ops:
        assert known[op] == fresh.allocs_used(op)
    # the copies' slots are their own allocs, not the original's
    assert len({a for op in ops for a in known[op]}) > 4
    assert collector.collect(func) == BufferCollector(target).collect(func)


def test_forget_drops_the_allocs_an_op_used():
    """An op about to be erased leaves no allocs behind for a later op at
    its address (`AccessAnalysis.forget`, as its access)."""
    module = parse_module(NESTED, make_context())
    func = functions(module)[0]
    analysis = AccessAnalysis(get_target("ascend910"))
    op = next(op for op in walk(func) if op.name == "cce.vexp")
    assert len(analysis.allocs_used(op)) == 2
    analysis.forget([op])
    assert analysis.known_allocs_used(op) is None
