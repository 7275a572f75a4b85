"""npu-tune sweeps on a local Ray instance: small programs, few candidates."""

from __future__ import annotations

import json
import os

import pytest

from npu.tune import TuneOptions, TuningRecord, sweep_design, tune
from npu.tune.program import Program
from npu.tune.runner import RayRunner

# A fractalize and a matmul at toy sizes, an add and an exp of 4096 fp16.
SMALL = """
func.func @small(%a: memref<64x64xf16, "gm">, %an: memref<4x4x16x16xf16, "gm">,
                 %b: memref<4x4x16x16xf16, "gm">, %cn: memref<4x4x16x16xf32, "gm">,
                 %x: memref<4096xf16, "gm">, %y: memref<4096xf16, "gm">, %z: memref<4096xf16, "gm">) {
  "ascend.fractalize"(%a, %an) : (memref<64x64xf16, "gm">, memref<4x4x16x16xf16, "gm">) -> ()
  "ascend.matmul"(%an, %b, %cn) : (memref<4x4x16x16xf16, "gm">, memref<4x4x16x16xf16, "gm">, memref<4x4x16x16xf32, "gm">) -> ()
  "ascend.add"(%x, %y, %z) : (memref<4096xf16, "gm">, memref<4096xf16, "gm">, memref<4096xf16, "gm">) -> ()
  "ascend.exp"(%z, %y) : (memref<4096xf16, "gm">, memref<4096xf16, "gm">) -> ()
  return
}
"""

EXP_ONLY = """
func.func @exp(%x: memref<4096xf16, "gm">, %y: memref<4096xf16, "gm">) {
  "ascend.exp"(%x, %y) : (memref<4096xf16, "gm">, memref<4096xf16, "gm">) -> ()
  return
}
"""


def small_spec() -> dict:
    return {"ops": {"ascend.matmul": {"strategy": ["os", "ws"], "m": [32, 64], "k": [64],
                                      "matmul-schedule": ["simple"]},
                    "npu-lower-fractalize": {"fractalize": ["fill-ub"], "ub-fraction": [0.5]},
                    "npu-lower-elementwise": {"ub-fraction": [0.5], "max-chunk": [1024, 0]}}}


def test_small_sweep_finds_options_and_verifies(ray_runner, tmp_path):
    store = tmp_path / "results.jsonl"
    result = tune(Program("small.mlir", SMALL), small_spec(),
                  TuneOptions(search="grid", store=str(store), progress=False), runner=ray_runner)
    by_op = {op.task.op_name: op for op in result.ops}
    assert set(by_op) == {"ascend.fractalize", "ascend.matmul", "ascend.add", "ascend.exp"}
    for op in result.ops:
        assert op.default.ok, op.default.error
        assert op.best is not None and op.best.cycles <= op.default.cycles
        assert all(r.ok for r in op.results), [r.error for r in op.results if not r.ok]
        # Each op's choice is in the record under its signature.
        assert result.record.ops[op.task.signature].cycles == op.best.cycles
    # Options that compile to the same program are one candidate: the
    # matmul's m=64 (the whole 64-row matrix) tiles as the cost model does.
    mm = by_op["ascend.matmul"]
    keys = [r.candidate.key for r in mm.results]
    assert len(keys) == len(set(keys))
    # Smaller chunks of the add mean more transfers: max-chunk=1024 is slower.
    add = by_op["ascend.add"]
    chunked = [r for r in add.results if r.candidate.options.get("max-chunk") == 1024]
    assert chunked and all(r.cycles > add.best.cycles for r in chunked)
    # The whole program was checked against numpy with the chosen options.
    assert result.verified and result.program["check"]["passed"]
    assert result.program["cycles_tuned"] <= result.program["cycles_default"]
    rho, pairs = result.spearman_by_family()["npu-lower-elementwise"]
    assert pairs == sum(len(by_op[n].results) for n in ("ascend.add", "ascend.exp"))
    # One stored line per run: the candidates and the whole program (default,
    # tuned, tuned with numerics).
    lines = store.read_text().splitlines()
    assert len(lines) == result.ran >= sum(len(op.results) for op in result.ops) + 3
    # The record round-trips and names only known options.
    again = TuningRecord.from_json(result.record.to_json())
    assert again.ops.keys() == result.record.ops.keys()


class InterruptAfter:
    """A runner that stops the sweep (as Ctrl-C would) after `n` results."""

    def __init__(self, runner: RayRunner, n: int):
        self.runner, self.n = runner, n

    def run(self, jobs, on_outcome):
        seen = 0

        def counting(outcome):
            nonlocal seen
            on_outcome(outcome)
            seen += 1
            if seen == self.n:
                raise KeyboardInterrupt

        self.runner.run(jobs, counting)

    def close(self):
        pass


