"""Mutational fuzzing of `npu-run model.onnx --check`, in-process.

Each case takes a seed model (onnx_fuzz_lib.seeds: MLP, softmax, layernorm,
GELU with Erf, a reduction, transpose + reshape), applies one seeded mutation
of its bytes, graph, attributes, dtypes, shapes, initializers or opsets, or
of its `--inputs` file, and runs `npu-run <model> --check -o out.npz`. The
outcome must be one of
  (a) exit 1 with one first line `<model>: error: ...` (or
      `file:line:col: error: ...`), no traceback, no "internal error";
  (b) exit 2, a command-line error (`npu-run: error: ...`);
  (c) exit 0 with a check that passed against onnxruntime;
and `-o` is written only on success. Anything else (internal error,
traceback, another exit code, the CPU limit, exit 0 without a passed check,
an output left after a failure) fails. A case is reproduced by its test id.

Known bugs are in KNOWN: a case whose mutant matches one is
xfail(strict=True), so a fix turns it XPASS and the entry must go. Entries
marked NEW were found by this suite. One bug (torch-mlir's diagnostics on
stderr) has no mutant-level trigger: it is recognised by its symptom at run
time, and its own strict xfail test shows the fix. Each case runs in a
forked child (a native crash or hang is then a finding), under a CPU limit.
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

import numpy as np
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
CASES, SLOW_CASES = 300, 3000
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
# Known bugs: reason -> predicate on the mutant. Unmarked: being fixed on
# other branches; "NEW": found by this suite, reported, not fixed here.
# ----------------------------------------------------------------------------


def _proto(m: lib.Mutant) -> onnx.ModelProto | None:
    if isinstance(m.model, onnx.ModelProto):
        return m.model
    try:
        return onnx.load_from_string(m.model)
    except Exception:  # noqa: BLE001 - unparsable bytes match no known bug
        return None


def _init_mismatch(model: onnx.ModelProto | None) -> bool:
    """An initializer whose raw_data holds more or fewer bytes than its dims and type say."""
    if model is None:
        return False
    for init in model.graph.initializer:
        try:
            itemsize = onnx.helper.tensor_dtype_to_np_dtype(init.data_type).itemsize
        except Exception:  # noqa: BLE001 - no numpy type: another bug's business
            continue
        count = 1
        for d in init.dims:
            count *= d
        if init.HasField("raw_data") or not init.float_data and not init.int64_data:
            if len(init.raw_data) != count * itemsize:
                return True
    return False


def _how(m: lib.Mutant) -> str:
    return str(m.detail.get("how"))


KNOWN: dict[str, Callable[[lib.Mutant], bool]] = {
    "ONNX checker not run: a graph with no outputs reaches onnxruntime (internal error)":
        lambda m: m.kind == "remove_outputs",
    "ONNX checker not run: an unknown attribute is accepted, onnxruntime refuses it (internal "
    "error)": lambda m: m.kind == "attr_unknown" and m.detail["op"] != "LayerNormalization",
    "ONNX checker not run: two nodes writing one value reach onnxruntime (internal error)":
        lambda m: m.kind == "duplicate_node" and _topological(m.model) and _infers(m.model),
    "ONNX checker not run: opset / IR version 99 (or ReduceMean at opset 1) is compiled, "
    "onnxruntime refuses it": lambda m: m.kind == "change_opset" and _how(m) in ("opset", "ir") and (
        m.detail["value"] == 99 or m.detail["value"] == 1 and _how(m) == "opset"
        and m.seed_name == "reduce"),
    # NEW (this suite): like the unknown attribute, a mistyped one.
    "ONNX checker not run: ReduceMean axes of the wrong type reaches onnxruntime": lambda m: (
        m.kind == "attr_value" and m.detail.get("op") == "ReduceMean" and _how(m) == "type"
        and m.detail["attr"] == "axes"
        and m.detail["value"] != "[1, 2, 3]"),
    "ONNX checker not run: corrupt bytes that still parse name an unknown attribute or drop "
    "the graph outputs": lambda m: m.kind.startswith("bytes_") and m.seed_name != "reshape" and (
        _unknown_attribute(_proto(m)) or _no_outputs(_proto(m))),
    "numpy overflow warnings on stderr (f32 weights beyond the f16 range cast for the cube)":
        lambda m: m.seed_name == "mlp" and _f16_overflow(_proto(m)),
    # NEW (this suite): protobuf lets an ONNX (proto2) string hold bytes that
    # are not UTF-8; reading the name then raises in the frontend.
    "a name that is not UTF-8 (corrupt bytes): internal error UnicodeDecodeError": lambda m: (
        m.kind.startswith("bytes_") and _bad_utf8(_proto(m)) and _topological(_proto(m))),
    # NEW (this suite): LayerNormalization with its optional bias left out.
    "LayerNormalization with bias input '' (absent): segfault": lambda m: (
        m.kind == "rewire_input" and m.detail["op"] == "LayerNormalization"
        and m.detail["input"] == 2 and m.detail["to"] == ""),
    "short raw_data (and long, or empty but for a Reshape shape, or dims that disagree, or "
    "negative dims): no size check, a segfault in torch-mlir or an internal error": lambda m: (
        m.kind == "change_initializer" and (_how(m) == "long" or (
            _how(m) in ("short", "empty") and m.seed_name != "reshape") or (
            _how(m) == "dims" and _init_mismatch(_proto(m))
            and m.seed_name == "layernorm" and 0 not in _init_dims(m))
            or _how(m) == "dims" and any(d < 0 for d in _init_dims(m)))
        or m.kind.startswith("bytes_") and _init_mismatch(_proto(m))),
    "Softmax / LayerNormalization (and ReduceMean) over one row: KeyError in npu-lower":
        lambda m: m.kind == "change_batch" and _how(m) == "dim0" and m.detail["value"] == 1
        and m.seed_name in ("softmax", "layernorm", "reduce"),
    "huge dims (2^31, 2^40) are allocated (MemoryError, an internal error)":
        lambda m: m.kind == "change_batch" and _how(m) == "dim0"
        and _int(m.detail["value"]) >= 2**31 and m.seed_name != "reshape",
    "Softmax axis >= 2^32 (in magnitude) hangs in torch-mlir": lambda m: (
        m.kind == "attr_value" and m.detail.get("op") == "Softmax" and m.detail.get("attr") == "axis"
        and abs(_int(m.detail.get("value"))) >= 2**32),
    # NEW (this suite): LayerNormalization's axis >= rank passes shape
    # inference; torch-mlir then segfaults (2^62) or emits an invalid tensor.cast (2).
    "LayerNormalization axis >= rank: segfault or invalid IR in torch-mlir": lambda m: (
        m.kind == "attr_value" and m.detail.get("op") == "LayerNormalization"
        and m.detail.get("attr") == "axis" and _int(m.detail.get("value")) >= 2),
    # NEW (this suite): an initializer retyped to another numeric type is
    # imported with its old bytes: same size, onnxruntime refuses the type
    # mismatch; another size, a segfault, a torch-mlir failure or an internal
    # error (TypeError on a bfloat16 DenseElementsAttr).
    "initializer retyped to another numeric type: no type or size check (onnxruntime refuses "
    "it, torch-mlir segfaults, or an internal error)": lambda m: (
        m.kind == "change_dtype" and m.detail["where"] == "initializer"
        and m.seed_name != "reshape" and (m.detail["dtype"] in NUMERIC_NOT_FLOAT or (
            m.detail["dtype"] == _T.FLOAT8E5M2FNUZ and m.seed_name == "gelu"))),
    # NEW (this suite): elem_type 99 on a graph input or output.
    "an undefined elem_type (99) on a graph input/output: internal error 'Enum DataType has no "
    "name defined for value 99'": lambda m: (
        m.kind == "change_dtype" and m.detail["where"] != "initializer" and m.detail["dtype"] == 99),
}

_T = onnx.TensorProto
NUMERIC_NOT_FLOAT = (_T.UINT8, _T.INT8, _T.UINT16, _T.INT16, _T.INT32, _T.INT64, _T.BOOL, _T.FLOAT16,
                     _T.DOUBLE, _T.UINT32, _T.UINT64, _T.BFLOAT16)

# Known bugs recognised by their symptom, for a trigger no mutant predicate
# can name (anything torch-mlir fails to legalize). Each has a strict xfail
# regression test below, so that its fix shows.
LEAKED_DIAGNOSTICS = ("NEW (this suite): torch-mlir's own diagnostics (`loc(\"node\"): error: "
                      "...`) and its importer's UserWarnings reach stderr before npu-run's "
                      "one-line error (onnx_import sets emit_error_diagnostics)")


def _init_dims(m: lib.Mutant) -> list:
    model = _proto(m)
    return next((list(i.dims) for i in model.graph.initializer if i.name == m.detail["name"]), [])


def _int(text) -> int:
    try:
        return int(text)
    except (TypeError, ValueError):
        return -1


def leaked_diagnostics_only(outcome: fuzz_lib.Outcome, found: list[str], model: str) -> bool:
    """Exit 1, a located error line, and nothing wrong but MLIR diagnostics
    (`loc(...): error:`, or unlocated `error: ...`) before it."""
    lines = [line for line in outcome.err.splitlines() if line.strip()]
    own = [line for line in lines if not _leaked(line)]
    return (outcome.code == 1 and bool(lines) and _leaked(lines[0]) and
            bool(own) and own[0].startswith(f"{model}: error: ") and
            all(f.startswith("first stderr line is not a located error") for f in found))


MLIR_DIAGNOSTIC = ("loc(", "error: ", "note: ", "warning: ")


def _leaked(line: str) -> bool:
    """An MLIR diagnostic, or a Python warning torch-mlir's importer raises."""
    return (line.startswith(MLIR_DIAGNOSTIC) or "/torch_mlir/" in line and "Warning: " in line
            or line.strip() == "warnings.warn(")


