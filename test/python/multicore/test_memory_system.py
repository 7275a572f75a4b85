"""The shared memory system: chip GM bandwidth, per-core movers, burst cost, L2."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from helpers import random_inputs
from npu.ir import make_context, parse_module
from npu.pipeline import run_pipeline
from npu.simulator import simulate
from npu.simulator.access import dense, from_bursts
from npu.simulator.memory import Memory
from npu.simulator.memory_system import MemorySystem
from npu.target import ASCEND310, ASCEND910, ASCEND910B, MIB


def _target(**kw):
    return replace(ASCEND910, **kw)


def test_many_short_bursts_cost_more_than_one_long_transfer() -> None:
    ms = MemorySystem(ASCEND910)
    mem = Memory("gm:x", "gm", 1 << 16)
    long = ms.transfer(0, 4096, 1, 64, mem, dense(4096), 0, False)
    short = ms.transfer(100000, 4096, 128, 64, mem, from_bursts(128, 32, 64), 8192, False)
    assert long == 4096 // 64 + ASCEND910.gm_burst_cycles
    assert short == 4096 // 64 + 128 * ASCEND910.gm_burst_cycles
    assert short > 2 * long


def test_cores_share_the_chip_bandwidth_reads_and_writes_alike() -> None:
    t = _target(gm_chip_bytes_per_cycle=64)  # the bus is as fast as one core's mover
    ms = MemorySystem(t)
    a, b = Memory("gm:a", "gm", 1 << 16), Memory("gm:b", "gm", 1 << 16)
    first = ms.transfer(0, 6400, 1, 64, a, dense(6400), 0, False)
    # A second core writing at the same time gets what is left of the bus.
    second = ms.transfer(0, 6400, 1, 64, b, dense(6400), 0, True)
    assert first == 100 + t.gm_burst_cycles
    assert second >= 2 * 100
    # On a bus with room for both, neither waits.
    ms = MemorySystem(_target(gm_chip_bytes_per_cycle=128))
    assert ms.transfer(0, 6400, 1, 64, a, dense(6400), 0, False) == first
    assert ms.transfer(0, 6400, 1, 64, b, dense(6400), 0, True) == first


def test_l2_serves_a_re_read_within_its_capacity_window() -> None:
    t = _target(gm_chip_bytes_per_cycle=64, l2_bytes=64 * 1000)  # window: 1000 cycles
    ms = MemorySystem(t)
    mem = Memory("gm:a", "gm", 1 << 16)
    ms.transfer(0, 6400, 1, 64, mem, dense(6400), 0, False)
    assert ms.l2_hit_bytes == 0
    bus = ms.bus_bytes
    ms.transfer(500, 6400, 1, 64, mem, dense(6400), 0, False)  # another core, soon after
    assert ms.l2_hit_bytes == 6400 and ms.bus_bytes == bus
    ms.transfer(5000, 6400, 1, 64, mem, dense(6400), 0, False)  # long evicted
    assert ms.l2_hit_bytes == 6400 and ms.bus_bytes == bus + 6400


ADD = ('func.func @add(%a: memref<65536xf16, "gm">, %b: memref<65536xf16, "gm">, '
       '%c: memref<65536xf16, "gm">) {\n'
       '  "ascend.add"(%a, %b, %c) : (memref<65536xf16, "gm">, memref<65536xf16, "gm">, '
       'memref<65536xf16, "gm">) -> ()\n  return\n}\n')


def _add_cycles(target, cores: int):
    module = parse_module(ADD, make_context())
    run_pipeline(module, f"builtin.module(npu-split-cores{{cores={cores} min-bytes=0}},npu-lower)",
                 target)
    return simulate(module, random_inputs(ADD), target=target)


def test_a_bus_bound_launch_runs_at_the_chip_bandwidth() -> None:
    # 8 cores x 64 B/cycle per mover against a 128 B/cycle chip bus.
    t = _target(gm_chip_bytes_per_cycle=128)
    res = _add_cycles(t, 8)
    rep = res.report
    assert rep["block_dim"] == 8
    assert rep["bound_unit"] == "chip:gm"
    bus_bound = 6 * 65536 / 128  # two reads and one write of 128 KiB
    assert rep["memory_system"]["chip_bus_bytes"] == 6 * 65536
    assert bus_bound <= res.cycles <= 1.3 * bus_bound
    # The same launch on a bus with room for all eight is much faster.
    assert _add_cycles(ASCEND910, 8).cycles < 0.5 * res.cycles


@pytest.mark.parametrize("target, published", [(ASCEND910, 256), (ASCEND910B, 313),
                                               (ASCEND310, 8)])
def test_presets_match_the_published_fp16_peak(target, published: float) -> None:
    assert abs(target.peak_tflops_fp16() / published - 1) < 0.05


def test_preset_memory_numbers_have_sources() -> None:
    for t in (ASCEND910, ASCEND910B, ASCEND310):
        for key in ("gm_chip_bytes_per_cycle", "l2_bytes", "peak"):
            assert t.sources.get(key), (t.name, key)
    assert ASCEND910.l2_bytes == 32 * MIB and ASCEND910.gm_chip_gbps() == 1200
    assert np.isclose(ASCEND310.peak_tflops_fp16() / ASCEND310.cores, 4.1, atol=0.1)
