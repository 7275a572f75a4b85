"""A candidate keeps its own time limit (no Ray here): the runner then never
has to kill a worker whose result may be in flight."""

import signal

from npu.tune.evaluate import Job, evaluate

# 2^24 elements take about a second to compile and simulate: far past 0.05 s.
LONG_EXP = """
func.func @exp(%x: memref<16777216xf16, "gm">, %y: memref<16777216xf16, "gm">) {
  "ascend.exp"(%x, %y) : (memref<16777216xf16, "gm">, memref<16777216xf16, "gm">) -> ()
  return
}
"""


def test_a_candidate_past_its_limit_returns_a_timeout():
    handler = signal.getsignal(signal.SIGALRM)
    before, _ = signal.getitimer(signal.ITIMER_REAL)
    outcome = evaluate(Job("long", "exp.mlir", LONG_EXP, "ascend910"), time_limit=0.05)
    assert outcome["status"] == "timeout"
    assert outcome["error"] == "no result within the time limit of 0.05 s"
    assert outcome["cycles"] is None
    # The caller's alarm (pytest-timeout's, when it runs) is back as it was.
    assert signal.getsignal(signal.SIGALRM) is handler
    after, _ = signal.getitimer(signal.ITIMER_REAL)
    assert (after > 0) == (before > 0) and after <= before


def test_without_a_limit_the_alarm_is_untouched():
    small = LONG_EXP.replace("16777216", "4096")
    handler = signal.getsignal(signal.SIGALRM)
    outcome = evaluate(Job("small", "exp.mlir", small, "ascend910"))
    assert outcome["status"] == "ok" and outcome["cycles"] > 0
    assert signal.getsignal(signal.SIGALRM) is handler