def test_interrupted_sweep_resumes(ray_runner, tmp_path):
    store = tmp_path / "results.jsonl"
    opts = TuneOptions(search="grid", store=str(store), progress=False, verify=False)
    spec = {"ops": {"ascend.exp": {"ub-fraction": [0.125, 0.25, 0.5, 1.0],
                                   "double-buffer": [True]}}}
    program = Program("exp.mlir", EXP_ONLY)
    with pytest.raises(KeyboardInterrupt):
        tune(program, spec, opts, runner=InterruptAfter(ray_runner, 2))
    stored = [json.loads(line) for line in store.read_text().splitlines()]
    assert len(stored) == 2
    with open(store, "a") as f:
        f.write('{"key": "torn')  # the line being written when the process died
    result = tune(program, spec, opts, runner=ray_runner)
    (op,) = result.ops
    # ub-fraction 0.5 with double-buffer is the default: 4 distinct candidates.
    assert len(op.results) == 4
    assert result.reused == 2 and result.ran == 2
    assert ({r.candidate.key for r in op.results if r.reused}
            == {json.dumps(s["options"], sort_keys=True) for s in stored})
    assert all(r.ok for r in op.results)
    # A third run has nothing left to do.
    third = tune(program, spec, opts, runner=ray_runner)
    assert third.ran == 0 and third.reused == 4


def test_failing_and_hanging_candidates_are_recorded(ray_runner, tmp_path):
    store = tmp_path / "results.jsonl"
    # 0.0001 is a valid option value (in (0, 1]) whose UB budget cannot hold
    # one repeat: the candidate compiles to a located error.
    spec = {"ops": {"ascend.exp": {"ub-fraction": [0.25, 0.0001], "double-buffer": [True]}}}
    result = tune(Program("exp.mlir", EXP_ONLY), spec,
                  TuneOptions(search="grid", store=str(store), progress=False, verify=False),
                  runner=ray_runner)
    (op,) = result.ops
    by_fraction = {r.candidate.options["ub-fraction"]: r for r in op.results}
    assert by_fraction[0.0001].status == "failed"
    assert "UB budget of 26 bytes cannot hold one repeat" in by_fraction[0.0001].error
    assert "exp.mlir:3:3: error:" in by_fraction[0.0001].error  # located in the program
    assert by_fraction[0.25].ok and op.best is not None
    assert result.record.ops[op.task.signature].options["ub-fraction"] != 0.0001
    failed = [json.loads(line) for line in store.read_text().splitlines()
              if json.loads(line)["status"] == "failed"]
    assert len(failed) == 1

    # Candidates past their time limit stop themselves and are recorded as
    # timeouts. 2^24 elements take about a second to compile and simulate,
    # 20x the limit (2^20 took 0.054 s once the simulator got faster).
    impatient = RayRunner(workers=1, timeout=0.05)
    result = tune(Program("exp.mlir", EXP_ONLY.replace("4096", "16777216")), {"ops": {
        "ascend.exp": {"ub-fraction": [0.125], "double-buffer": [False]}}},
        TuneOptions(search="grid", progress=False, verify=False), runner=impatient)
    (op,) = result.ops
    assert len(op.results) == 2 and {r.status for r in op.results} == {"timeout"}
    assert "time limit of 0.05 s" in op.results[0].error
    assert op.best is None and op.task.signature not in result.record.ops


def test_design_sweep_table_and_plot(ray_runner, tmp_path):
    from npu.tune.design import plot

    result = sweep_design(Program("exp.mlir", EXP_ONLY),
                          {"ub": ["64KiB", "256KiB"], "gm-bandwidth": [32, 64]},
                          TuneOptions(progress=False), runner=ray_runner)
    rows = result.rows()
    assert [(r["param"], r["value"]) for r in rows] == [
        ("(preset)", "-"), ("ub", 65536), ("ub", 262144), ("gm-bandwidth", 32), ("gm-bandwidth", 64)]
    # 256 KiB of UB and 64 B/cycle are the preset's: one run serves three rows.
    assert result.ran == 3
    cycles = {(r["param"], r["value"]): r["cycles"] for r in rows}
    assert cycles[("ub", 262144)] == cycles[("gm-bandwidth", 64)] == cycles[("(preset)", "-")]
    assert cycles[("gm-bandwidth", 32)] > cycles[("(preset)", "-")]
    assert cycles[("ub", 65536)] >= cycles[("(preset)", "-")]
    path = tmp_path / "design.png"
    plot(result, str(path), "exp")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert result.csv().splitlines()[0].startswith("param,value,preset_value,status,cycles")


