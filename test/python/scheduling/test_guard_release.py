"""npu-plan-memory and buffers inside a core guard (`scf.if`): npu-insert-sync
orders an access after the guard to bytes a buffer inside it used by flags
set after the whole guard, so the hand-over waits for the guard's last work
on that pipe however early the buffer's own last access was. Measured: out_proj's
prefetched bias row (MTE2, after the attention's guard) sat on the ones
blocks the attention's first step wrote (V, then MTE3) and waited 363 cycles
for the attention's last context stores, on every attention core of BERT at
seq 512 on 32 cores."""

from __future__ import annotations

from npu.passes.buffer_placement import Buffer, conflicts


def test_a_hand_over_after_the_guard_counts_from_the_guards_end() -> None:
    ones = Buffer(None, "ub", 32, 10, 12, "V", "MTE3", release=500)
    bias = Buffer(None, "ub", 32, 503, 510, "MTE2", "MTE2")
    # 491 positions after the buffer's own last access, 3 after its guard's end
    assert conflicts(ones, bias, 256) and conflicts(bias, ones, 256)
    assert conflicts(ones, bias, 16)
    assert not conflicts(ones, bias, 0)  # plain lifetimes: disjoint
    # the same buffer outside any guard: far enough apart
    assert not conflicts(Buffer(None, "ub", 32, 10, 12, "V", "MTE3"), bias, 256)


def test_inside_the_same_guard_its_own_end_counts() -> None:
    ones = Buffer(None, "ub", 32, 10, 12, "V", "MTE3", release=500)
    later = Buffer(None, "ub", 32, 300, 310, "MTE2", "MTE2", release=500)
    assert not conflicts(ones, later, 256)
    assert conflicts(ones, later, None)
