"""`npu-run model.onnx --check` against onnxruntime when onnxruntime itself
stumbles: a model it cannot run is one located error (it was an internal
error), an absent optional input it would crash on is dropped for both the
compiler and the reference (onnxruntime segfaulted on LayerNormalization
with its bias written as ''), and torch-mlir's own diagnostics stay off
stderr (one line names the node)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
from onnx import helper

from npu.tools import npu_run
from onnx_models import model


def _layernorm_without_bias() -> onnx.ModelProto:
    scale = np.linspace(0.5, 1.5, 32, dtype=np.float32)
    return model([helper.make_node("LayerNormalization", ["x", "s", ""], ["y"], name="ln", axis=-1)],
                 [("x", [4, 32])], [("y", [4, 32])], [("s", scale)])


def test_absent_trailing_input_runs_in_both(tmp_path):
    path = tmp_path / "ln.onnx"
    onnx.save(_layernorm_without_bias(), path)
    # A subprocess: the bug was a segfault inside onnxruntime.
    run = subprocess.run([sys.executable, "-m", "npu.tools.npu_run", str(path), "--check"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "check: passed" in run.stdout
    assert "onnxruntime" not in run.stderr  # its own warnings are not printed


def test_model_onnxruntime_cannot_run_is_a_located_error(tmp_path, capsys):
    # Sub at opset 1: the importer compiles it, onnxruntime has no kernel for it.
    m = model([helper.make_node("Sub", ["a", "b"], ["y"], name="center")],
              [("a", [4, 16]), ("b", [4, 16])], [("y", [4, 16])], opset=1)
    path = tmp_path / "old.onnx"
    onnx.save(m, path)
    assert npu_run.main([str(path), "--check"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"{path}: error: --check: onnxruntime cannot run")
    assert "internal error" not in err[0]


def test_torch_mlir_diagnostics_are_one_line(tmp_path, capsys):
    # LayerNormalization with stash_type=0 (statistics in the input's type):
    # torch-mlir leaves it unlowered. (This test used Softmax at opset 1,
    # which the import now converts to opset 13, where it compiles.)
    m = model([helper.make_node("LayerNormalization", ["x", "s"], ["y"], name="ln", stash_type=0)],
              [("x", [4, 16])], [("y", [4, 16])], [("s", np.ones(16, np.float32))])
    path = tmp_path / "ln.onnx"
    onnx.save(m, path)
    assert npu_run.main([str(path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"{path}: error: node 'ln' (LayerNormalization): "
                                               "cannot lower")
