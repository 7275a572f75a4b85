"""The machinery of the fuzz suite: a corpus of real programs, seeded
mutations, and an in-process harness that runs `npu-opt` / `npu-run` on one
case and says what, if anything, went wrong.

A case fails when the tool
* prints a traceback or an "internal error" (a bug, not the user's mistake),
* exits with anything but 0 or 1 (2 is for command lines, and ours are valid),
* fails without a located first error line (`file:line:col: error: ...`, or
  `file: error: ...` for whole-file problems),
* leaves a partial or unreadable output file, or writes one on failure
  (npu-opt), or
* spends more than `CPU_LIMIT` seconds of CPU on one small program (a hang).

Everything is derived from the case's seed, so a failure is reproduced by
its test id alone (`pytest test/python/fuzz -k opt-0042`) on the same checked-in files.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import re
import signal
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
CPU_LIMIT = 20.0  # seconds of CPU per case (process time, so a loaded machine does not matter)

EXTREME_INTS = (0, 1, -1, 2, 7, 15, 16, 17, 31, 32, 33, 127, 128, 255, 256, 257, 4095, 4097,
                65535, 65536, 2**24, 2**31 - 1, 2**31, 2**32, 2**63 - 1, 2**63, -(2**63), 10**30)
DTYPES = ("f16", "f32", "i8", "i32", "i16", "i64", "f64", "bf16", "i1", "index", "ui8")
SPACES = ('"gm"', '"ub"', '"l1"', '"l0a"', '"l0b"', '"l0c"', '"xyz"', '""', "1", '"GM"')
SHAPE_DIMS = (0, 1, 2, 3, 15, 16, 17, 31, 32, 33, 100, 255, 256, 257, 1000, 4096, 65536)
TOKEN = re.compile(r'"[^"\n]*"|%[\w.]+|@\w+|[A-Za-z_][\w.]*|-?\d+(?:\.\d+)?|\S')
MEMREF_SHAPE = re.compile(r"memref<((?:\d+x)*)(\w+)")


@dataclass(frozen=True)
class Program:
    name: str  # file[#chunk]
    text: str


def _chunks(path: Path, root: Path) -> list[Program]:
    rel = path.relative_to(root)
    out = []
    for i, chunk in enumerate(path.read_text().split("// -----")):
        if "func.func" in chunk:
            out.append(Program(f"{rel}#{i}", chunk.strip("\n") + "\n"))
    return out


def corpus(root: Path = ROOT) -> list[Program]:
    """Every function-bearing chunk of the examples and the lit inputs.

    Only checked-in files: lit's `Output/` folders hold `%t*.mlir` files that
    exist only after a lit run, and counting them would make a test id (which
    indexes this list) name another program depending on what ran before.
    """
    tests = (f for f in (root / "test").rglob("*.mlir")
             if "Output" not in f.relative_to(root).parts)
    files = sorted((root / "examples").glob("*.mlir")) + sorted(tests)
    return [p for f in files for p in _chunks(f, root)]


def small(program: Program, limit: int = 1 << 20) -> bool:
    """Whether the program's memrefs are small enough to simulate cheaply."""
    for dims, _ in MEMREF_SHAPE.findall(program.text):
        size = 1
        for d in dims.split("x")[:-1]:
            size *= int(d)
        if size > limit:
            return False
    return True


# ----------------------------------------------------------------------------
# Mutations: each takes the text and a seeded generator, returns new text.
# ----------------------------------------------------------------------------


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def truncate(text: str, rng: random.Random) -> str:
    return text[:rng.randrange(len(text) + 1)]


def delete_line(text: str, rng: random.Random) -> str:
    lines = _lines(text)
    if not lines:
        return text
    del lines[rng.randrange(len(lines))]
    return "".join(lines)


def duplicate_line(text: str, rng: random.Random) -> str:
    lines = _lines(text)
    if not lines:
        return text
    i = rng.randrange(len(lines))
    lines.insert(rng.randrange(len(lines) + 1), lines[i])
    return "".join(lines)


def swap_tokens(text: str, rng: random.Random) -> str:
    spans = [m.span() for m in TOKEN.finditer(text)]
    if len(spans) < 2:
        return text
    (a0, a1), (b0, b1) = sorted(rng.sample(spans, 2))
    return text[:a0] + text[b0:b1] + text[a1:b0] + text[a0:a1] + text[b1:]


def _replace_match(text: str, pattern: re.Pattern, rng: random.Random, make) -> str:
    matches = list(pattern.finditer(text))
    if not matches:
        return text
    m = rng.choice(matches)
    return text[:m.start()] + make(m) + text[m.end():]


def extreme_integer(text: str, rng: random.Random) -> str:
    return _replace_match(text, re.compile(r"(?<![\w%@.])\d+(?![\w.])"), rng,
                          lambda m: str(rng.choice(EXTREME_INTS)))