def test_cli_tunes_writes_a_record_npu_run_applies(ray_runner, tmp_path, capsys):
    from npu.tools import npu_run, npu_tune

    prog = tmp_path / "exp.mlir"
    prog.write_text(EXP_ONLY)
    record = tmp_path / "record.json"
    args = [str(prog), "--search", "grid", "--param", "ub-fraction=0.25,0.5",
            "--param", "double-buffer=true", "--param", "cores=1,2", "--param", "fuse=true",
            "--store", str(tmp_path / "s.jsonl"), "-o", str(record), "--no-progress"]
    assert npu_tune.main(args) == 0
    out = capsys.readouterr().out
    assert "numerics check passed" in out and "elementwise" in out
    # the whole programs over the pipeline options asked for: 4096 elements
    # are too few to split, so one core with the per-op choice is kept
    assert "| cores=1 fuse=true | yes |" in out and "| cores=2 fuse=true | no |" in out
    saved = TuningRecord.load(str(record))
    assert saved.pipeline == {"cores": 1, "fuse": True}
    (choice,) = saved.ops.values()
    assert choice.options["ub-fraction"] in (0.25, 0.5) and choice.options["double-buffer"] is True
    assert npu_run.main([str(prog), "--check", "--tuning-record", str(record)]) == 0
    assert f"cycles            {choice.cycles}" in capsys.readouterr().out
    # A rerun finds everything in the store.
    assert npu_tune.main(args + ["--json"]) == 0
    report = json.loads(capsys.readouterr().out,  # strict JSON: no NaN or Infinity
                        parse_constant=lambda c: pytest.fail(f"{c} in the JSON report"))
    # 2 candidates, the default and tuned programs, the check; npu-lower's
    # default, 2 pipeline settings and the chosen one's check
    assert (report["ran"], report["reused"]) == (0, 9)
    assert report["program"]["check"]["passed"] and len(report["ops"][0]["candidates"]) == 2

    table, png = tmp_path / "t.csv", tmp_path / "p.png"
    assert npu_tune.main([str(prog), "--design", "--param", "ub=128KiB,256KiB", "--no-store",
                          "--table", str(table), "--plot", str(png), "--no-progress"]) == 0
    assert "| ub | 131072 | 262144 |" in capsys.readouterr().out
    assert len(table.read_text().splitlines()) == 4 and png.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_guided_sweep_of_the_bert_matmul(ray_runner):
    """The example's four ops, guided search: the choice is checked with full
    numerics, never slower than npu-lower's defaults, and beats them on the
    fractal conversions (the defaults leave no UB for double buffering)."""
    import os

    from npu.tune import load_program

    path = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples",
                        "matmul_512x768x768.mlir")
    result = tune(load_program(os.path.normpath(path)), None,
                  TuneOptions(search="guided", budget=6, progress=False), runner=ray_runner)
    assert result.verified
    assert result.program["cycles_tuned"] < result.program["cycles_default"]
    for op in result.ops:
        assert op.best.cycles <= op.default.cycles
        if op.task.family == "npu-lower-fractalize":
            assert op.best.cycles < op.default.cycles


def test_cli_runs_on_an_existing_cluster(ray_runner, tmp_path):
    """`--address` connects to a running cluster (here the tests' own) instead
    of starting one; the cluster outlives the command."""
    import subprocess
    import sys

    import ray

    prog = tmp_path / "exp.mlir"
    prog.write_text(EXP_ONLY)
    tool = os.path.join(os.path.dirname(sys.executable), "npu-tune")
    run = subprocess.run([tool, str(prog), "--address", ray.get_runtime_context().gcs_address,
                          "--no-store", "--no-progress", "--no-verify", "--search", "grid",
                          "--param", "ub-fraction=0.25,0.5", "--param", "double-buffer=true"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "| ascend.exp 4096 x 4096 | elementwise | 2 / 2 |" in run.stdout
    assert ray.is_initialized() and ray.cluster_resources().get("CPU") == 2


def test_a_model_tuned_over_the_core_count_runs_with_its_record(ray_runner, tmp_path, capsys):
    """npu-tune model.onnx compares whole programs over the core count (the
    one-core program keeps the per-op choices); the record names the fastest,
    and npu-run applies it to the same model."""
    from npu.tools import npu_run, npu_tune

    model = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "ffn_block.onnx")
    record = tmp_path / "record.json"
    assert npu_tune.main([model, "--budget", "1", "--param", "cores=1,8", "--no-store",
                          "-o", str(record), "--no-progress"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    saved = TuningRecord.load(str(record))
    stage = saved.program["pipeline"]
    cycles = {c["options"]["cores"]: c["cycles"] for c in stage["candidates"]}
    assert set(cycles) == {1, 8} and cycles[8] < cycles[1]
    # eight cores win: npu-lower's own tiles there, so no per-op choice is kept
    assert saved.pipeline == {"cores": 8} and saved.ops == {}
    assert stage["chosen"] == {"cores": 8} and saved.program["check"]["passed"]
    assert "chosen: cores=8" in out
    assert npu_run.main([model, "--check", "--tuning-record", str(record)]) == 0
    ran = capsys.readouterr().out
    assert f"cycles            {cycles[8]}" in ran and "check: passed" in ran
