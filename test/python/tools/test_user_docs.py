"""The user documentation works as written: the README is a front page whose
links resolve, the Python API example runs, the tutorial's program passes `npu-run --check` and its commands use
options that exist, and no user document points at internal issue numbers."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from npu.tools import npu_opt, npu_run

ROOT = Path(__file__).resolve().parents[3]
USER_DOCS = [ROOT / "README.md", ROOT / "dialects" / "README.md", ROOT / "simulator" / "README.md",
             *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "examples").glob("*.mlir"))]


def _blocks(path: Path, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", path.read_text(), re.S)


def test_python_api_example_runs(capsys):
    (code,) = _blocks(ROOT / "docs" / "python-api.md", "python")
    for name in ("npu.pipeline", "npu.simulator", "npu.reference", "simulate(", "run_pipeline(",
                 "evaluate("):
        assert name in code
    exec(compile(code, "docs/python-api.md", "exec"), {})
    cycles, bound, utilization = capsys.readouterr().out.split()
    assert int(cycles) >= int(bound) > 0 and 0 < float(utilization) <= 1


def test_tutorial_program_compiles_runs_and_checks(tmp_path, capsys):
    tutorial = ROOT / "docs" / "tutorial.md"
    (program,) = _blocks(tutorial, "mlir")
    src = tmp_path / "scaled_add.mlir"
    src.write_text(program)
    page, csv_dir, trace = tmp_path / "run.html", tmp_path / "prof", tmp_path / "trace.json"
    assert npu_run.main([str(src), "--check", "--trace", str(trace), "--html", str(page),
                         "--csv", str(csv_dir)]) == 0
    out = capsys.readouterr().out
    assert "check: passed" in out and "hotspot" in out
    assert trace.exists() and page.exists() and (csv_dir / "PipeUtilization.csv").exists()
    # The report quoted in the tutorial is the one this program produces.
    quoted = re.search(r"cycles\s+(\d+)\nlower bound\s+(\d+)", tutorial.read_text())
    got = re.search(r"cycles\s+(\d+)\nlower bound\s+(\d+)", out)
    assert quoted.group(2) == got.group(2)  # the bound is the program's own traffic


def test_tutorial_commands_use_existing_options():
    tutorial = ROOT / "docs" / "tutorial.md"
    run_flags = {a for action in npu_run.make_parser()._actions for a in action.option_strings}
    opt_flags = {a for action in npu_opt.make_parser()._actions for a in action.option_strings}
    commands = [line for block in _blocks(tutorial, "sh") for line in block.splitlines() if line]
    assert commands
    for command in commands:
        words = shlex.split(command)
        tool = Path(words[0]).name
        flags = {w.split("=", 1)[0] for w in words[1:] if w.startswith("-")}
        if tool == "npu-run":
            assert flags <= run_flags, flags - run_flags
        else:
            assert tool == "npu-opt"
            from npu.passes import registry
            assert flags <= opt_flags | {f"--{name}" for name in registry()}


@pytest.mark.parametrize("path", USER_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_user_docs_have_no_internal_issue_references(path):
    assert not re.search(r"\(issues? \d+\)|\bissue \d+\b", path.read_text(), re.I)


def test_readme_is_a_front_page_whose_links_resolve():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    links = re.findall(r"\]\(([^)#]+)\)", readme)
    assert links and all((ROOT / link).exists() for link in links if "://" not in link), links
    for page in sorted((ROOT / "docs").glob("*.md")):  # every page is reachable from the front
        assert f"docs/{page.name}" in readme, page.name
