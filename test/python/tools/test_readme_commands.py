"""README.md's two commands and .ci/run stay in step with the repository."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from npu.passes import registry

ROOT = Path(__file__).resolve().parents[3]


def _two_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    return [next(l for l in b.splitlines() if l and not l.startswith("#")) for b in blocks]


def test_exactly_two_commands_both_starting_from_a_fresh_venv():
    commands = _two_commands()
    assert len(commands) == 2
    for c in commands:
        assert c.startswith("python3 -m venv .venv && .venv/bin/pip install -q -e ")


def test_ci_runs_the_readme_test_command_verbatim():
    test_command = _two_commands()[1]
    assert "lit -sv test/" in test_command and "pytest" in test_command
    script = (ROOT / ".ci" / "run").read_text()
    assert test_command in script.splitlines()
    assert "set -euo pipefail" in script
    assert (ROOT / ".ci" / "run").stat().st_mode & 0o111, ".ci/run must be executable"


def test_the_main_command_names_files_and_passes_that_exist():
    main = _two_commands()[0]
    words = shlex.split(main.replace("&&", " "))
    files = [w for w in words if w.endswith((".mlir", ".onnx"))]
    assert files and all((ROOT / f).is_file() for f in files), files
    pipeline = next((w for w in words if w.startswith("builtin.module(")), "")
    ours = set(re.findall(r"npu-[a-z0-9-]+", pipeline))
    assert ours <= set(registry()), ours - set(registry())