def change_dtype(text: str, rng: random.Random) -> str:
    return _replace_match(text, re.compile(r"\b(f16|f32|i8|i32|i64|f64)\b"), rng,
                          lambda m: rng.choice(DTYPES))


def change_shape(text: str, rng: random.Random) -> str:
    def new_shape(m: re.Match) -> str:
        rank = rng.choice((0, 1, 1, 2, 2, 3, 4))
        dims = "".join(f"{rng.choice(SHAPE_DIMS)}x" for _ in range(rank))
        return f"memref<{dims}{m.group(2)}"
    return _replace_match(text, MEMREF_SHAPE, rng, new_shape)


def change_space(text: str, rng: random.Random) -> str:
    def new_space(m: re.Match) -> str:
        choice = rng.choice(SPACES + (None,))
        return ">" if choice is None else f", {choice}>"
    return _replace_match(text, re.compile(r', "(gm|ub|l1|l0a|l0b|l0c)">'), rng, new_space)


def change_string(text: str, rng: random.Random) -> str:
    return _replace_match(text, re.compile(r'= "[^"\n]*"'), rng,
                          lambda m: f'= "{rng.choice(("", "x", "none", "ALL", "V", "floor", "gm"))}"')


MUTATIONS = (truncate, delete_line, duplicate_line, swap_tokens, extreme_integer, change_dtype,
             change_shape, change_space, change_string)


def mutate(program: Program, rng: random.Random, count: int) -> tuple[str, list[str]]:
    text, applied = program.text, []
    for _ in range(count):
        m = rng.choice(MUTATIONS)
        text = m(text, rng)
        applied.append(m.__name__)
    return text, applied


# ----------------------------------------------------------------------------
# Running a tool in-process
# ----------------------------------------------------------------------------


class Hang(Exception):
    pass


@dataclass
class Outcome:
    code: int
    out: str
    err: str


def _on_cpu_limit(signum, frame):
    raise Hang(f"more than {CPU_LIMIT} s of CPU")


def run_tool(main, argv: list[str], stdin: str = "") -> Outcome:
    """`main(argv)` with stdout/stderr captured and a CPU-time limit."""
    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGPROF, _on_cpu_limit)
    signal.setitimer(signal.ITIMER_PROF, CPU_LIMIT)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 1
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)
    return Outcome(code, out.getvalue(), err.getvalue())


LOCATED = re.compile(r"^(?P<file>[^\n:]+)(:\d+:\d+)?: error: ")


def problems(outcome: Outcome, display: str) -> list[str]:
    """What is wrong with a tool's behaviour on one input (empty: fine)."""
    found = []
    for needle in ("Traceback", "internal error", "internal compiler error"):
        if needle in outcome.err or needle in outcome.out:
            found.append(f"'{needle}' in the output")
    if outcome.code not in (0, 1):
        found.append(f"exit code {outcome.code}")
    if outcome.code == 1:
        first = next((line for line in outcome.err.splitlines() if ": error: " in line),
                     outcome.err.strip()[:200])
        m = LOCATED.match(first)
        if not m or m.group("file") != display:
            found.append(f"first error line is not located in '{display}': {first[:200]!r}")
    return found


def check_opt_output(code: int, out_path: Path) -> list[str]:
    """npu-opt: a file only on success, and then one that parses and verifies."""
    from npu import diagnostics
    from npu.ir import ParseError, make_context, parse_module

    if code != 0:
        return [f"'{out_path.name}' written although the run failed"] if out_path.exists() else []
    if not out_path.exists():
        return ["exit code 0 but no output file"]
    with diagnostics.collecting(diagnostics.DiagnosticEngine(display_name=str(out_path))) as engine:
        try:
            parse_module(out_path.read_text(), make_context())
        except ParseError:
            return ["the output does not parse back: "
                    + "; ".join(d.format() for d in engine)[:300]]
    return []


def check_run_outputs(code: int, npz: Path, trace: Path) -> list[str]:
    """npu-run: output files, when written, are whole."""
    found = []
    if code == 0 and not (npz.exists() and trace.exists()):
        found.append("exit code 0 but an output file is missing")
    if npz.exists():
        try:
            with np.load(npz, allow_pickle=False) as data:
                for name in data.files:
                    data[name]
        except Exception as e:  # noqa: BLE001 - any failure to read back is the finding
            found.append(f"unreadable -o file: {type(e).__name__}: {e}")
    if trace.exists():
        try:
            json.loads(trace.read_text())
        except ValueError as e:
            found.append(f"unreadable trace: {e}")
    return found


def report(name: str, seed: int, applied: list[str], text: str, outcome: Outcome,
           found: list[str]) -> str:
    return (f"fuzz case {name} (seed {seed}, mutations {applied}): {'; '.join(found)}\n"
            f"exit code {outcome.code}\n--- stderr ---\n{outcome.err[-2000:]}\n"
            f"--- program ---\n{text[:4000]}")


def write_case(tmp: Path, text: str) -> Path:
    path = tmp / "case.mlir"
    path.write_text(text)
    return path