def _bad_utf8(model: onnx.ModelProto | None) -> bool:
    """protobuf hands back a string field that is not UTF-8 as bytes."""
    if model is None:
        return False
    g = model.graph
    names = [g.name, *(v.name for v in (*g.input, *g.output, *g.value_info, *g.initializer))]
    for n in g.node:
        names += [n.name, n.op_type, n.domain, *n.input, *n.output, *(a.name for a in n.attribute)]
    return any(isinstance(name, bytes) for name in names)


def _no_outputs(model: onnx.ModelProto | None) -> bool:
    return model is not None and bool(model.graph.node) and not model.graph.output \
        and _topological(model) and _infers(model) and not _init_mismatch(model)


def _f16_overflow(model: onnx.ModelProto | None) -> bool:
    """A float initializer with a finite value beyond f16's range (or inf/NaN)."""
    if model is None or _init_mismatch(model):
        return False
    for init in model.graph.initializer:
        if init.data_type == _T.FLOAT:
            try:
                values = onnx.numpy_helper.to_array(init)
            except Exception:  # noqa: BLE001 - unreadable data: another entry's business
                continue
            with np.errstate(all="ignore"):
                if values.size and not (np.abs(values) <= 65504).all():
                    return True
    return False


def _unknown_attribute(model: onnx.ModelProto | None) -> bool:
    """A node (LayerNormalization aside: onnxruntime lets that pass) with an
    attribute its schema does not have, in a model the importer gets through."""
    if model is None or not _topological(model) or not _infers(model, strict=True) \
            or _init_mismatch(model) or not _static_outputs(model):
        return False
    for node in model.graph.node:
        if node.domain or node.op_type == "LayerNormalization":
            continue
        try:
            schema = onnx.defs.get_schema(node.op_type, lib.OPSET)
        except Exception:  # noqa: BLE001 - no such op: reported cleanly
            continue
        if any(a.name not in schema.attributes for a in node.attribute):
            return True
    return False


