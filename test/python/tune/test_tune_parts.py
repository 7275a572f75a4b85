"""The tuner's parts that need no Ray: statistics, spaces, records, CLI errors."""

from __future__ import annotations

import io
import math

import pytest

from npu.target import get_target
from npu.tune import SpaceError, TuningRecord
from npu.tune.program import Program, extract_ops
from npu.tune.progress import Progress
from npu.passes.tuning_record import RecordError
from npu.tune.search import select
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
    assert (default["m"], default["k"], default["matmul-schedule"]) == (256, 256, "pipelined")
    # The pipelined schedule picks its own L0 sub-step when n is 0; an
    # explicit n is another program. The simple nest uses the model's n.
    assert default["n"] == 0
    assert canonical(task, {"n": 128}, target) != default
    assert canonical(task, {"matmul-schedule": "simple"}, target)["n"] == 128
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


INT8_MATMUL = """
func.func @mm(%a: memref<24x32x16x32xi8, "gm">, %b: memref<48x24x32x16xi8, "gm">,
              %c: memref<48x32x16x16xi32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<24x32x16x32xi8, "gm">, memref<48x24x32x16xi8, "gm">, memref<48x32x16x16xi32, "gm">) -> ()
  return
}
"""


def test_int8_candidates_count_the_reduction_in_int8_elements():
    """The cost model tiles the f16-equivalent shape (half the int8
    reduction); the simple nest's n is given to npu-lower-matmul in int8
    elements (whole 32-element blocks), and the tuner's estimate reads it
    back: the f16 matmul's estimate."""
    from npu.tune.cost_model import estimate

    target = get_target()
    (task,) = extract_ops(Program("mm.mlir", INT8_MATMUL))
    (f16,) = extract_ops(Program("mm.mlir", INT8_MATMUL.replace("x16x32xi8", "x16x16xf16")
                                 .replace("x32x16xi8", "x16x16xf16").replace("xi32", "xf32")))
    simple, simple_f16 = (canonical(t, {"matmul-schedule": "simple"}, target) for t in (task, f16))
    assert simple["n"] == 2 * simple_f16["n"] and simple["n"] % 32 == 0
    assert estimate(task, simple, target) == estimate(f16, simple_f16, target) < math.inf
    candidates, _ = op_candidates(task, None, target)
    assert all((c.options.get("n") or 0) % 32 == 0 for c in candidates)


def test_space_spec_is_checked():
    target = get_target()
    (task,) = extract_ops(Program("mm.mlir", MATMUL))
    space = space_for(task, {"ops": {"ascend.matmul": {"strategy": ["ws"]},
                                     "*": {"ub-fraction": [0.5]}}}, target)
    assert space["strategy"] == ["ws"] and "ub-fraction" not in space
    with pytest.raises(SpaceError, match="'ub-fraction' is not a tunable option of npu-lower-matmul"):
        space_for(task, {"ops": {"ascend.matmul": {"ub-fraction": [0.5]}}}, target)
    with pytest.raises(SpaceError, match="expected one of '', os, is, ws, auto, got 'diagonal'"):
        space_for(task, {"ops": {"ascend.matmul": {"strategy": ["diagonal"]}}}, target)


def test_target_parameters():
    base = get_target("ascend910")
    t = target_with(base, {"ub": "128KiB", "gm-bandwidth": 32, "mad_latency": 40})
    assert t.capacity("ub") == 128 * 1024 and t.capacity("l1") == base.capacity("l1")
    assert {t.path(p).bytes_per_cycle for p in ("gm_to_l1", "gm_to_ub", "ub_to_gm")} == {32}
    assert t.path("l1_to_l0a") == base.path("l1_to_l0a") and t.mad_latency == 40
    assert parse_quantity("1MiB") == 1 << 20 and parse_quantity("1.5") == 1.5
    with pytest.raises(SpaceError, match="npu-tune compiles one-core programs"):
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


MATMUL_256 = """
func.func @mm(%a: memref<16x16x16x16xf16, "gm">, %b: memref<16x16x16x16xf16, "gm">, %c: memref<16x16x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<16x16x16x16xf16, "gm">, memref<16x16x16x16xf16, "gm">, memref<16x16x16x16xf32, "gm">) -> ()
  return
}
"""


def _lowered_cores(pipeline: str) -> tuple[int, list[str]]:
    """(the core count npu-lower launched MATMUL_256 on, the remarks)."""
    from npu import diagnostics
    from npu.ir import block_dim, functions, make_context, parse_module
    from npu.pipeline import run_pipeline

    with diagnostics.collecting(diagnostics.DiagnosticEngine(display_name="mm.mlir")) as engine:
        module = parse_module(MATMUL_256, make_context())
        run_pipeline(module, pipeline, get_target("ascend910"))
    (func,) = functions(module.operation)
    return block_dim(func), [d.message for d in engine.diagnostics
                             if d.severity == "remark" and d.message.startswith("npu-lower:")]


