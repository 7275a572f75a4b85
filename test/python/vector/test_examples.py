"""The issue-5 examples compile through the default pipeline (`npu-lower`)
and pass `npu-run --check` (simulated strictly, compared with the numpy
reference of the ascend program)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from npu.passes import registry

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
EXAMPLES = ["elementwise_add_1m.mlir", "exp_1m.mlir", "bert_transpose.mlir"]


@pytest.mark.skipif("npu-lower" not in registry(), reason="npu-lower is not registered yet")
@pytest.mark.parametrize("name", EXAMPLES)
def test_example_checks(name):
    npu_run = os.path.join(os.path.dirname(sys.executable), "npu-run")
    proc = subprocess.run([npu_run, os.path.join(ROOT, "examples", name), "--check"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "check: passed" in proc.stdout
    assert "hazards: none" in proc.stdout
