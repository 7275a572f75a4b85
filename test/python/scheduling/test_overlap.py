"""Overlap between consecutive ops: a function of more loops than event ids
per pipe pair must not fall back to full barriers between its ops
(`npu-insert-sync carried-span=fit`), so that an op's loads start while the
previous op still computes and stores, race-free and with the same results.

`carried-span=block` (the old placement: every loop-carried pair's pre-set
at the start of the function, its balancing wait at the end) is the
baseline: each such pair holds an event id over the whole function, the
ids run out after a few loops and the rest are ordered by pipe_barrier(ALL).
"""

from __future__ import annotations

import numpy as np
import pytest

from npu.frontend.report import per_op_breakdown
from npu.ir import make_context, parse_module, walk
from npu.pipeline import run_pipeline
from npu.simulator import simulate
from npu.target import get_target

TARGET = get_target("ascend910")
N_OPS = TARGET.events_per_pipe_pair + 2
SIZE = 16384  # 4 chunks of 4096 elements per op: a loop of 2 ping-ponged iterations
PIPELINE = "npu-lower{cores=1 max-chunk=4096 fuse=false carried-span=%s}"
T = f'memref<{SIZE}xf16, "gm">'


def independent_exps(n: int) -> str:
    args = ", ".join(f"%a{i}: {T}" for i in range(2 * n))
    body = "".join(f'  "ascend.exp"(%a{i}, %a{n + i}) : ({T}, {T}) -> ()\n' for i in range(n))
    return f"func.func @f({args}) {{\n{body}  return\n}}\n"


def compile_(text: str, span: str):
    module = parse_module(text, make_context())
    run_pipeline(module, PIPELINE % span, TARGET)
    return module


def full_barriers(module) -> int:
    return sum(1 for op in walk(module, lambda o: o.name.endswith(".pipe_barrier"))
               if "ALL" in str(op.attributes["pipe"]))


def op_spans(result) -> list[tuple[int, int]]:
    """(first start, last end) of each source op's instructions, in program order."""
    rows = per_op_breakdown(result, TARGET, {})
    return sorted((row["first_cycle"], row["last_cycle"]) for row in rows)


@pytest.fixture(scope="module")
def runs():
    rng = np.random.default_rng(5)
    inputs = [rng.uniform(-2, 2, SIZE).astype(np.float16) for _ in range(N_OPS)]
    inputs += [np.zeros(SIZE, np.float16) for _ in range(N_OPS)]
    text = independent_exps(N_OPS)
    out = {}
    for span in ("fit", "block"):
        module = compile_(text, span)
        # strict: a race or an uninitialised read fails the run
        out[span] = (module, simulate(module, [x.copy() for x in inputs], target=TARGET,
                                      strict=True))
    return inputs, out


def test_no_full_barrier_between_ops(runs):
    _, out = runs
    assert full_barriers(out["fit"][0]) == 0
    assert full_barriers(out["block"][0]) > 0  # what carried-span=fit removes


def test_next_op_starts_before_the_previous_ends(runs):
    _, out = runs
    spans = op_spans(out["fit"][1])
    assert len(spans) == N_OPS
    for (_, prev_end), (next_start, _) in zip(spans, spans[1:]):
        assert next_start < prev_end
    # The baseline serialises the ops the full barriers stand between.
    block = op_spans(out["block"][1])
    assert any(next_start >= prev_end for (_, prev_end), (next_start, _) in zip(block, block[1:]))


def test_fewer_cycles_same_results(runs):
    inputs, out = runs
    fit, block = out["fit"][1], out["block"][1]
    assert fit.cycles < block.cycles
    want = np.exp(np.array(inputs[:N_OPS], np.float32))
    for i in range(N_OPS):
        np.testing.assert_array_equal(fit.outputs[N_OPS + i], block.outputs[N_OPS + i])
        np.testing.assert_allclose(fit.outputs[N_OPS + i].astype(np.float32), want[i],
                                   rtol=2e-3, atol=1e-3)


def test_cheaper_than_the_ops_run_one_by_one(runs):
    _, out = runs
    single = f"func.func @f(%a: {T}, %b: {T}) {{\n  \"ascend.exp\"(%a, %b) : ({T}, {T}) -> ()\n" \
             "  return\n}\n"
    x = np.random.default_rng(6).uniform(-2, 2, SIZE).astype(np.float16)
    alone = simulate(compile_(single, "fit"), [x, np.zeros_like(x)], target=TARGET,
                     numerics=False).cycles
    assert out["fit"][1].cycles < N_OPS * alone
