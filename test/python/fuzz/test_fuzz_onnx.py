"""Mutational fuzzing of `npu-run model.onnx --check`, in-process.

Each case takes a seed model (onnx_fuzz_lib.seeds: MLP, softmax, layernorm,
GELU with Erf, a reduction, transpose + reshape), applies one seeded mutation
of its bytes, graph, attributes, dtypes, shapes, initializers or opsets, or
of its `--inputs` file, and runs `npu-run <model> --check -o out.npz`. The
outcome must be one of
  (a) exit 1 with a first line `<model>: error: ...` (or
      `file:line:col: error: ...`; located warnings may precede it), no
      traceback, no "internal error";
  (b) exit 2, a command-line error (`npu-run: error: ...`);
  (c) exit 0 with a check that passed against onnxruntime;
and `-o` is written only on success. Anything else (internal error,
traceback, another exit code, the CPU limit, exit 0 without a passed check,
an output left after a failure) fails. A case is reproduced by its test id.

Known bugs would go in KNOWN (a strict xfail per matching case); it is
empty. Each case runs in a forked child (a native crash or hang is then a
finding), under a CPU limit, with the child's fd 2 captured (torch-mlir's
and onnxruntime's own output counts as what a user sees).
"""

from __future__ import annotations

import faulthandler
import json
import os
import random
import re
import resource
import signal
import sys
import warnings
from collections.abc import Callable

import onnx
import onnx.numpy_helper
import pytest

from npu.tools import npu_run

import fuzz_lib
import onnx_fuzz_lib as lib

# Forked children inherit these instead of each importing them again.
import npu.frontend.compile  # noqa: E402,F401
import onnxruntime  # noqa: E402,F401
import torch_mlir.extras.onnx_importer  # noqa: E402,F401
import torch_mlir.passmanager  # noqa: E402,F401

SEEDS = lib.seeds()
NAMES = sorted(SEEDS)
CASES, SLOW_CASES = 100, 3000
# CPU seconds per case, enforced by the kernel (RLIMIT_CPU): a seed takes
# under 1 s, and a hang must not eat the default run's budget.
CPU_LIMIT = 8
INPUTS_SHARE = 0.15  # of the cases mutate the --inputs file instead of the model


def make_mutant(i: int) -> lib.Mutant:
    rng = random.Random(f"npu-run-onnx-{i}")
    name = rng.choice(NAMES)
    if rng.random() < INPUTS_SHARE:
        return lib.mutate_inputs(name, SEEDS[name], rng)
    return lib.mutate_model(name, SEEDS[name], rng, [SEEDS[n] for n in NAMES])


# ----------------------------------------------------------------------------
# Known bugs: reason -> predicate on the mutant. A case whose mutant matches
# one is xfail(strict=True), so its fix turns it XPASS and the entry must go.
# Every bug this suite has found is fixed (listed in issue 31's closing
# note), so the table is empty; a new finding that cannot be fixed at once
# goes here with a precise predicate.
# ----------------------------------------------------------------------------

KNOWN: dict[str, Callable[[lib.Mutant], bool]] = {}


def known_reason(m: lib.Mutant) -> str | None:
    return next((reason for reason, pred in KNOWN.items() if pred(m)), None)


def _params(n: int, slow_from: int) -> list:
    out = []
    for i in range(n):
        marks = [pytest.mark.slow] if i >= slow_from else []
        reason = known_reason(make_mutant(i))
        if reason:
            marks.append(pytest.mark.xfail(strict=True, reason=reason))
        out.append(pytest.param(i, id=f"onnx-{i:04d}", marks=marks))
    return out


# ----------------------------------------------------------------------------
# Classification
# ----------------------------------------------------------------------------


def classify(outcome: fuzz_lib.Outcome, model: str, out_exists: bool) -> tuple[str, list[str]]:
    """(category a/b/c or 'failure', what is wrong)."""
    found = []
    text = outcome.err + outcome.out
    if "s of CPU" in text:
        found.append(f"hang: {fuzz_lib.CPU_LIMIT} s CPU limit exceeded")
    for needle in ("Traceback", "internal error", "internal compiler error"):
        if needle in text:
            found.append(f"'{needle}' in the output")
    # Located warnings (an f16 overflow of a weight, say) may come first.
    warning = re.compile(rf"^({re.escape(model)}|[^\s:]+:\d+:\d+)(:\d+:\d+)?: warning: ")
    first = next((line for line in outcome.err.splitlines()
                  if line.strip() and not warning.match(line)), "")
    category = "failure"
    if outcome.code == 1:
        located = re.match(rf"^{re.escape(model)}(:\d+:\d+)?: error: ", first) or \
            re.match(r"^[^\s:]+:\d+:\d+: error: ", first)
        if not located:
            found.append(f"first stderr line is not a located error: {first[:200]!r}")
        category = "a"
    elif outcome.code == 2:
        if not first.startswith("npu-run: error: "):
            found.append(f"exit 2 without 'npu-run: error:': {first[:200]!r}")
        category = "b"
    elif outcome.code == 0:
        if "check: passed" not in outcome.out:
            found.append("exit 0 without a passed check")
        if not out_exists:
            found.append("exit 0 but no -o file")
        category = "c"
    else:
        found.append(f"exit code {outcome.code}")
    if outcome.code != 0 and out_exists:
        found.append("-o file written although the run failed")
    return ("failure" if found else category), found


