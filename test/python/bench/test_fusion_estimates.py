"""bench/fusion_estimates.py's attribution of simulated cycles to a kernel:
its span after the op that ended before it (`own_spans`) plus its lead-in
(`lead_ins`), the cycles its own instructions were in flight before that
op ended (loads that wait for nothing in it: a conv's bias, weights, input
rows stored early)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from npu.simulator.instruction import OP, WAIT

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
from fusion_estimates import Estimate, lead_ins, own_spans  # noqa: E402


def test_lead_in_is_the_union_of_the_ops_windows_before_the_op_before_ends():
    """Conv B's loads run from 600 while A ends at 1000 (two overlapping
    copies, 600-900 and 800-950, and one across A's end, 980-1100): 370
    cycles of lead-in; its wait for A (100-1000) is not work. Its span
    after A is 1500 - 1000; A, first, has none."""
    per_op = [{"op": "A", "location": "a", "first_cycle": 0, "last_cycle": 1000},
              {"op": "B", "location": "b", "first_cycle": 100, "last_cycle": 1500}]
    ops = [("a", OP, 0, 1000), ("b", WAIT, 100, 1000), ("b", OP, 600, 900),
           ("b", OP, 800, 950), ("b", OP, 980, 1100), ("b", OP, 1100, 1500)]
    result = SimpleNamespace(
        trace_entries=[(SimpleNamespace(where=w, kind=k), None, None) for w, k, _, _ in ops],
        timeline=SimpleNamespace(start=[s for *_, s, _ in ops], end=[e for *_, e in ops]))
    assert own_spans(per_op) == {"A": 1000, "B": 500}
    assert lead_ins(result, per_op) == {"A": 0, "B": 370}


def test_overlapped_kernel_is_judged_on_both_bounds():
    """A kernel with a lead-in is within its estimate where the estimate
    lies between its span and its span with the lead-in, else as far as the
    nearer bound (ResNet-18's layer3.0 downsample: 0.49 and 1.23 of 6,742);
    without a lead-in its span alone counts."""
    downsample = Estimate("ds", "conv", 6742, 3310, lead_in=5011)
    assert downsample.deviation == 0.0
    assert Estimate("a", "conv", 1000, 500, lead_in=200).deviation == pytest.approx(0.3)
    assert Estimate("b", "conv", 1000, 1100, lead_in=400).deviation == pytest.approx(0.1)
    assert Estimate("c", "conv", 1000, 1230).deviation == pytest.approx(0.23)
