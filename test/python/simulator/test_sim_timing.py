"""Cycle counts computed by hand from the target description."""

from __future__ import annotations

import math

import numpy as np
import pytest

from npu.simulator import simulate
from npu.target import get_target

from sim_kernels import Kernel, f16, gm, mem
from test_sim_cube_unit import mad_kernel
from test_sim_vector_unit import roundtrip_kernel

BLOCK = get_target().vector_block_bytes


def entries(res, name):
    return [i for i, (instr, _, _) in enumerate(res.trace_entries) if instr.name == name]


@pytest.mark.parametrize("preset", ["ascend910", "ascend310"])
def test_single_copy_cycles(preset):
    t = get_target(preset)
    n_burst, burst_len, gap = 4, 3, 2
    k = Kernel([("a", gm([1024])), ("b", gm([1024]))])
    k.alloc("u", mem([1024], "f16", "ub"))
    k.copy("gm_to_ub", "a", "u", n_burst, burst_len, src_gap=gap)
    res = simulate(k.parse(), [f16(1024), f16(1024)], target=t)
    p = t.path("gm_to_ub")
    nbytes = n_burst * burst_len * t.vector_block_bytes
    # Each GM burst costs its set-up on the mover (target.gm_burst_cycles).
    data = math.ceil(nbytes / p.bytes_per_cycle) + n_burst * t.gm_burst_cycles
    assert res.cycles == t.scalar_issue_cycles + p.latency + data
    assert res.report["bytes"]["gm_to_ub"] == nbytes
    assert res.report["pipes"]["MTE2"]["busy_cycles"] == p.latency + data


def test_roundtrip_total_cycles_by_hand():
    """copy, copy, set/wait, vadd, set/wait, copy: every step from the target."""
    t = get_target()
    n = 512
    res = simulate(roundtrip_kernel(n).parse(), [f16(n), f16(n), f16(n)])
    issue = t.scalar_issue_cycles
    nbytes = n * 2
    gm_in, gm_out = t.path("gm_to_ub"), t.path("ub_to_gm")
    burst = t.gm_burst_cycles  # one burst per copy
    copy_in = gm_in.latency + math.ceil(nbytes / gm_in.bytes_per_cycle) + burst
    repeats = n // t.lanes(2)
    vadd = repeats * t.vector_cycles("simple")
    # Dispatch times are issue, 2*issue, ...: the first copy starts at `issue`.
    occupancy_in = math.ceil(nbytes / gm_in.bytes_per_cycle) + burst
    if "MTE2" in t.pipelined_pipes:
        # The second copy starts once the first has streamed its bytes; its
        # start-up latency overlaps the first's.
        second_start = max(2 * issue, issue + occupancy_in)
        mte2_done = second_start + occupancy_in + gm_in.latency
    else:
        mte2_done = issue + 2 * copy_in                # the two copies back to back
    v_free = mte2_done + t.flag_latency                # set_flag(MTE2->V) fires, wait returns
    v_done = v_free + vadd + t.vector_latency          # vadd issue time + latency
    mte3_free = v_done + t.flag_latency                # set_flag(V->MTE3) waits for V to finish
    total = mte3_free + gm_out.latency + math.ceil(nbytes / gm_out.bytes_per_cycle) + burst
    assert res.cycles == total
    v = res.report["pipes"]["V"]
    assert v["busy_cycles"] == vadd + t.vector_latency
    assert (v["instructions"], v["sync_instructions"]) == (1, 2)  # vadd; wait, set


