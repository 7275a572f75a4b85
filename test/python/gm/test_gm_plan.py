"""npu-plan-gm end to end: multi-op programs with GM intermediates and
reshapes, planned into one workspace vs left as allocs, simulated strictly
and compared with numpy; reuse of workspace bytes is synchronised by
npu-insert-sync (and is a race without it)."""

from __future__ import annotations

import numpy as np

from helpers import assert_outputs_close, compile_and_simulate, compile_program, random_inputs
from npu.ir import functions, int_attr, ops_named
from npu.passes.plan_gm import plan_function
from npu.target import get_target

# matmul (via Nz) -> + bias -> relu -> reshape -> transpose, every
# intermediate a GM temporary, the reshapes views of them.
CHAIN = """
func.func @chain(%a: memref<64x32xf16, "gm">, %b: memref<32x48xf16, "gm">,
                 %bias: memref<48xf32, "gm">, %out: memref<4x48x16xf32, "gm">) {
  %an = memref.alloc() : memref<2x4x16x16xf16, "gm">
  "ascend.fractalize"(%a, %an) : (memref<64x32xf16, "gm">, memref<2x4x16x16xf16, "gm">) -> ()
  %bn = memref.alloc() : memref<3x2x16x16xf16, "gm">
  "ascend.fractalize"(%b, %bn) : (memref<32x48xf16, "gm">, memref<3x2x16x16xf16, "gm">) -> ()
  %cn = memref.alloc() : memref<3x4x16x16xf32, "gm">
  "ascend.matmul"(%an, %bn, %cn) : (memref<2x4x16x16xf16, "gm">, memref<3x2x16x16xf16, "gm">, memref<3x4x16x16xf32, "gm">) -> ()
  memref.dealloc %an : memref<2x4x16x16xf16, "gm">
  memref.dealloc %bn : memref<3x2x16x16xf16, "gm">
  %c = memref.alloc() : memref<64x48xf32, "gm">
  "ascend.defractalize"(%cn, %c) : (memref<3x4x16x16xf32, "gm">, memref<64x48xf32, "gm">) -> ()
  %s = memref.alloc() : memref<64x48xf32, "gm">
  "ascend.add"(%c, %bias, %s) : (memref<64x48xf32, "gm">, memref<48xf32, "gm">, memref<64x48xf32, "gm">) -> ()
  %sf = memref.collapse_shape %s [[0, 1]] : memref<64x48xf32, "gm"> into memref<3072xf32, "gm">
  %r = memref.alloc() : memref<3072xf32, "gm">
  "ascend.relu"(%sf, %r) : (memref<3072xf32, "gm">, memref<3072xf32, "gm">) -> ()
  %r3 = memref.expand_shape %r [[0, 1, 2]] output_shape [4, 16, 48] : memref<3072xf32, "gm"> into memref<4x16x48xf32, "gm">
  "ascend.transpose"(%r3, %out) {permutation = array<i64: 0, 2, 1>} : (memref<4x16x48xf32, "gm">, memref<4x48x16xf32, "gm">) -> ()
  return
}
"""

# Three tensors in sequence: %c's lifetime starts after %a's ends, so the
# planner gives it %a's bytes; the op writing %c (MTE3) must wait for the op
# reading %a (MTE2).
SHARED = """
func.func @shared(%in: memref<4096xf16, "gm">, %out: memref<4096xf16, "gm">) {
  %a = memref.alloc() : memref<4096xf16, "gm">
  "ascend.relu"(%in, %a) : (memref<4096xf16, "gm">, memref<4096xf16, "gm">) -> ()
  %b = memref.alloc() : memref<4096xf16, "gm">
  "ascend.exp"(%a, %b) : (memref<4096xf16, "gm">, memref<4096xf16, "gm">) -> ()
  %c = memref.alloc() : memref<4096xf16, "gm">
  "ascend.neg"(%b, %c) : (memref<4096xf16, "gm">, memref<4096xf16, "gm">) -> ()
  "ascend.relu"(%c, %out) : (memref<4096xf16, "gm">, memref<4096xf16, "gm">) -> ()
  return
}
"""


def _planned_vs_unplanned(source: str, seed: int = 0, options: str = ""):
    inputs = random_inputs(source, seed=seed)
    got_u, expected, res_u = compile_and_simulate(
        source, f"npu-lower{{plan-gm=false {options}}}", inputs)
    got_p, expected_p, res_p = compile_and_simulate(source, f"npu-lower{{{options}}}", inputs)
    assert_outputs_close(got_u, expected)
    assert_outputs_close(got_p, expected_p)
    for u, p in zip(got_u, got_p):  # same code on other addresses: the same bits
        np.testing.assert_array_equal(u, p)
    return res_u, res_p


