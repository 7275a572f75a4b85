"""Ray and matplotlib are npu-tune's optional weight (the `tune` extra): the
base install leaves them out, every other tool runs without them, and
npu-tune says what to install instead of failing with a traceback."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
BLOCKED = "import sys; sys.modules['ray'] = None; sys.modules['matplotlib'] = None\n"


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_ray_and_matplotlib_are_the_tune_extra_only() -> None:
    project = _project()
    base = {d.split("==")[0] for d in project["dependencies"]}
    assert not base & {"ray", "matplotlib"}
    tune = {d.split("==")[0] for d in project["optional-dependencies"]["tune"]}
    assert tune == {"ray", "matplotlib"}
    assert "npu-mlir[tune]" in project["optional-dependencies"]["test"]


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCKED + code], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def test_the_other_tools_run_without_them() -> None:
    done = _run("from npu.tools import npu_run\n"
                "raise SystemExit(npu_run.main(['examples/ffn_block.onnx', '--cores', '1']))")
    assert done.returncode == 0, done.stderr
    assert "cycles" in done.stdout


def test_npu_tune_says_what_to_install() -> None:
    done = _run("from npu.tools import npu_tune\n"
                "raise SystemExit(npu_tune.main(['examples/ffn_block.onnx']))")
    assert done.returncode == 1
    assert done.stderr.strip() == ("npu-tune: error: npu-tune's runner needs 'ray', from the "
                                   "optional 'tune' extra: pip install -e '.[tune]'")