def _print_warning(message, category, filename, lineno, file=None, line=None) -> None:
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


_warm: list = []


def _warm_up(tmp_path) -> None:
    """Run one seed in this process once, so that every forked child starts
    with the frontend, the passes and the simulator loaded (0.4 -> 0.1 s a case)."""
    if not _warm:
        _warm.append(True)
        model = tmp_path / "warm.onnx"
        model.write_bytes(SEEDS["mlp"].SerializeToString())
        fuzz_lib.run_tool(npu_run.main, [str(model), "--check"])


def run_case(m: lib.Mutant, tmp_path) -> tuple[str, list[str], fuzz_lib.Outcome]:
    """Run one case in a forked child: a crash in a native library (torch-mlir,
    onnxruntime) is then a finding, not the end of the test session. The
    child's fd 2 is captured too: native code writes diagnostics there,
    around sys.stderr, and a user sees them first."""
    _warm_up(tmp_path)
    model = tmp_path / "model.onnx"
    model.write_bytes(m.model_bytes())
    out = tmp_path / "out.npz"
    argv = [str(model), "--check", "-o", str(out)]
    if m.inputs is not None:
        inputs = tmp_path / f"in{m.inputs_suffix}"
        inputs.write_bytes(m.inputs)
        argv += ["--inputs", str(inputs)]
    result = tmp_path / "outcome.json"
    native = tmp_path / "fd2.txt"
    pid = os.fork()
    if pid == 0:  # the child: run, write the outcome, leave without cleanup
        code = 70
        try:
            # The kernel's backstop: a hang inside native code (torch-mlir)
            # never returns to Python, where run_tool's CPU timer would fire.
            faulthandler.disable()  # pytest's: a crash here is a finding, not noise
            # Warnings as a user sees them (pytest records them instead).
            warnings.resetwarnings()
            warnings.showwarning = _print_warning
            resource.setrlimit(resource.RLIMIT_CPU, (CPU_LIMIT, CPU_LIMIT))
            fuzz_lib.CPU_LIMIT = CPU_LIMIT - 1.0  # Python-level hangs: run_tool's timer first
            fd = os.open(native, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(fd, 2)
            o = fuzz_lib.run_tool(npu_run.main, argv)
            result.write_text(json.dumps([o.code, o.out, o.err]))
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if not result.exists():
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        outcome = fuzz_lib.Outcome(-1, "", native.read_text(errors="replace"))
        if sig in (signal.SIGXCPU, signal.SIGKILL):
            return "failure", [f"hang: over {CPU_LIMIT} s of CPU"], outcome
        return "failure", [f"the process crashed (signal {sig}, status {status})"], outcome
    code, stdout, stderr = json.loads(result.read_text())
    outcome = fuzz_lib.Outcome(code, stdout, native.read_text(errors="replace") + stderr)
    category, found = classify(outcome, str(model), out.exists())
    return category, found, outcome


def describe(i: int, m: lib.Mutant, outcome, found) -> str:
    graph = m.model.graph if isinstance(m.model, onnx.ModelProto) else None
    nodes = [f"{n.op_type}({', '.join(n.input)})->{', '.join(n.output)}" for n in graph.node] \
        if graph is not None else "(bytes)"
    return (f"fuzz case onnx-{i:04d}: seed {m.seed_name}, mutation {m.kind} {m.detail}: "
            f"{'; '.join(found)}\nexit code {outcome.code}\nnodes: {nodes}\n"
            f"--- stderr ---\n{outcome.err[-2000:]}\n--- stdout ---\n{outcome.out[-600:]}")


@pytest.mark.parametrize("case", _params(SLOW_CASES, CASES))
def test_fuzz_onnx(case, tmp_path):
    m = make_mutant(case)
    category, found, outcome = run_case(m, tmp_path)
    assert category != "failure", describe(case, m, outcome, found)


def test_torch_mlir_diagnostics_stay_off_stderr(tmp_path):
    """LayerNormalization with stash_type=0 does not legalize in torch-mlir:
    one error line only. (Softmax at opset 1, used here before, is converted
    to opset 13 by the import now, and compiles.)"""
    model = lib._copy(SEEDS["layernorm"])
    model.graph.node[0].attribute.append(onnx.helper.make_attribute("stash_type", 0))
    category, found, outcome = run_case(lib.Mutant("layernorm", model, "set_attribute"), tmp_path)
    assert category == "a", describe(-1, lib.Mutant("layernorm", model), outcome, found)


@pytest.mark.parametrize("name", NAMES)
def test_seed_models_pass_their_check(name, tmp_path):
    """The corpus itself is valid: every seed compiles and matches onnxruntime."""
    category, found, outcome = run_case(lib.Mutant(name, SEEDS[name]), tmp_path)
    assert category == "c", describe(-1, lib.Mutant(name, SEEDS[name]), outcome, found)