def test_record_pipeline_options_apply_where_the_caller_gave_none(tmp_path):
    """A record's "pipeline" sets npu-lower's core count; an explicit cores=
    wins, with a remark that the record's value was not used."""
    from npu.pipeline import PipelineError

    path = tmp_path / "r.json"
    path.write_text(TuningRecord("ascend910", pipeline={"cores": 4}).to_json())
    assert TuningRecord.load(str(path)).pipeline == {"cores": 4}
    assert _lowered_cores("npu-lower")[0] == 16  # the default: its own split
    assert _lowered_cores(f'npu-lower{{tuning-record="{path}"}}') == (4, [])
    cores, remarks = _lowered_cores(f'npu-lower{{cores=1 tuning-record="{path}"}}')
    assert cores == 1 and remarks == ["npu-lower: cores=1 given: the tuning record's cores=4 "
                                      "is not used"]
    for pipeline, message in (({"strategy": "os"}, "'strategy' is not a pipeline option"),
                              ({"cores": -1}, "pipeline option 'cores': expected a value in"),
                              ({"fuse": "yes"}, "pipeline option 'fuse': expected a bool")):
        path.write_text(TuningRecord("ascend910", pipeline=pipeline).to_json())
        with pytest.raises(PipelineError, match=message):
            _lowered_cores(f'npu-lower{{tuning-record="{path}"}}')
    with pytest.raises(RecordError, match="pipeline option 'cores' must be a scalar"):
        TuningRecord.from_json('{"format": "npu-tune-record", "version": 1, '
                               '"pipeline": {"cores": [1, 2]}}')


def test_pipeline_space_defaults_and_spec():
    from npu.tune.whole_program import pipeline_space

    target = get_target("ascend910")
    assert pipeline_space(None, target) == {"cores": [1, 2, 4, 8, 16, 32], "fuse": [True, False]}
    assert pipeline_space({"pipeline": {"cores": ["1", "8"], "fuse-attention": ["false"]}},
                          target) == {"cores": [1, 8], "fuse-attention": [False]}
    assert pipeline_space({"pipeline": {"fuse": [True]}}, target) == {"fuse": [True], "cores": [1]}
    for spec, message in (({"cores": [64]}, "ascend910 has 1 to 32"),
                          ({"m": [64]}, "'m' is not an npu-lower pipeline option"),
                          ({"fuse": "true"}, "needs a list of values"),
                          ({"fuse": ["maybe"]}, "expected a boolean")):
        with pytest.raises(SpaceError, match=message):
            pipeline_space({"pipeline": spec}, target)


def test_pipeline_candidates_leave_out_options_that_do_not_apply():
    """npu-lower refuses an option given where it does not apply: a
    candidate leaves it at npu-lower's default (one candidate for those that
    then agree), and an option of the space that applies to no candidate is
    refused up front."""
    from npu.tune.space import enumerate_candidates
    from npu.tune.whole_program import applicable

    target = get_target("ascend910")
    space = {"cores": [1, 8], "split-cores-share": [True, False], "prefetch-chunks": [0, 2]}
    got = applicable(enumerate_candidates(space), target, per_op=False)
    assert got == [{"cores": 1, "split-cores-share": True, "prefetch-chunks": 0},
                   {"cores": 1, "split-cores-share": True, "prefetch-chunks": 2},
                   {"cores": 8, "split-cores-share": True, "prefetch-chunks": 0},
                   {"cores": 8, "split-cores-share": True, "prefetch-chunks": 2},
                   {"cores": 8, "split-cores-share": False, "prefetch-chunks": 0},
                   {"cores": 8, "split-cores-share": False, "prefetch-chunks": 2}]
    # the tiles' needs hold where per-op options may meet them (one core)
    space = {"cores": [1], "double-buffer": [False], "fuse-chains": [False]}
    assert applicable(enumerate_candidates(space), target, per_op=True) == [
        {"cores": 1, "double-buffer": False, "fuse-chains": False}]
    with pytest.raises(SpaceError, match="'fuse-chains' applies to no candidate"):
        applicable(enumerate_candidates(space), target, per_op=False)
    with pytest.raises(SpaceError, match="'split-cores-estimate' applies to no candidate "
                       r"\(npu-lower: split-cores-estimate: does not apply: no split over "
                       r"cores \(cores=1\)\)"):
        applicable(enumerate_candidates({"cores": [1], "split-cores-estimate": [False]}),
                   target, per_op=False)


