"""Mutational fuzzing of npu-opt and npu-run, in-process.

Each case takes a program from the examples or the lit inputs, applies one to
three seeded mutations (truncation, deleted or duplicated lines, swapped
tokens, extreme integers, other dtypes, shapes and memory spaces, other
attribute strings) and runs a tool on it; `fuzz_lib.problems` says what
counts as a failure. The default run has a few hundred cases; `--runslow`
runs thousands.
"""

from __future__ import annotations

import random

import pytest

from npu.tools import npu_opt, npu_run

import fuzz_lib

CORPUS = fuzz_lib.corpus()
SMALL = [p for p in CORPUS if fuzz_lib.small(p, 1 << 16)]

OPT_CASES, OPT_SLOW = 200, 3000
RUN_CASES, RUN_SLOW = 80, 1000

OPT_PIPELINES = ("npu-lower", "", "npu-lower{double-buffer=false sync=barrier},canonicalize,cse",
                 "npu-plan-memory,npu-insert-sync", "npu-lower-elementwise,npu-lower-reduce")


def _ids(prefix: str, n: int, slow_from: int) -> list:
    return [pytest.param(i, id=f"{prefix}-{i:04d}",
                         marks=(pytest.mark.slow,) if i >= slow_from else ())
            for i in range(n)]


@pytest.mark.parametrize("seed", _ids("opt", OPT_SLOW, OPT_CASES))
def test_fuzz_npu_opt(seed, tmp_path):
    rng = random.Random(f"npu-opt-{seed}")
    program = rng.choice(CORPUS)
    text, applied = fuzz_lib.mutate(program, rng, rng.randint(1, 3))
    pipeline = rng.choice(OPT_PIPELINES)
    path = fuzz_lib.write_case(tmp_path, text)
    out = tmp_path / "out.mlir"
    argv = [str(path), "-o", str(out)]
    if pipeline:
        argv += ["-p", pipeline]
    if "// -----" in text:
        argv.append("--split-input-file")
    outcome = fuzz_lib.run_tool(npu_opt.main, argv)
    found = fuzz_lib.problems(outcome, str(path)) + fuzz_lib.check_opt_output(outcome.code, out)
    assert not found, fuzz_lib.report(f"{program.name} | npu-opt {' '.join(argv[1:])}", seed,
                                      applied, text, outcome, found)


@pytest.mark.parametrize("seed", _ids("run", RUN_SLOW, RUN_CASES))
def test_fuzz_npu_run(seed, tmp_path):
    rng = random.Random(f"npu-run-{seed}")
    program = rng.choice(SMALL)
    text, applied = fuzz_lib.mutate(program, rng, rng.randint(1, 2))
    path = fuzz_lib.write_case(tmp_path, text)
    npz, trace = tmp_path / "out.npz", tmp_path / "trace.json"
    argv = [str(path), "--seed", str(seed), "-o", str(npz), "--trace", str(trace)]
    if "ascend." in text:
        argv.append("--check")
    outcome = fuzz_lib.run_tool(npu_run.main, argv)
    found = fuzz_lib.problems(outcome, str(path)) + fuzz_lib.check_run_outputs(outcome.code, npz, trace)
    assert not found, fuzz_lib.report(f"{program.name} | npu-run {' '.join(argv[1:])}", seed,
                                      applied, text, outcome, found)
