"""Every script in bench/ runs: each one's smallest configuration, as a user
would run it (`.venv/bin/python bench/<script> ...`), exits 0 and prints its
table. The quick ones run by default; the rest, which build BERT-sized
models or sweep, run with --runslow."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

# script -> (arguments of its smallest configuration, seconds it takes: > 5 is slow)
SMALLEST: dict[str, tuple[list[str], bool]] = {
    "attention_masks.py": (["--seq", "32", "--heads", "2"], False),
    "attention_softmax.py": (["--seq", "100", "--sigma", "1.0", "--cycles", "128"], True),
    "bert_layer.py": (["--seq", "32", "--hidden", "64", "--heads", "2", "--ffn", "128"], False),
    "chip.py": (["--cores", "1,2", "--rows", "ffn"], False),
    "chip_bound.py": (["--seqs", "128", "--layers", "1"], False),
    "chip_phases.py": (["--seq", "32", "--cores", "2"], True),
    "cliffs.py": (["--no-bert"], True),
    "cnn.py": (["--size", "32", "--width", "0.125", "--models", "resnet18", "--no-310"], True),
    "cnn_breakdown.py": (["--model", "resnet18", "--size", "32", "--width", "0.125"], True),
    "cnn_pipes.py": (["--model", "resnet18", "--size", "32", "--width", "0.125", "--bytes"], True),
    "compile_time.py": (["--sizes", "1", "--bert", ""], True),
    "conformance.py": ([], True),
    "conv_chains.py": (["--models", "resnet50", "--size", "32", "--width", "0.125"], True),
    "conv.py": (["--layers", "3x3 256->256 14"], True),
    "embedding.py": (["--cores", "1"], False),
    "exports.py": (["--models", "distilbert"], True),
    "fidelity.py": ([], True),
    "fractalize.py": (["--shape", "64x64"], False),
    "frontend_ops.py": ([], True),
    "fusion.py": (["--seq", "32", "--hidden", "64", "--heads", "2", "--ffn", "128", "--mlp-width",
                   "64", "--attention-seq", "128", "--skip-bert", "--long-rows", "4096"], True),
    "fusion_estimates.py": (["--seq", "32", "--hidden", "64", "--heads", "2", "--ffn", "128"], True),
    "gelu_f16_fit.py": (["--no-search"], True),
    "gelu_log_phi_fit.py": ([], True),
    "gelu_sigmoid_form.py": ([], True),
    "gm_plan.py": (["--no-sim"], False),
    "hivm.py": (["--repeat", "1", "--no-simulate"], False),
    "int8.py": (["--shapes", "64x64x64", "--targets", "ascend910", "--cores", "1", "--models",
                 "none"], False),
    "ir_digest.py": (["--write", "{tmp}/digests.json", "--only", "examples"], True),
    "matmul.py": (["--shapes", "64x64x64"], False),
    "matmul_tiling_sweep.py": (["--shapes", "128x128x128", "--ms", "64", "--ks", "64"], True),
    "multicore.py": (["--cores", "1,2", "--rows", "bert_t"], True),
    "op_timeline.py": (["--seq", "32"], True),
    "overlap.py": (["--cases", "adds"], True),
    "pipeline.py": (["--cases", "add", "--configs", "barrier"], True),
    "pool.py": (["--quick"], False),
    "sim_throughput.py": (["--iterations", "10", "--matmul-size", "128"], False),
    "spellings.py": (["--seqs", "32", "--hidden", "64", "--heads", "2", "--ffn", "128",
                      "--no-before"], True),
    "turnaround.py": (["--layers", "1", "--seq", "32", "--cores", "1"], True),
    "tune.py": (["--budget", "2", "--skip", "workers,design"], True),
    "vector.py": (["--only", "exp"], True),
    "vector_recipes.py": ([], True),
}


def test_every_script_has_a_smallest_configuration() -> None:
    assert set(SMALLEST) == {p.name for p in (ROOT / "bench").glob("*.py")}


@pytest.mark.parametrize("script", [
    pytest.param(name, marks=pytest.mark.slow) if slow else name
    for name, (_, slow) in sorted(SMALLEST.items())])
def test_script_runs(script: str, tmp_path) -> None:
    args = [a.replace("{tmp}", str(tmp_path)) for a in SMALLEST[script][0]]
    done = subprocess.run([sys.executable, str(ROOT / "bench" / script), *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip(), "no table printed"
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_chip_phases_cnn_floors(tmp_path) -> None:
    """chip_phases.py's CNN mode: one row per phase (barriers + 1), each
    phase's floor at most its span, and a total that adds up."""
    args = ["--model", "resnet18", "--size", "64", "--width", "16", "--cores", "8",
            "--pipeline-options", "split-cores-estimate=false"]
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "chip_phases.py"), *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    barriers = int(lines[0].split(", ")[1].split()[0])
    rows = [line.split() for line in lines[2:-1]]
    assert len(rows) == barriers + 1 and barriers > 0
    assert all(float(r[9]) <= int(r[2]) for r in rows)  # floor <= cycles
    assert sum(int(r[2]) for r in rows) == int(lines[0].split(": ")[1].split()[0].replace(",", ""))


@pytest.mark.slow  # a BERT-base layer at seq 32 compiled and simulated on 2 cores
def test_chip_phases_detail(tmp_path) -> None:
    """chip_phases.py --detail K: one line per core under phase K's row, the
    next phase's row after them."""
    args = ["--seq", "32", "--cores", "2", "--detail", "0"]
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "chip_phases.py"), *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    at = next(k for k, line in enumerate(lines) if line.split()[:1] == ["0"])
    cores = lines[at + 1:at + 3]
    assert [line.split()[:2] for line in cores] == [["core", "0:"], ["core", "1:"]]
    assert lines[at + 3].split()[0] == "1", "the next phase's row follows the cores"
