"""A buffer after a core guard no longer shares bytes with a buffer the guard
used early on another pipe (`Buffer.release`, passes/buffer_placement.py):
npu-insert-sync's flags for such a hand-over are set after the whole guard,
so the later access waits for the guard's last work.

Where it pays: BERT-base's layer at seq 256 on 32 cores, 57,445 cycles
against 60,757 without it (`GUARD_RELEASE`; ascend910). ffn_in's first
weight piece (L1, loaded by MTE2 ahead of its barrier) starts 13 positions
after the attention's guard and 429 after the guard's L1 tile's last use
(MTE1). Without the release its 128-position window counts from that last
use, the piece sits on the tile's bytes and waits for the guard's end: the
load ends at 23,373 against 19,962, and out_proj, ln1 and everything after
move by about 3,300 cycles.

Where it no longer pays: BERT seq 128 on 8 cores, pinned here until
npu-prefetch loaded out_proj's first L1 weight pieces ahead of the
attention's guard (their lifetimes overlap its buffers): 94,648 against
94,653 (97,841 against 99,795 before). The other rows measured
(docs/multicore.md) move by under 1% either way."""

from __future__ import annotations

import numpy as np
import pytest

import npu
from npu.frontend.bert import bert_layer
from npu.passes import buffer_placement, plan_memory

SEQ, HIDDEN, HEADS, FFN, CORES = 256, 768, 12, 3072, 32
X = np.random.default_rng(5).standard_normal((1, SEQ, HIDDEN)).astype(np.float32)


def _hand_overs(monkeypatch, release: bool) -> list[tuple[str, bool]]:
    """Every pair npu-plan-memory placed of a buffer inside a guard and a
    later one outside it, first touched by another pipe, that the release
    keeps apart (the later one starts within their window of the guard's
    end, but not of the buffer's own last access): (its space, whether
    their bytes overlap), with the release on or off."""
    pairs = []
    place_relaxed = buffer_placement.place_relaxed

    def recording(buffers, capacity, algorithm, rounds=8):
        relaxed = place_relaxed(buffers, capacity, algorithm, rounds)
        windows = [buffer_placement._UNLIMITED if w is None else w for w in relaxed.windows]
        offsets = relaxed.plan.offsets
        for i, g in enumerate(buffers):
            for j, b in enumerate(buffers):
                window = min(windows[i], windows[j])
                if (g.release > g.end and b.start > g.release
                        and b.start - g.release <= window < b.start - g.end
                        and g.last_pipe and b.first_pipe and g.last_pipe != b.first_pipe):
                    pairs.append((g.space, offsets[i] < offsets[j] + b.size
                                  and offsets[j] < offsets[i] + g.size))
        return relaxed

    monkeypatch.setattr(plan_memory, "place_relaxed", recording)
    monkeypatch.setattr(buffer_placement, "GUARD_RELEASE", release)
    npu.compile(bert_layer(SEQ, HIDDEN, HEADS, FFN), target="ascend910",
                pipeline=f"builtin.module(npu-lower{{cores={CORES}}})")
    return pairs


@pytest.mark.slow
def test_a_buffer_after_a_guard_keeps_off_the_guards_early_bytes(monkeypatch) -> None:
    with_release = _hand_overs(monkeypatch, True)
    assert ("l1", False) in with_release  # ffn_in's weight piece after the attention's
    assert all(not overlap for _, overlap in with_release), with_release
    # without the release the planner lets such a pair share bytes
    assert any(overlap for _, overlap in _hand_overs(monkeypatch, False))


def _run() -> tuple:
    kernel = npu.compile(bert_layer(SEQ, HIDDEN, HEADS, FFN), target="ascend910",
                         pipeline=f"builtin.module(npu-lower{{cores={CORES}}})")
    return kernel(X)


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason=(
    "a known regression: since the attention reads the projections' Nz (passes/attention_nz.py) "
    "the release costs cycles here, 52,998 with it against 52,486 without (BERT seq 512 on 32 "
    "cores 87,918 against 87,598, seq 128 the same; before npu-prefetch's twin shares 56,352 / "
    "55,776 and 90,142 / 89,890); the rule wants re-deciding (docs/multicore.md)"))
def test_hand_over_after_a_guard_counts_from_its_end(monkeypatch) -> None:
    # The release alone: the planner's later kernel rule (KERNEL_RELEASE),
    # tried once the plan is settled, keeps the same piece off those bytes
    # where the release does not (57,509 with the rule and no release).
    monkeypatch.setattr(buffer_placement, "KERNEL_RELEASE", False)
    ys, report = _run()
    assert report["hazards"] == []
    monkeypatch.setattr(buffer_placement, "GUARD_RELEASE", False)
    ys_old, report_old = _run()
    for y, y_old in zip(ys, ys_old):
        np.testing.assert_array_equal(y, y_old)
    # measured 57,445 against 60,757 cycles (5.5%): above the under-1% that
    # rows without such a hand-over move by placement either way
    gain = report_old["cycles"] - report["cycles"]
    assert gain > 0.02 * report_old["cycles"], (report["cycles"], report_old["cycles"])
