"""The tuner's parts that need no Ray: statistics, spaces, records, CLI errors."""

from __future__ import annotations

import io
import math

import pytest

from npu.target import get_target
from npu.tune import SpaceError, TuningRecord
from npu.tune.program import Program, extract_ops
from npu.tune.progress import Progress
from npu.tune.record import RecordError
from npu.tune.search import Candidate, select
from npu.tune.space import canonical, parse_quantity, space_for, target_with
from npu.tune.stats import ranks, spearman
from npu.tune.tuner import op_candidates

MATMUL = """
func.func @mm(%a: memref<48x32x16x16xf16, "gm">, %b: memref<48x48x16x16xf16, "gm">,
              %c: memref<48x32x16x16xf32, "gm">, %d: memref<48x32x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<48x32x16x16xf16, "gm">, memref<48x48x16x16xf16, "gm">, memref<48x32x16x16xf32, "gm">) -> ()
  "ascend.matmul"(%a, %b, %d) : (memref<48x32x16x16xf16, "gm">, memref<48x48x16x16xf16, "gm">, memref<48x32x16x16xf32, "gm">) -> ()
  return
}
"""


def test_spearman_matches_definition():
    assert ranks([10, 20, 20, 5]) == [2.0, 3.5, 3.5, 1.0]
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # Without ties: 1 - 6 sum d^2 / (n (n^2 - 1)); d = (0, 1, -1, 0, 0).
    assert spearman([1, 2, 3, 4, 5], [1, 3, 2, 4, 5]) == pytest.approx(1 - 6 * 2 / (5 * 24))
    assert spearman([1, 1, 1], [1, 2, 3]) is None  # a constant side has no ranking
    assert spearman([1, 2], [1, 2]) is None


def test_same_op_twice_is_one_task_and_candidates_are_canonical():
    target = get_target()
    (task,) = extract_ops(Program("mm.mlir", MATMUL))
    assert task.count == 2 and task.family == "npu-lower-matmul"
    # The kernel keeps the op's location: errors point into the program.
    assert "func.func @tune_kernel" in task.kernel and 'loc("-":4:3)' in task.kernel
    default = canonical(task, {}, target)
    # npu-lower's defaults spelt out give the cost model's tiles.
    assert default == canonical(task, {"strategy": "os", "m": 256, "double-buffer": True}, target)
    assert (default["m"], default["n"], default["k"]) == (256, 128, 256)
    # The pipelined schedule's knobs vanish where they cannot apply.
    assert "l1-chunk" not in canonical(task, {"strategy": "ws"}, target)
    assert "matmul-schedule" not in canonical(task, {"strategy": "is"}, target)
    candidates, size = op_candidates(task, None, target)
    assert size == len(candidates) == len({c.key for c in candidates})
    assert sum(c.default for c in candidates) == 1
    guided = select("guided", candidates, budget=4)
    assert guided[0].default and len(guided) == 4
    finite = [c.estimate for c in guided[1:]]
    assert finite == sorted(finite)
    assert all(math.isfinite(e) for e in finite)


def test_space_spec_is_checked():
    target = get_target()
    (task,) = extract_ops(Program("mm.mlir", MATMUL))
    space = space_for(task, {"ops": {"ascend.matmul": {"strategy": ["ws"]},
                                     "*": {"ub-fraction": [0.5]}}}, target)
    assert space["strategy"] == ["ws"] and "ub-fraction" not in space
    with pytest.raises(SpaceError, match="'ub-fraction' is not a tunable option of npu-lower-matmul"):
        space_for(task, {"ops": {"ascend.matmul": {"ub-fraction": [0.5]}}}, target)
    with pytest.raises(SpaceError, match="expected one of os, is, ws, auto, got 'diagonal'"):
        space_for(task, {"ops": {"ascend.matmul": {"strategy": ["diagonal"]}}}, target)


def test_target_parameters():
    base = get_target("ascend910")
    t = target_with(base, {"ub": "128KiB", "gm-bandwidth": 32, "mad_latency": 40})
    assert t.capacity("ub") == 128 * 1024 and t.capacity("l1") == base.capacity("l1")
    assert {t.path(p).bytes_per_cycle for p in ("gm_to_l1", "gm_to_ub", "ub_to_gm")} == {32}
    assert t.path("l1_to_l0a") == base.path("l1_to_l0a") and t.mad_latency == 40
    assert parse_quantity("1MiB") == 1 << 20 and parse_quantity("1.5") == 1.5
    with pytest.raises(SpaceError, match="simulator models one AI core"):
        target_with(base, {"cores": 4})
    with pytest.raises(SpaceError, match="unknown target parameter 'l2'"):
        target_with(base, {"l2": 4})


def test_record_round_trip_and_errors(tmp_path):
    record = TuningRecord.from_json('{"format": "npu-tune-record", "version": 1, "target": "t", '
                                    '"ops": {"sig": {"options": {"m": 64}, "cycles": 5}}}')
    assert record.ops["sig"].options == {"m": 64} and record.ops["sig"].cycles == 5
    assert TuningRecord.from_json(record.to_json()).ops["sig"].options == {"m": 64}
    with pytest.raises(RecordError, match="not an npu-tune record"):
        TuningRecord.from_json("{}")
    with pytest.raises(RecordError, match="option 'm' must be a scalar"):
        TuningRecord.from_json('{"format": "npu-tune-record", "version": 1, '
                               '"ops": {"sig": {"options": {"m": [1]}}}}')
    with pytest.raises(RecordError, match="cannot read tuning record"):
        TuningRecord.load(str(tmp_path / "missing.json"))


def test_progress_line_has_eta_and_best():
    out = io.StringIO()
    bar = Progress(4, "t", stream=out)
    bar.update(100, "a")
    bar.update(None)
    bar.update(50, "b")
    bar.update(70, "c")
    last = out.getvalue().strip().splitlines()[-1]
    assert "4/4, 1 failed" in last and "ETA" in last and "best 50 cycles b" in last


def test_cli_usage_errors(tmp_path, capsys):
    from npu.tools.npu_tune import main

    prog = tmp_path / "p.mlir"
    prog.write_text(MATMUL)
    with pytest.raises(SystemExit) as e:
        main([str(prog), "--param", "ub=1KiB"])
    assert e.value.code == 2
    assert "'ub' is not an npu-lower option (target parameters need --design)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([str(prog), "--table", "t.csv"])
    assert "belong to --design" in capsys.readouterr().err
    onnx = tmp_path / "model.onnx"
    onnx.write_bytes(b"\0")
    assert main([str(onnx), "--no-store"]) == 1
    assert "needs the frontend" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main([str(prog), "--no-store", "--space", str(prog)])
    assert e.value.code == 2 and "p.mlir: not JSON" in capsys.readouterr().err