def test_chain_planned_and_unplanned_agree_with_numpy():
    res_u, res_p = _planned_vs_unplanned(CHAIN)
    # an, bn, cn, c, s, r (all whole 512 B units already)
    sizes = [4096, 3072, 12288, 12288, 12288, 12288]
    module = compile_program(CHAIN, "")  # kept alive while its function is used
    plan = plan_function(functions(module)[0], get_target(), apply=False)
    assert (plan.total, plan.tensors) == (sum(sizes), 6)
    # Two 12 KiB tensors are live at each op from the defractalize on; at the
    # matmul an + bn + cn = 19 KiB.
    assert plan.lower_bound == 2 * 12288
    assert plan.allocated == plan.lower_bound  # optimal here
    assert res_p.report["gm"] == {"workspace_bytes": plan.allocated, "alloc_bytes": 0}
    # Unplanned, every tensor is its own GM allocation but cn: the matmul's
    # drain writes c row-major (the defractalize joins its epilogue), so the
    # Nz C never reaches GM.
    assert res_u.report["gm"] == {"workspace_bytes": 0, "alloc_bytes": sum(sizes) - 12288}


def _view_shifts(module) -> list[int]:
    shifts = []
    for view in ops_named(module.operation, "memref.view"):
        shifts.append(int_attr(view.operands[1].owner.operation, "value"))
    return shifts


def test_sequential_reuse_is_synchronised():
    module = compile_program(SHARED, "npu-plan-gm")
    a, b, c = _view_shifts(module)
    assert a == c and b != a  # %c reuses %a's bytes
    # Unfused: fusion would keep the whole chain in UB (no GM temporaries).
    res_u, res_p = _planned_vs_unplanned(SHARED, seed=3, options="fuse=false")
    assert res_p.hazards == [] and res_p.report["gm"]["workspace_bytes"] == 2 * 8192


def test_insert_sync_sees_the_dependency_reuse_creates():
    """npu-insert-sync's access analysis resolves views of the workspace to
    byte ranges of one root: in GM, the store of %c (neg, line 8) conflicts
    with the load of %a (exp, line 6) after planning, and not before. (Here
    the lowering's own flags already order them transitively; the simulated
    run above checks that the result is race-free.)"""
    from npu.analysis.access import function_accesses
    from npu.analysis.byte_ranges import conflicts_by, may_overlap

    def accesses(pipeline: str):
        module = compile_program(SHARED, pipeline)
        func = next(iter(ops_named(module.operation, "func.func")))
        analysis, accs = function_accesses(func, get_target())
        line = lambda acc: str(acc.op.location).split(":")[-2]  # noqa: E731
        load_a = [x for x in accs if x.op.name == "cce.copy_gm_to_ub" and line(x) == "6"]
        store_c = [x for x in accs if x.op.name == "cce.copy_ub_to_gm" and line(x) == "8"]
        assert load_a and store_c
        in_gm = lambda a, b: a.space == b.space == "gm" and may_overlap(a, b, analysis)  # noqa: E731
        return any(conflicts_by(x, y, in_gm) for x in load_a for y in store_c)

    assert accesses("npu-plan-gm,npu-lower-elementwise,npu-plan-memory")
    assert not accesses("npu-lower-elementwise,npu-plan-memory")


NON_AFFINE = """
func.func @f(%ws: memref<4096xi8, "gm"> {npu.workspace}) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %c1024 = arith.constant 1024 : index
  %t = memref.view %ws[%c1024][] : memref<4096xi8, "gm"> to memref<8x16xf16, "gm">
  %u = memref.alloc() : memref<16xf16, "ub">
  scf.for %i = %c0 to %c4 step %c1 {
    %row = arith.shrui %i, %c2 : index
    %r = memref.subview %t[%row, 0] [1, 16] [1, 1] : memref<8x16xf16, "gm"> to memref<16xf16, strided<[1], offset: ?>, "gm">
    "cce.copy_gm_to_ub"(%r, %u) {n_burst = 1 : i64, burst_len = 1 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<16xf16, strided<[1], offset: ?>, "gm">, memref<16xf16, "ub">) -> ()
  }
  return
}
"""


def test_unknown_offsets_in_a_workspace_tensor_stay_in_that_tensor():
    """A non-affine index (shrui, which neither the affine forms nor the
    offset intervals follow) hides the row: the access may touch any byte
    of the tensor, i.e. the view's 256 bytes at 1024, not the whole 4 KiB
    workspace (which would order it after every other tensor's accesses)."""
    from npu.analysis.access import function_accesses
    from npu.analysis.affine import Affine

    module = compile_program(NON_AFFINE, "")  # held: the ops do not keep their module alive
    func = next(iter(ops_named(module.operation, "func.func")))
    _, (copy,) = function_accesses(func, get_target())
    (read,) = copy.reads
    assert (read.root, read.start, read.length) == (("arg", 0), Affine(1024), 256)
