"""Operand sets that a loop makes afresh on every iteration (a window moving
over GM): each is bound anew and runs through the generic path (dense copies
bound as plain slices), and their short GM transfers test L2 lines on Python
floats. Every check must still fire on them, and the short-transfer path
must account exactly as the numpy one."""

from __future__ import annotations

import numpy as np
import pytest

from npu.ir import make_context, parse_module
from npu.simulator import SimulationError, simulate
from npu.simulator import memory_system
from npu.simulator.access import dense
from npu.simulator.machine import Machine
from npu.simulator.memory import Memory
from npu.target import get_target

TILE = 128
U = 'memref<128xf16, "ub">'


def window_kernel(tiles: int, *, wait_before_load: bool = True, source: str = "x",
                  extra_tiles: int = 0) -> str:
    """y[i] = 2 * x[i] tile by tile through UB, the GM views moving by one tile
    per iteration. `wait_before_load=False` drops the flag that keeps the
    next load out of UB until the store has read it (a race); `source="tmp"`
    loads from a GM temporary nobody wrote; `extra_tiles` runs the loop past
    the end of x."""
    n = tiles * TILE
    t = f'memref<{TILE}xf16, strided<[1], offset: ?>, "gm">'
    g = f'memref<{n}xf16, "gm">'
    lines = [f'func.func @window(%x: {g}, %y: {g}) {{',
             "  %c0 = arith.constant 0 : index",
             "  %c1 = arith.constant 1 : index",
             f"  %c128 = arith.constant {TILE} : index",
             f"  %cn = arith.constant {tiles + extra_tiles} : index",
             f"  %a = memref.alloc() : {U}",
             f"  %b = memref.alloc() : {U}"]
    if source == "tmp":
        lines.append(f"  %tmp = memref.alloc() : {g}")
    lines += ['  "cce.set_flag"() {src = "MTE3", dst = "MTE2", event = 0 : i64} : () -> ()',
              "  scf.for %i = %c0 to %cn step %c1 {",
              "    %o = arith.muli %i, %c128 : index",
              f"    %xs = memref.subview %{source}[%o] [{TILE}] [1] : {g} to {t}",
              f"    %ys = memref.subview %y[%o] [{TILE}] [1] : {g} to {t}"]
    if wait_before_load:
        lines.append('    "cce.wait_flag"() {src = "MTE3", dst = "MTE2", event = 0 : i64} : () -> ()')
    lines += ['    "cce.copy_gm_to_ub"(%xs, %a) {n_burst = 1 : i64, burst_len = 8 : i64, '
              f"src_gap = 0 : i64, dst_gap = 0 : i64}} : ({t}, {U}) -> ()",
              '    "cce.set_flag"() {src = "MTE2", dst = "V", event = 0 : i64} : () -> ()',
              '    "cce.wait_flag"() {src = "MTE2", dst = "V", event = 0 : i64} : () -> ()',
              '    "cce.vmuls"(%b, %a) {repeat = 1 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, '
              "dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64, "
              f"scalar = 2.0 : f64}} : ({U}, {U}) -> ()",
              '    "cce.set_flag"() {src = "V", dst = "MTE3", event = 0 : i64} : () -> ()',
              '    "cce.wait_flag"() {src = "V", dst = "MTE3", event = 0 : i64} : () -> ()',
              '    "cce.copy_ub_to_gm"(%b, %ys) {n_burst = 1 : i64, burst_len = 8 : i64, '
              f"src_gap = 0 : i64, dst_gap = 0 : i64}} : ({U}, {t}) -> ()",
              '    "cce.set_flag"() {src = "MTE3", dst = "MTE2", event = 0 : i64} : () -> ()',
              "  }"]
    if wait_before_load:
        lines.append('  "cce.wait_flag"() {src = "MTE3", dst = "MTE2", event = 0 : i64} : () -> ()')
    lines += ["  return", "}", ""]
    return "\n".join(lines)


