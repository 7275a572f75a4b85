"""The runner's backstop: a task that its own time limit cannot reach (stuck
where SIGALRM never arrives, as native code can be) is cancelled by force
once the runner's later deadline passes, and the driver survives it."""

import signal
import time

from npu.tune.evaluate import Job
from npu.tune.runner import RayRunner, backstop_seconds

SMALL_EXP = """
func.func @exp(%x: memref<4096xf16, "gm">, %y: memref<4096xf16, "gm">) {
  "ascend.exp"(%x, %y) : (memref<4096xf16, "gm">, memref<4096xf16, "gm">) -> ()
  return
}
"""


def test_a_task_its_limit_cannot_reach_is_cancelled_at_the_backstop(ray_runner):
    def stuck_or_evaluate(job: Job, time_limit: float | None) -> dict:
        # Nested, so Ray ships it by value to a worker that cannot import tests.
        from npu.tune.evaluate import evaluate

        if job.key == "stuck":
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
            time.sleep(3600)
        return evaluate(job, time_limit)

    class StuckRunner(RayRunner):
        task_body = staticmethod(stuck_or_evaluate)

    limit = 1.0
    runner = StuckRunner(workers=2, timeout=limit)
    runner._started = False  # the shared instance stays up
    outcomes: list[dict] = []
    start = time.monotonic()
    runner.run([Job("stuck", "exp.mlir", SMALL_EXP, "ascend910"),
                Job("fine", "exp.mlir", SMALL_EXP, "ascend910")], outcomes.append)
    elapsed = time.monotonic() - start
    by_key = {o["key"]: o for o in outcomes}
    assert by_key["fine"]["status"] == "ok" and by_key["fine"]["cycles"] > 0
    assert by_key["stuck"]["status"] == "timeout"
    assert by_key["stuck"]["error"] == "no result within the time limit of 1 s"
    # Not before the backstop (its own limit never fired), and not much after.
    assert backstop_seconds(limit) <= elapsed < backstop_seconds(limit) + 20
    # The driver and the cluster carry on: the next run gets a result.
    after: list[dict] = []
    ray_runner.run([Job("after", "exp.mlir", SMALL_EXP, "ascend910")], after.append)
    assert [o["status"] for o in after] == ["ok"]
