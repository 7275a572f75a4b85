"""A launch runs one decoded program on every core (simulator/launch.py):
each core keeps its own on-chip buffers across the chip barriers, however
the cores' phases interleave, and starts with them blank."""

from __future__ import annotations

import numpy as np
import pytest

from npu.ir import make_context, parse_module
from npu.simulator import SimulationError, simulate

ROW = 128  # f16 elements per core: 256 bytes, 8 blocks
G = f'memref<{4 * ROW}xf16, "gm">'
T = f'memref<{ROW}xf16, strided<[1], offset: ?>, "gm">'
U = f'memref<{ROW}xf16, "ub">'


def _kernel(load: str) -> str:
    """Core b loads row b of %a into UB (`load`: "all" cores, or "core 0"
    only), passes a chip barrier (every other core runs its own phase
    meanwhile), then stores its UB to row b of %c. A pipe_barrier(ALL)
    lands the load before the chip barrier, which leaves MTE2's loads in
    flight (simulator/pipes.py)."""
    lines = [f'func.func @k(%a: {G}, %c: {G}, %blk: index {{npu.block_idx}}) '
             "attributes {npu.block_dim = 4 : i64} {",
             f"  %n = arith.constant {ROW} : index",
             "  %o = arith.muli %blk, %n : index",
             f"  %sa = memref.subview %a[%o] [{ROW}] [1] : {G} to {T}",
             f"  %sc = memref.subview %c[%o] [{ROW}] [1] : {G} to {T}",
             f"  %u = memref.alloc() : {U}"]
    copy = ('"cce.copy_gm_to_ub"(%sa, %u) {n_burst = 1 : i64, burst_len = 8 : i64, '
            f"src_gap = 0 : i64, dst_gap = 0 : i64}} : ({T}, {U}) -> ()")
    if load == "all":
        lines.append("  " + copy)
    else:
        lines += ["  %c0 = arith.constant 0 : index",
                  "  %first = arith.cmpi eq, %blk, %c0 : index",
                  "  scf.if %first {", "    " + copy, "  }"]
    lines += ['  "cce.pipe_barrier"() {pipe = "ALL"} : () -> ()',
              '  "cce.sync_all"() : () -> ()',
              '  "cce.copy_ub_to_gm"(%u, %sc) {n_burst = 1 : i64, burst_len = 8 : i64, '
              f"src_gap = 0 : i64, dst_gap = 0 : i64}} : ({U}, {T}) -> ()",
              "  return", "}", ""]
    return "\n".join(lines)


def test_each_core_keeps_its_own_buffers_across_barriers() -> None:
    a = np.arange(4 * ROW, dtype=np.float16)
    res = simulate(parse_module(_kernel("all"), make_context()),
                   [a, np.zeros(4 * ROW, np.float16)])
    assert res.hazards == [] and res.report["block_dim"] == 4
    assert np.array_equal(res.outputs[1], a)  # each row from its own core's UB


def test_a_core_starts_with_blank_buffers() -> None:
    # Only core 0 loads: core 1's UB is unwritten, though core 0's phase ran first.
    with pytest.raises(SimulationError) as e:
        simulate(parse_module(_kernel("core 0"), make_context()),
                 [np.ones(4 * ROW, np.float16), np.zeros(4 * ROW, np.float16)])
    assert e.value.kind == "uninitialized"


UNARY = ("repeat = 1 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, "
         "src_blk_stride = 1 : i64, src_rep_stride = 8 : i64")


def _scale_kernel() -> str:
    """Core b scales row b of %a by 2 into row b of %c through UB: the
    copies' GM operands differ per core, the vmuls's UB operands do not."""
    lines = _kernel("all").splitlines()[:-5]  # up to the load, without the barriers
    lines += [f"  %w = memref.alloc() : {U}",
              '  "cce.set_flag"() {src = "MTE2", dst = "V", event = 0 : i64} : () -> ()',
              '  "cce.wait_flag"() {src = "MTE2", dst = "V", event = 0 : i64} : () -> ()',
              f'  "cce.vmuls"(%w, %u) {{{UNARY}, scalar = 2.0 : f64}} : ({U}, {U}) -> ()',
              '  "cce.set_flag"() {src = "V", dst = "MTE3", event = 0 : i64} : () -> ()',
              '  "cce.wait_flag"() {src = "V", dst = "MTE3", event = 0 : i64} : () -> ()',
              '  "cce.copy_ub_to_gm"(%w, %sc) {n_burst = 1 : i64, burst_len = 8 : i64, '
              f"src_gap = 0 : i64, dst_gap = 0 : i64}} : ({U}, {T}) -> ()",
              "  return", "}", ""]
    return "\n".join(lines)


def test_cores_bind_a_shared_operand_set_once(monkeypatch) -> None:
    # The checks that do not depend on the core run once per operand set for
    # the whole launch (machine.SharedBindings); each core still runs its own
    # hazard checks and effect on its own buffers.
    from npu.simulator.machine import SharedBindings

    # Counted on the Python engine, whose binder is a method to count; the
    # compiled binder (`csrc/bind.c`) fills the same table from C and is held
    # to the Python one by test_compiled_bind_transfer and test_compiled_engine.
    monkeypatch.setenv("NPU_SIM", "python")
    bound: list[str] = []
    bind = SharedBindings.bind

    def counted(self, instr, views, cross):
        bound.append(instr.name)
        return bind(self, instr, views, cross)

    monkeypatch.setattr(SharedBindings, "bind", counted)
    a = np.arange(4 * ROW, dtype=np.float16)
    res = simulate(parse_module(_scale_kernel(), make_context()),
                   [a, np.zeros(4 * ROW, np.float16)])
    assert res.hazards == [] and res.report["block_dim"] == 4
    assert np.array_equal(res.outputs[1], a * 2)
    assert bound.count("cce.vmuls") == 1  # one UB operand set, four cores
    assert bound.count("cce.copy_gm_to_ub") == bound.count("cce.copy_ub_to_gm") == 4
