"""A non-editable install has the whole package: the wheel built from the
source folders holds every module of them and the dialect definitions
(dialects/*.mlir), and every module imports from the unpacked wheel alone
(not from the source tree the editable install points at)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
# package -> source folder, as the README's layout table has it
ROOTS = {"npu": "python/npu", "npu.dialects": "dialects", "npu.passes": "passes",
         "npu.simulator": "simulator", "npu.tools": "tools"}

BUILD_INPUTS = ("pyproject.toml", "setup.py", "README.md")


def _source_files() -> set[str]:
    """The files the wheel must hold, as paths inside it (npu/passes/lower.py)."""
    expected = set()
    for package, folder in ROOTS.items():
        root = ROOT / folder
        prefix = Path(*package.split("."))
        for path in root.rglob("*.py"):
            if "__pycache__" not in path.parts:
                expected.add((prefix / path.relative_to(root)).as_posix())
    expected |= {f"npu/dialects/{p.name}" for p in (ROOT / "dialects").glob("*.mlir")}
    return expected


def _build_wheel(tmp_path: Path) -> Path:
    """The wheel of a copy of the source (the build leaves build/ and
    *.egg-info in the folder it runs in)."""
    src = tmp_path / "src"
    src.mkdir()
    for name in BUILD_INPUTS:
        shutil.copy(ROOT / name, src / name)
    for folder in {f.split("/")[0] for f in ROOTS.values()}:
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(src)],
                   check=True, capture_output=True, text=True)
    (wheel,) = out.glob("npu_mlir-*.whl")
    return wheel


def test_wheel_holds_and_imports_every_module(tmp_path):
    wheel = _build_wheel(tmp_path)
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = _source_files() - names
    assert not missing, f"not in the wheel: {sorted(missing)}"

    unpacked = tmp_path / "unpacked"
    zipfile.ZipFile(wheel).extractall(unpacked)
    modules = sorted(n[:-3].replace("/", ".").removesuffix(".__init__")
                     for n in names if n.endswith(".py"))
    # Run from an empty folder with the unpacked wheel first on sys.path: the
    # editable install's finder comes after the path finder, so it is not asked.
    check = textwrap.dedent(f"""
        import importlib, json, sys
        sys.path.insert(0, {str(unpacked)!r})
        for name in {modules!r}:
            importlib.import_module(name)
        print(json.dumps({{n: getattr(m, "__file__", None) for n, m in sys.modules.items()
                          if n == "npu" or n.startswith("npu.")}}))
    """)
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    result = subprocess.run([sys.executable, "-c", check], cwd=cwd, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    files = json.loads(result.stdout.splitlines()[-1])
    assert set(modules) <= set(files)
    outside = {n: f for n, f in files.items() if f is None or not f.startswith(str(unpacked))}
    assert not outside, f"imported from outside the wheel: {outside}"