def _topological(model: onnx.ModelProto) -> bool:
    known = {i.name for i in model.graph.input} | {i.name for i in model.graph.initializer} | {""}
    for node in model.graph.node:
        if not set(node.input) <= known:
            return False
        known |= set(node.output)
    return True


def _static_outputs(model: onnx.ModelProto) -> bool:
    return all(v.type.tensor_type.HasField("shape") and all(
        d.HasField("dim_value") and d.dim_value > 0 for d in v.type.tensor_type.shape.dim)
        for v in list(model.graph.input) + list(model.graph.output))


def _infers(model: onnx.ModelProto, strict: bool = False) -> bool:
    try:
        onnx.shape_inference.infer_shapes(model, strict_mode=strict, data_prop=True)
    except Exception:  # noqa: BLE001 - the importer reports these cleanly
        return False
    return True


def known_reason(m: lib.Mutant) -> str | None:
    for reason, pred in KNOWN.items():
        try:
            if pred(m):
                return reason
        except Exception:  # noqa: BLE001 - a mutant too broken for a predicate: not that bug
            continue
    return None


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
    first = next((line for line in outcome.err.splitlines() if line.strip()), "")
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
    if category == "failure" and leaked_diagnostics_only(outcome, found, str(tmp_path / "model.onnx")):
        pytest.xfail(LEAKED_DIAGNOSTICS)
    assert category != "failure", describe(case, m, outcome, found)


@pytest.mark.xfail(strict=True, reason=LEAKED_DIAGNOSTICS)
def test_torch_mlir_diagnostics_stay_off_stderr(tmp_path):
    """Softmax at opset 1 does not legalize in torch-mlir: one error line only."""
    model = lib._copy(SEEDS["softmax"])
    model.opset_import[0].version = 1
    category, found, outcome = run_case(lib.Mutant("softmax", model, "change_opset"), tmp_path)
    assert category == "a", describe(-1, lib.Mutant("softmax", model), outcome, found)


@pytest.mark.parametrize("name", NAMES)
def test_seed_models_pass_their_check(name, tmp_path):
    """The corpus itself is valid: every seed compiles and matches onnxruntime."""
    category, found, outcome = run_case(lib.Mutant(name, SEEDS[name]), tmp_path)
    assert category == "c", describe(-1, lib.Mutant(name, SEEDS[name]), outcome, found)