@pytest.mark.parametrize("op,cls", [("vadd", "simple"), ("vdiv", "transcendental")])
def test_vector_op_duration(op, cls):
    t = get_target()
    n = 1024
    res = simulate(roundtrip_kernel(n, op).parse(), [f16(n), f16(n) + np.float16(3), f16(n)])
    (i,) = entries(res, f"cce.{op}")
    tl = res.timeline
    assert tl.end[i] - tl.start[i] == (n // t.lanes(2)) * t.vector_cycles(cls) + t.vector_latency


def test_mad_duration_and_bound():
    t = get_target()
    M, N, K, nt = 48, 64, 32, 32
    k = mad_kernel(M, N, K, nt)
    res = simulate(k.parse(), [np.zeros((N // 16, M // 16, 16, 16), np.float16),
                               np.zeros((K // 16, N // 16, 16, 16), np.float16),
                               np.zeros((K // 16, M // 16, 16, 16), np.float32)])
    mads = entries(res, "cce.mad")
    assert len(mads) == N // nt
    blocks = math.ceil(M / 16) * math.ceil(K / 16) * math.ceil(nt / 16)
    for i in mads:
        assert res.timeline.end[i] - res.timeline.start[i] == \
            t.cube_cycles(blocks) + t.mad_latency
    # The cube's share of the bound: all block products over the cube rate.
    assert res.report["bounds"]["M"] == (N // nt) * t.cube_cycles(blocks)
    assert res.report["bound_cycles"] == math.ceil(max(res.report["bounds"].values()))


@pytest.mark.parametrize("pipelined", [True, False])
def test_mover_latency_overlap_follows_target(pipelined):
    """Back-to-back GM loads overlap their start-up latency exactly when the
    target lists MTE2 as pipelined."""
    import dataclasses

    base = get_target()
    pipes = tuple(p for p in base.pipelined_pipes if p != "MTE2") + (("MTE2",) if pipelined else ())
    t = dataclasses.replace(base, pipelined_pipes=pipes)
    k = Kernel([("a", gm([4096]))])
    k.alloc("u", mem([2048], "f16", "ub"))
    k.alloc("w", mem([2048], "f16", "ub"))
    k.copy("gm_to_ub", "a", "u", 1, 128)
    k.copy("gm_to_ub", "a", "w", 1, 128)
    res = simulate(k.parse(), [f16(4096)], target=t)
    p = t.path("gm_to_ub")
    occupancy = math.ceil(4096 / p.bytes_per_cycle) + t.gm_burst_cycles  # one burst each
    issue = t.scalar_issue_cycles
    if pipelined:
        expected = max(2 * issue, issue + occupancy) + occupancy + p.latency
    else:
        expected = issue + 2 * (occupancy + p.latency)
    assert res.cycles == expected



def test_set_flag_holds_its_mover_until_earlier_copies_land():
    """A set_flag sits in its pipe's in-order queue and fires only once every
    earlier instruction of that pipe has finished (Ascend C SetFlag: it runs
    after all reads and writes of the instructions before it complete), so a
    copy queued behind it starts after the earlier copy has landed: MTE2 pays
    the GM latency once per flag, not once per run of copies
    (`npu-insert-sync`'s sink-sets relies on it)."""
    t = get_target()
    assert "MTE2" in t.pipelined_pipes
    k = Kernel([("a", gm([4096]))])
    k.alloc("u", mem([2048], "f16", "ub"))
    k.alloc("w", mem([2048], "f16", "ub"))
    k.copy("gm_to_ub", "a", "u", 1, 128)
    k.set_flag("MTE2", "V")
    k.copy("gm_to_ub", "a", "w", 1, 128)
    k.wait_flag("MTE2", "V")
    res = simulate(k.parse(), [f16(4096)], target=t)
    p = t.path("gm_to_ub")
    occupancy = math.ceil(4096 / p.bytes_per_cycle) + t.gm_burst_cycles
    first, second = entries(res, "cce.copy_gm_to_ub")
    tl = res.timeline
    landed = tl.end[first]
    assert landed == tl.start[first] + occupancy + p.latency
    # the second copy waits for the first to land (the flag), with no overlap
    # of the first's latency as without the flag
    assert tl.start[second] == landed
    assert res.cycles == landed + occupancy + p.latency

def test_overlap_of_independent_pipes():
    """A GM load (MTE2) and an unrelated vdup (V) overlap: total = the longer one."""
    t = get_target()
    k = Kernel([("a", gm([4096])), ("b", gm([4096]))])
    k.alloc("u", mem([4096], "f16", "ub"))
    k.alloc("w", mem([4096], "f16", "ub"))
    k.copy("gm_to_ub", "a", "u", 1, 256)
    k.vector("vdup", "w", repeat=32, mask=128, scalar=1.0)
    res = simulate(k.parse(), [f16(4096), f16(4096)])
    p2 = t.path("gm_to_ub")
    copy = p2.latency + math.ceil(8192 / p2.bytes_per_cycle) + t.gm_burst_cycles
    dup = 32 * t.vector_cycles("simple") + t.vector_latency
    issue = t.scalar_issue_cycles
    assert res.cycles == max(issue + copy, 2 * issue + dup) < issue + copy + dup


def test_vector_pipe_is_pipelined_and_barrier_drains_it():
    """Independent vector ops overlap their latency; pipe_barrier(V) waits for the result."""
    t = get_target()
    simple = t.vector_cycles("simple")

    def run(barrier: bool):
        k = Kernel([("a", gm([256]))])
        k.alloc("u", mem([256], "f16", "ub"))
        k.alloc("w", mem([384], "f16", "ub"))
        k.vector("vdup", "u", repeat=2, mask=128, scalar=1.0)
        if barrier:
            k.barrier("V")
        k.vector("vdup", "w", repeat=3, mask=128, scalar=2.0)
        return simulate(k.parse(), [f16(256)])
    issue = t.scalar_issue_cycles
    first_start = issue
    no_barrier = run(False)
    # The second starts when the first has issued its repeats, not when its result lands.
    assert no_barrier.cycles == first_start + 2 * simple + 3 * simple + t.vector_latency
    with_barrier = run(True)
    assert with_barrier.cycles == first_start + 2 * simple + t.vector_latency + 3 * simple + t.vector_latency