def run(text: str, tiles: int, strict: bool, runner_from_use: int | None = 16):
    module = parse_module(text, make_context())
    x = np.random.default_rng(0).uniform(-4, 4, tiles * TILE).astype(np.float16)
    saved = Machine.runner_from_use, Machine.compiled_runner_from_use
    Machine.runner_from_use = Machine.compiled_runner_from_use = runner_from_use
    try:
        return x, simulate(module, [x, np.zeros_like(x)], strict=strict)
    finally:
        Machine.runner_from_use, Machine.compiled_runner_from_use = saved


def test_moving_window_computes_and_times_as_runners_do():
    """The window's operand sets are fresh each iteration (generic path); the
    UB ones repeat (runners from their first use here): same result either way."""
    tiles = 40
    x, res = run(window_kernel(tiles), tiles, strict=True)
    assert np.array_equal(res.outputs[1], x * np.float16(2))
    assert res.report["memory_system"]["gm_read_bytes"] == tiles * TILE * 2
    _, generic = run(window_kernel(tiles), tiles, strict=True, runner_from_use=None)
    assert (generic.cycles, generic.report["memory_system"]) == (
        res.cycles, res.report["memory_system"])
    assert np.array_equal(generic.outputs[1], res.outputs[1])


@pytest.mark.parametrize("runner_from_use", [None, 1, 16])
def test_race_through_fresh_operand_sets_is_reported(runner_from_use):
    """Without the MTE3 -> MTE2 flag, each iteration's load into UB (a fresh
    operand set) overwrites what the previous iteration's vmuls reads: the
    load's own write-after-read check names it, and vmuls' read-after-write
    check names it from the other side."""
    tiles = 24
    with pytest.raises(SimulationError, match="race"):
        run(window_kernel(tiles, wait_before_load=False), tiles, strict=True,
            runner_from_use=runner_from_use)
    _, res = run(window_kernel(tiles, wait_before_load=False), tiles, strict=False,
                 runner_from_use=runner_from_use)
    messages = [h["message"] for h in res.hazards if h["kind"] == "race"]
    assert any(m.startswith("'cce.copy_gm_to_ub' on pipe MTE2 overwrites ub bytes [0, 256) "
                            "read by 'cce.vmuls'") for m in messages)
    assert any(m.startswith("'cce.vmuls' on pipe V reads ub bytes [0, 256) written by "
                            "'cce.copy_gm_to_ub'") for m in messages)


def test_uninitialised_source_through_fresh_operand_sets_is_reported():
    """Loads from a GM temporary nobody wrote carry its uninitialised bytes
    into UB, window by window; the vector op computing with them fails."""
    tiles = 20
    with pytest.raises(SimulationError, match="uninitiali"):
        run(window_kernel(tiles, source="tmp"), tiles, strict=True)


def test_window_past_the_end_fails_bounds_at_its_first_fresh_operand_set():
    tiles = 20
    with pytest.raises(SimulationError, match="outside"):
        run(window_kernel(tiles, extra_tiles=1), tiles, strict=True)


def test_short_transfers_account_as_the_numpy_path(monkeypatch):
    """Random dense GM transfers (1 B to 4 KiB, any address, reads and
    writes, times moving back and forth across the L2 window): the Python
    short path and the numpy path give the same cycles, L2 hits, bus bytes
    and last-touch times."""
    target = get_target()
    rng = np.random.default_rng(7)
    calls = []
    for _ in range(400):
        nbytes = int(rng.integers(1, 4097))
        addr = int(rng.integers(0, 1 << 16))
        t0 = int(rng.integers(0, 4 * target.l2_bytes // target.gm_chip_bytes_per_cycle))
        calls.append((t0, nbytes, int(rng.integers(1, 4)), int(rng.choice([32, 64, 128])),
                      dense(nbytes, 1), addr, bool(rng.integers(0, 2))))

    def replay() -> tuple:
        ms = memory_system.MemorySystem(target)
        mem = Memory("gm:x", "gm", 1 << 17)
        cycles = [ms.transfer(t0, n, nb, rate, mem, pat, addr, write)
                  for t0, n, nb, rate, pat, addr, write in calls]
        return cycles, ms.summary(1 << 20), ms._last_touch[mem].tolist()

    short = replay()
    monkeypatch.setattr(memory_system, "SMALL_RUN", -1)  # every transfer through numpy
    assert replay() == short
