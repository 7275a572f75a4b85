"""npu-prefetch's analysis kept up to date as it places copies: the facts it
cached for each top-level op (`facts.FactsCache`, worked out once per op
and read by every later matmul's window) equal the facts of the finished
function worked out afresh, its cheap guard test (`facts.is_guard`)
agrees with the guard's listed ops, and the look-ups near a known index
(`positions`) answer as `list.index` does."""

from __future__ import annotations

import pytest

import npu
from npu.frontend.bert import bert_layer
from npu.passes import prefetch
from npu.passes.prefetch.facts import FactsCache, _guarded, is_guard
from npu.passes.prefetch.positions import WINDOW, index_from, index_near


def _checked_compile(monkeypatch, cores: int) -> dict:
    """Compile a BERT layer on `cores`, comparing each function's cached
    facts with fresh ones once npu-prefetch is done with it."""
    seen = {"cached": 0, "stale": [], "guards": 0, "functions": 0}
    run = prefetch.PrefetchPass._run_function

    def checked(self, func) -> None:
        run(self, func)
        seen["functions"] += 1
        fresh = FactsCache(self.target, landing=self.facts.landing)
        for op in (o.operation for o in func.regions[0].blocks[0].operations):
            assert is_guard(op) == bool(_guarded(op)), op.name
            seen["guards"] += is_guard(op)
            cached = self.facts._facts.get(op)
            if cached is None:
                continue
            seen["cached"] += 1
            if cached != fresh(op):
                seen["stale"].append(f"{op.name} at {op.location}")

    monkeypatch.setattr(prefetch.PrefetchPass, "_run_function", checked)
    npu.compile(bert_layer(seq=128, layers=1), cores=cores)
    return seen


@pytest.mark.parametrize("cores", [1, 32])
def test_cached_facts_equal_fresh_after_placements(monkeypatch, cores: int) -> None:
    seen = _checked_compile(monkeypatch, cores)
    assert seen["functions"] >= 1
    assert seen["cached"] > 100  # the windows of BERT's six matmuls
    assert seen["stale"] == []
    if cores > 1:
        assert seen["guards"] > 3  # Q, K and V's shares and their weights' guards


def test_index_near_answers_as_list_index() -> None:
    items = [object() for _ in range(3 * WINDOW)]
    for k in (0, 1, WINDOW, 2 * WINDOW + 7, len(items) - 1):
        for hint in (0, k, len(items) - 1, len(items) + WINDOW * 2):
            assert index_near(items, items[k], hint) == k
        for start in range(0, k + 1, max(1, k // 3)):
            assert index_from(items, items[k], start) == k
        with pytest.raises(ValueError):
            index_from(items, items[k], k + 1)
    with pytest.raises(ValueError):
        index_near(items, object(), WINDOW)


_BRANCHES = """
func.func @branches(%blk: index {npu.block_idx}, %in: memref<2048xf16, "gm">) attributes {npu.block_dim = 2 : i64} {
  %a = memref.alloc() {npu.offset = 0 : i64} : memref<2048xf16, "ub">
  %b = memref.alloc() {npu.offset = 4096 : i64} : memref<2048xf16, "ub">
  %c0 = arith.constant 0 : index
  %first = arith.cmpi eq, %blk, %c0 : index
  scf.if %first {
    "cce.copy_gm_to_ub"(%in, %a) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<2048xf16, "gm">, memref<2048xf16, "ub">) -> ()
    %VEXP
    %VEXP
  } else {
    "cce.copy_gm_to_ub"(%in, %a) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<2048xf16, "gm">, memref<2048xf16, "ub">) -> ()
    %VEXP
  }
  return
}
""".replace("%VEXP", '"cce.vexp"(%b, %a) {repeat = 16 : i64, mask = 128 : i64, dst_blk_stride = 1 : '
            'i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : '
            '(memref<2048xf16, "ub">, memref<2048xf16, "ub">) -> ()')


def test_an_if_with_an_else_has_its_branches_least_tail() -> None:
    # Each core runs one branch of such an op (BERT seq 512's attention on
    # 32 cores, with a body for the cores that span two heads): the idle
    # MTE2 after it on every core is the shorter branch's work after its
    # load. Taken whole it had no tail (an op with loads, not a loop), and
    # no prefetch went after it (BERT seq 512 on 32 cores 84,551 -> 83,079).
    from npu.ir import functions, make_context, parse_module
    from npu.target import get_target

    module = parse_module(_BRANCHES, make_context())
    func = functions(module)[0]
    branch = next(o.operation for o in func.regions[0].blocks[0].operations
                  if o.operation.name == "scf.if")
    facts = FactsCache(get_target("ascend910"))
    whole = facts(branch)
    then_ops, else_ops = ([o.operation for o in r.blocks[0].operations
                           if o.operation.name != "scf.yield"] for r in branch.regions)
    vexp = facts(then_ops[1]).work["V"]
    assert vexp > 0
    assert whole.work["V"] == 2 * vexp  # the busier branch's work, as before
    assert whole.work["MTE2"] == facts(then_ops[0]).loads
    assert whole.tail == whole.tail_span == vexp  # the else's one vexp
    assert not is_guard(branch)
