"""npu-insert-sync's loop chains (`passes/insert_sync/loop_chain.py`): a
loop's last carried set handed to the next loop's carried pair instead of a
balancing wait before that loop."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from npu.dialects.ascend_pool import Pool2d, pool2d_5hd_numpy
from npu.ir import make_context, parse_module
from npu.passes.insert_sync import precise
from npu.pipeline import run_pipeline
from npu.simulator import simulate
from npu.target import get_target
from test_random_sync import FAST_SEEDS, SLOW_SEEDS, TARGET, check_seed

X5, Y5 = [1, 4, 112, 112, 16], [1, 4, 56, 56, 16]  # ResNet's stem pool, NC1HWC0
STEM_POOL = (
    f'func.func @pool(%x: memref<{"x".join(map(str, X5))}xf16, "gm">, '
    f'%y: memref<{"x".join(map(str, Y5))}xf16, "gm">) {{\n'
    '  "ascend.pool2d"(%x, %y) {kind = "max", kernel = array<i64: 3, 3>, '
    'strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, '
    'count_include_pad = 0 : i64, layout = "nc1hwc0"} : '
    f'(memref<{"x".join(map(str, X5))}xf16, "gm">, memref<{"x".join(map(str, Y5))}xf16, "gm">) -> ()\n'
    "  return\n}\n")


def _flags(ops, name: str, src: str, dst: str) -> list[int]:
    return [int(str(op.attributes["event"]).split(":")[0]) for op in ops
            if op.operation.name == name and str(op.attributes["src"]) == f'"{src}"'
            and str(op.attributes["dst"]) == f'"{dst}"']


def test_stem_pool_interior_loop_takes_the_first_loops_last_set():
    """The stem pool's first-band loop and interior loop load into the same
    two ping-ponged buffers (A, B). Before the interior loop MTE2 waits
    only for V's reads of A (what its first load overwrites); its load into
    B waits, in its first iteration, for the first loop's last set of V's
    reads of B (the chain), not before the loop for the whole of the first
    loop's last band."""
    module = parse_module(STEM_POOL, make_context())
    run_pipeline(module, "npu-lower{cores=1 emit=cce}", get_target("ascend910"))
    body = list(next(op for op in module.body.operations
                     if op.operation.name == "func.func").regions[0].blocks[0].operations)
    loops = [k for k, op in enumerate(body) if op.operation.name == "scf.for"]
    assert len(loops) == 2
    first, second = (list(body[k].regions[0].blocks[0].operations) for k in loops)
    a, b = _flags(first, "cce.set_flag", "V", "MTE2")  # after the reads of A, of B
    between = body[loops[0] + 1:loops[1]]
    assert _flags(between, "cce.wait_flag", "V", "MTE2") == [a]
    inner = _flags(second, "cce.wait_flag", "V", "MTE2")
    assert len(inner) == 2 and inner[1] == b  # the load into B, second in the body
    assert _flags(second, "cce.set_flag", "V", "MTE2")[1] == b
    # no pre-set of that event before the second loop: the first loop's last set is it
    assert _flags(body[:loops[0]], "cce.set_flag", "V", "MTE2").count(b) == 1


def test_stem_pool_chained_exact_and_faster():
    """Bit-exact against numpy on the strict (race-checking) simulator, and
    34,485 -> 33,318 cycles: the interior loop's first load no longer waits
    for V to finish the first loop's last band."""
    target = get_target("ascend910")
    module = parse_module(STEM_POOL, make_context())
    run_pipeline(module, "npu-lower{cores=1}", target)
    x = np.random.default_rng(1).standard_normal(X5).astype(np.float16)
    res = simulate(module, [x, np.zeros(Y5, np.float16)], target=target, strict=True)
    want = pool2d_5hd_numpy(x, Pool2d("max", (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 0))
    assert res.outputs[1].view(np.uint16).tolist() == want.astype(np.float16).view(np.uint16).tolist()
    assert res.cycles <= 33318


@pytest.fixture
def chained(monkeypatch) -> list[int]:
    """How many chains npu-insert-sync linked, per run."""
    counts: list[int] = []
    link = precise.link_chains

    def counting(chains, pairs, pos):
        link(chains, pairs, pos)
        counts.append(sum(c.first.chained_wait for c in chains))
    monkeypatch.setattr(precise, "link_chains", counting)
    return counts


# loops one after another in most programs (the generator's default: 0.15)
LOOPS = 0.7
SEEDS = FAST_SEEDS[:10]  # chains in 9 of them (the slow test takes 570 more)


@pytest.mark.parametrize("mode", ["mode=precise", "mode=precise sink-sets=true"])
def test_random_loop_chains_are_race_free(mode, chained):
    for seed in SEEDS:
        check_seed(seed, mode, loop_rate=LOOPS)
    assert sum(1 for n in chained if n) >= 7  # chains made in most programs


def test_random_loop_chains_with_few_event_ids_are_race_free(chained):
    few = replace(TARGET, events_per_pipe_pair=2)
    for seed in SEEDS:
        check_seed(seed, "mode=precise sink-sets=true", few, loop_rate=LOOPS)
    assert any(chained)


@pytest.mark.slow
@pytest.mark.parametrize("events", [2, 8])
def test_random_loop_chains_are_race_free_many_seeds(events):
    target = replace(TARGET, events_per_pipe_pair=events)
    for seed in SLOW_SEEDS:
        check_seed(seed, "mode=precise sink-sets=true", target, loop_rate=LOOPS)