def test_progress_line_has_eta_and_best():
    out = io.StringIO()
    bar = Progress(5, "t", stream=out)
    bar.update(100, "a", "exp")
    bar.update(None, "", "exp")
    bar.update(50, "b", "exp")
    bar.update(900, "c", "matmul")
    bar.update(70, "d", "exp")
    lines = out.getvalue().strip().splitlines()
    assert "4/5, 1 failed" in lines[-2] and "ETA" in lines[-2]
    assert "best of matmul 900 cycles: c" in lines[-2]  # per op: the latest result's
    assert "5/5" in lines[-1] and "best of exp 50 cycles: b" in lines[-1]


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
    with pytest.raises(SystemExit) as e:  # refused, not silently ignored
        main([str(prog), "--no-store", "--no-verify", "--param", "cores=1,8"])
    assert e.value.code == 2 and "which --no-verify skips" in capsys.readouterr().err
    onnx = tmp_path / "model.onnx"
    onnx.write_bytes(b"\0")
    assert main([str(onnx), "--no-store"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{onnx}: error: not an ONNX model") and "Traceback" not in err, err
    other = tmp_path / "model.pb"
    other.write_bytes(b"\0")
    assert main([str(other), "--no-store"]) == 1
    assert "reads an ONNX model (.onnx) or ascend-level MLIR (.mlir), not '.pb'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main([str(prog), "--no-store", "--space", str(prog)])
    assert e.value.code == 2 and "p.mlir: not JSON" in capsys.readouterr().err


@pytest.mark.slow  # 17 s; test_tune_sweeps tunes a model through the frontend by default
def test_an_onnx_model_is_tuned_through_the_frontend(tmp_path, capsys):
    """npu-tune model.onnx imports it (ONNX -> linalg -> ascend) and tunes its ops."""
    import onnx
    from onnx import TensorProto, helper

    from npu.tools.npu_tune import main

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g", [x], [y])
    path = tmp_path / "relu.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), path)
    assert main([str(path), "--no-store", "--budget", "2", "--param", "cores=1"]) == 0, \
        capsys.readouterr().err
    out = capsys.readouterr().out
    assert "ascend.maxs 4x8" in out and "numerics check passed" in out, out
    # a dynamic dimension is pinned as npu-run pins it
    for value in (g.input[0], g.output[0]):
        value.type.tensor_type.shape.dim[0].dim_param = "batch"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), path)
    assert main([str(path), "--no-store", "--budget", "1", "--no-verify"]) == 1
    assert "input 'x'" in capsys.readouterr().err
    assert main([str(path), "--no-store", "--budget", "1", "--no-verify",
                 "--input-shape", "x=2x8"]) == 0, capsys.readouterr().err
    assert "ascend.maxs 2x8" in capsys.readouterr().out


class ProgramCycles:
    """A runner that 'simulates' the whole program: 1000 cycles plus a cost
    per op choice in the record (what the ops do to each other in the real
    program is what per-op tuning cannot see)."""

    def __init__(self, effect: dict[str, int]):
        self.effect = effect
        self.records: list[set[str]] = []

    def run(self, jobs, on_outcome):
        for job in jobs:
            ops = set(TuningRecord.from_json(job.record_json).ops)
            self.records.append(ops)
            on_outcome({"key": job.key, "status": "ok", "cycles": 1000 + sum(self.effect[o] for o in ops)})


@pytest.mark.parametrize("effect, kept", [
    ({"a": -100, "b": -50}, {"a", "b"}),  # all choices together are fastest
    ({"a": -100, "b": +300}, {"a"}),  # b wins alone but loses in the program
    ({"a": +100, "b": +300}, set()),  # nothing helps: npu-lower's defaults
])
def test_verify_keeps_only_choices_that_help_the_program(effect, kept):
    from npu.passes.tuning_record import OpChoice
    from npu.tune.store import ResultStore
    from npu.tune.sweep import Sweep
    from npu.tune.whole_program import verify

    record = TuningRecord("ascend910", {s: OpChoice({"ub-fraction": 0.25}) for s in effect})
    runner = ProgramCycles(effect)
    chosen, evidence = verify(Program("p.mlir", MATMUL), record, "ascend910",
                              Sweep(runner, ResultStore(None), False, "t"))
    assert set(chosen.ops) == kept
    assert evidence["cycles_default"] == 1000
    assert evidence["cycles_tuned"] == 1000 + sum(effect[s] for s in kept) <= 1000
    assert set(evidence.get("rejected", [])) == set(effect) - kept
    assert runner.records[-1] == kept  # the record that was checked is the one kept
