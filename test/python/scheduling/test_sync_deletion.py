"""Sync deletion: every sync npu-insert-sync emits must be necessary. For
representative kernels, each inserted flag pair (with its pre-set and
balancing wait, for a loop-carried pair) and each pipe_barrier(V) is left out
in turn; the strict simulator must then report a fault (a race, an
uninitialised read or a flag error). A sync whose removal goes unnoticed is
one an existing chain already implied (issue 9: syncs around loops)."""

from __future__ import annotations

import os
import sys

import pytest

from helpers import random_inputs
from npu.ir import make_context, parse_module
from npu.passes import insert_sync
from npu.pipeline import run_pipeline
from npu.simulator import SimulationError, simulate
from npu.target import get_target

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "matmul"))
from mm_common import nz_matmul_program  # noqa: E402

TARGET = get_target("ascend910")


def gm(shape, elem="f16") -> str:
    return f'memref<{"x".join(map(str, shape))}x{elem}, "gm">'


def unary(op: str, src: list[int], dst: list[int], elem: str = "f16", attrs: str = "") -> str:
    a, b = gm(src, elem), gm(dst, elem)
    return (f"func.func @f(%a: {a}, %b: {b}) {{\n  \"ascend.{op}\"(%a, %b) {attrs} : "
            f"({a}, {b}) -> ()\n  return\n}}\n")


def many_loops(n: int) -> str:
    """n independent exps of 4 chunks each (2 iterations once ping-ponged)."""
    t = gm([16384])
    args = ", ".join(f"%a{i}: {t}" for i in range(2 * n))
    body = "".join(f'  "ascend.exp"(%a{i}, %a{n + i}) : ({t}, {t}) -> ()\n' for i in range(n))
    return f"func.func @f({args}) {{\n{body}  return\n}}\n"


t = gm([5 * 2048 + 48])
KERNELS = {
    "add": (f"func.func @f(%a: {t}, %b: {t}, %c: {t}) {{\n  \"ascend.add\"(%a, %b, %c) : "
            f"({t}, {t}, {t}) -> ()\n  return\n}}\n", "npu-lower"),
    "reduce": (unary("reduce_sum", [150, 64], [150]), "npu-lower{max-chunk=4096}"),
    "fractalize": (unary("fractalize", [37, 24], [2, 3, 16, 16]), "npu-lower"),
    "transpose": (unary("transpose", [2, 64, 48], [2, 48, 64],
                        attrs="{permutation = array<i64: 0, 2, 1>}"), "npu-lower"),
    "matmul_pipelined": (nz_matmul_program(64, 96, 64), "npu-lower"),
    # nested tile loops with a reduction loop inside: syncs around loops
    "matmul_nest": (nz_matmul_program(64, 96, 64), "npu-lower{m=32 k=32 matmul-schedule=simple}"),
    # a loop nest whose inner loop's balancing waits order the outer loop's
    # iterations (no outer carried pairs)
    "matmul_nest_no_db": (nz_matmul_program(64, 96, 64),
                          "npu-lower{m=32 k=32 matmul-schedule=simple double-buffer=false}"),
    # more loops than event ids per pipe pair: the carried pairs' pre-sets
    # and balancing waits are fitted around their loops (carried-span=fit)
    "many_loops": (many_loops(10), "npu-lower{max-chunk=4096 fuse=false}"),
}
SLOW_KERNELS = {
    "reduce_long_rows": (unary("reduce_max", [40, 2048], [40], "f32"), "npu-lower"),
    "matmul_nest_batch": (nz_matmul_program(32, 64, 32, batch=2),
                          "npu-lower{m=16 k=16 matmul-schedule=simple double-buffer=false}"),
}


class _Dropping:
    """Wraps `_PreciseMode._emit`: records the syncs it is about to emit and
    leaves out the one numbered `drop`."""

    def __init__(self, monkeypatch):
        self.drop: int | None = None
        self.count = 0
        emit = insert_sync._PreciseMode._emit
        probe = self

        def patched(mode):
            vbars = list({id(n): n for n in mode.v_barriers}.values())
            items = [("pair", fp) for fp in mode.pairs] + [("vbar", n) for n in vbars]
            probe.count = len(items)
            if probe.drop is not None:
                kind, item = items[probe.drop]
                if kind == "pair":
                    mode.pairs = [fp for fp in mode.pairs if fp is not item]
                else:
                    mode.v_barriers = [n for n in mode.v_barriers if n is not item]
            emit(mode)

        monkeypatch.setattr(insert_sync._PreciseMode, "_emit", patched)


def unnoticed_deletions(text: str, pipeline: str, monkeypatch) -> tuple[int, list[int]]:
    probe = _Dropping(monkeypatch)
    inputs = random_inputs(text, seed=3)

    def run():
        module = parse_module(text, make_context())
        run_pipeline(module, pipeline, TARGET)
        simulate(module, [x.copy() for x in inputs], target=TARGET, strict=True)

    run()  # the complete program is race-free
    unnoticed = []
    for k in range(probe.count):
        probe.drop = k
        try:
            run()
        except SimulationError:
            continue
        unnoticed.append(k)
    return probe.count, unnoticed


@pytest.mark.parametrize("name", list(KERNELS))
def test_every_inserted_sync_is_necessary(name, monkeypatch):
    count, unnoticed = unnoticed_deletions(*KERNELS[name], monkeypatch)
    assert count > 0
    assert not unnoticed, f"{name}: syncs #{unnoticed} of {count} can go without a fault"


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SLOW_KERNELS))
def test_every_inserted_sync_is_necessary_slow(name, monkeypatch):
    count, unnoticed = unnoticed_deletions(*SLOW_KERNELS[name], monkeypatch)
    assert not unnoticed, f"{name}: syncs #{unnoticed} of {count} can go without a fault"
