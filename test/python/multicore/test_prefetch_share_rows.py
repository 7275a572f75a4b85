"""npu-prefetch moves the bias rows of ops on shares of the cores before the
chip barrier their run follows (`passes/prefetch/share_rows.py`): Q, K and
V's projections (with their biases) run on cores 0-7, 8-15 and 16-23 after
the input's cast. Each bias row used to be its projection's first load
inside its guard, whose flag held MTE2 one GM latency before the first
weight and activation chunks."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

import npu
from npu.ir import arg_attrs, view_root
from npu.passes.prefetch import PrefetchPass, guard_rows
from test_shared_cores import ROWS, WIDTH, qkv_projections


def _model() -> onnx.ModelProto:
    inits, nodes = qkv_projections(np.random.default_rng(4))
    graph = helper.make_graph(
        nodes, "projections", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [ROWS, WIDTH])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [ROWS, WIDTH]) for n in "qkv"], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


X = np.random.default_rng(5).standard_normal((ROWS, WIDTH)).astype(np.float32)
CCE = "builtin.module(npu-lower{emit=cce})"
# Three shares of 8 cores (one-core numerics: each a 1 x 8 grid); on 32 the
# idle cores would go to Q and K (`share.spread`), whose 6 x 2 grids tile K
# otherwise than one core (f32 rounding).
CORES = 24


def _row_loads(kernel) -> tuple[int, int]:
    """GM -> UB copies of host constants (the bias rows: the weights go to
    L1) in top-level guards before the first chip barrier, and after it."""
    func = kernel.module.body.operations[0]
    constants = {a for a in func.regions[0].blocks[0].arguments
                 if "npu.constant" in arg_attrs(func, a.arg_number)}
    before = after = 0
    seen_barrier = False
    for op in func.regions[0].blocks[0].operations:
        if op.name == "cce.sync_all":
            seen_barrier = True
        if op.name != "scf.if":
            continue
        n = sum(1 for o in op.regions[0].blocks[0].operations
                if o.name == "cce.copy_gm_to_ub" and view_root(o.operands[0]) in constants)
        if seen_barrier:
            after += n
        else:
            before += n
    return before, after


def test_share_rows_load_before_the_barrier(monkeypatch) -> None:
    on = npu.compile(_model(), cores=CORES, pipeline=CCE)
    assert _row_loads(on) == (3, 0)
    ys, report = on(X)
    assert report["hazards"] == []
    # The same instructions otherwise: the outputs bit for bit those of the
    # rows in their guards, and of one core.
    monkeypatch.setattr(PrefetchPass, "_share_rows", lambda self, *a, **k: None)
    # (and not `guard_rows.py`'s, which takes a share's row that opens its
    # guard right after the barrier: the rows stay in their guards)
    monkeypatch.setattr(guard_rows, "GUARD_ROWS", False)
    old = npu.compile(_model(), cores=CORES, pipeline=CCE)
    assert _row_loads(old) == (0, 3)
    ys_old, report_old = old(X)
    for y, y_old in zip(ys, ys_old):
        np.testing.assert_array_equal(y, y_old)
    ys_one, _ = npu.compile(_model(), cores=1)(X)
    for y, y_one in zip(ys, ys_one):
        np.testing.assert_array_equal(y, y_one)
    # Each projection's first chunks no longer wait behind its row's flag:
    # measured 11,982 against 12,302 cycles (ascend910, 24 cores launched)
    assert report["cycles"] <= report_old["cycles"] - 300, (report["cycles"],
                                                             report_old["cycles"])


def test_share_rows_keep_the_guards_accesses(monkeypatch) -> None:
    """Moving the rows out of a guard erases them and nothing else there:
    the guard's other ops keep their accesses (`BufferCollector.erasing`)
    instead of being derived again (0.5 CPU s of BERT-12 on 32 cores, 36
    guards). npu-prefetch derives fewer accesses than one guard holds (it
    derived all three guards' again)."""
    from npu.analysis.access import AccessAnalysis
    from npu.ir import walk

    derived: list[str] = []
    guard_ops: list[int] = []
    plain_access, plain_run = AccessAnalysis._access, PrefetchPass.run

    def access(self, op):
        derived.append(op.name)
        return plain_access(self, op)

    def run(self, module):
        func = module.regions[0].blocks[0].operations[0]
        guard_ops.extend(sum(1 for o in walk(op) if o.name.startswith("cce."))
                         for op in func.regions[0].blocks[0].operations if op.name == "scf.if")
        derived.clear()
        monkeypatch.setattr(AccessAnalysis, "_access", access)
        try:
            plain_run(self, module)
        finally:
            monkeypatch.setattr(AccessAnalysis, "_access", plain_access)

    monkeypatch.setattr(PrefetchPass, "run", run)
    kernel = npu.compile(_model(), cores=CORES, pipeline=CCE)
    assert _row_loads(kernel) == (3, 0)
    assert 0 < len(derived) < max(guard_ops), (len(derived), sorted(guard_ops))


def _guards_before_barrier(kernel) -> list[tuple[frozenset[int], str]]:
    """(cores, what it loads: 'rows' to UB or 'weights' to L1) of each
    top-level guard of loads alone before the first chip barrier."""
    from npu.ir import block_dim
    from npu.passes.prefetch.shares import guard_cores

    func = kernel.module.body.operations[0]
    found = []
    for op in func.regions[0].blocks[0].operations:
        if op.name == "cce.sync_all":
            break
        if op.name != "scf.if":
            continue
        names = {o.name for o in op.regions[0].blocks[0].operations if o.name.startswith("cce.")}
        if names == {"cce.copy_gm_to_ub"}:
            found.append((guard_cores(op, block_dim(func)), "rows"))
        elif names == {"cce.copy_gm_to_l1"}:
            found.append((guard_cores(op, block_dim(func)), "weights"))
    return found


def test_share_rows_ahead_of_the_shares_weights(monkeypatch) -> None:
    """A share's rows go ahead of its own weights prefetched before the
    barrier, not behind them: the flag that orders a row before its cast
    waits for everything MTE2 issued before it, and behind the weights
    (V's cores run nothing else there, so their slots may still stream
    through the barrier) it held the share's first activation load after
    the barrier one GM latency."""
    from npu.passes.prefetch.share_rows import ShareRows

    ahead = npu.compile(_model(), cores=CORES, pipeline=CCE)
    order = _guards_before_barrier(ahead)
    shares = {cores for cores, what in order if what == "weights"}
    assert len(shares) == 3, order
    for cores in shares:
        mine = [what for c, what in order if c == cores]
        assert mine == ["rows", "weights"], (sorted(cores), mine)
    ys, report = ahead(X)
    assert report["hazards"] == []
    monkeypatch.setattr(ShareRows, "_own_loads_before", lambda self, tops, barrier, cores: barrier)
    behind = npu.compile(_model(), cores=CORES, pipeline=CCE)
    assert all([w for c, w in _guards_before_barrier(behind) if c == cores] == ["weights", "rows"]
               for cores in shares)
    ys_behind, report_behind = behind(X)
    for y, y_behind in zip(ys, ys_behind):
        np.testing.assert_array_equal(y, y_behind)
    # measured 10,982 against 11,238 cycles (ascend910, 24 cores launched)
    assert report["cycles"] <= report_behind["cycles"] - 200, (report["cycles"],
                                                               report_behind["cycles"])
