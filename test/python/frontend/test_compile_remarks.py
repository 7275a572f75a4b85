"""The remarks a user asks for through npu-lower's options reach the caller
of `npu.compile` (and npu-run's stderr); the ones no option asked for (each
lowering's tiling remarks) stay quiet. Before, npu.compile passed on only
`npu-lower:` and `npu-split-cores:` remarks: `prefetch-remarks=true`,
`fuse-remarks=true`, ... were options silently ignored."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from helpers import compile_remarks


def _model():
    """x -> Relu -> MatMul by a constant -> Add: a fusable row op, a
    matmul whose weights npu-prefetch considers, UB buffers to plan."""
    from onnx import TensorProto, helper, numpy_helper

    w = np.random.default_rng(0).uniform(-1, 1, (64, 64)).astype(np.float32)
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("MatMul", ["r", "w"], ["m"], name="mm"),
             helper.make_node("Add", ["m", "x"], ["y"], name="add")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [32, 64])],
                              [numpy_helper.from_array(w, "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), w


def _compile(options: str):
    model, w = _model()
    kernel, remarks = compile_remarks(model, cores=1, pipeline=f"npu-lower{{{options}}}")
    return kernel, w, remarks


# (option, a phrase of the remarks it asks for)
ASKED = [("fuse-remarks=true", "left unfused"),
         ("prefetch-remarks=true", "prefetch"),
         ("plan-memory-remarks=true", "ub: allocated")]


def test_unasked_remarks_stay_quiet():
    kernel, w, remarks = _compile("")
    assert remarks == []
    x = np.random.default_rng(1).uniform(-1, 1, (32, 64)).astype(np.float32)
    (y,), _ = kernel(x)
    np.testing.assert_allclose(y, np.maximum(x, 0) @ w + x, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("option,phrase", ASKED)
def test_asked_remarks_reach_the_caller(option, phrase):
    _, _, remarks = _compile(option)
    assert any(phrase in m for m in remarks), remarks


def test_npu_run_prints_asked_remarks(tmp_path):
    """npu-run on an ascend program: the asked remarks on stderr, none unasked."""
    src = tmp_path / "add.mlir"
    t = 'memref<64x64xf16, "gm">'
    src.write_text(f'func.func @f(%a: {t}, %b: {t}, %c: {t}) {{\n'
                   f'  "ascend.add"(%a, %b, %c) : ({t}, {t}, {t}) -> ()\n  return\n}}\n')
    tool = [sys.executable, "-m", "npu.tools.npu_run", str(src)]
    quiet = subprocess.run(tool, capture_output=True, text=True, check=True)
    asked = subprocess.run(tool + ["--pipeline", "npu-lower{plan-memory-remarks=true fuse-remarks=true}"],
                           capture_output=True, text=True, check=True)
    assert "remark" not in quiet.stderr
    assert "remark: ub: allocated" in asked.stderr and "left unfused" in asked.stderr


def test_npu_run_prints_the_compiles_warnings(tmp_path):
    """npu-run on an ascend program printed its compile's warnings only when
    the parse failed: a tuning record made for another target was used
    without a word. Now on stderr, as npu-opt and npu-run on a model say them."""
    from npu.passes.tuning_record import TuningRecord

    src = tmp_path / "add.mlir"
    t = 'memref<64x64xf16, "gm">'
    src.write_text(f'func.func @f(%a: {t}, %b: {t}, %c: {t}) {{\n'
                   f'  "ascend.add"(%a, %b, %c) : ({t}, {t}, {t}) -> ()\n  return\n}}\n')
    record = tmp_path / "record.json"
    record.write_text(TuningRecord("another-chip", {}, {}).to_json())
    tool = [sys.executable, "-m", "npu.tools.npu_run", str(src)]
    run = subprocess.run(tool + ["--tuning-record", str(record)], capture_output=True, text=True,
                         check=True)
    assert (f"warning: npu-lower: tuning record '{record}' was made for target 'another-chip'"
            in run.stderr), run.stderr
    assert "warning" not in subprocess.run(tool, capture_output=True, text=True, check=True).stderr


def test_prefetch_remarks_name_the_onnx_node():
    """npu-prefetch names the op whose idle MTE2 time it used by its ONNX
    node, as the other remarks do; a node name with a '/' (every exporter's)
    was said as the MLIR line of the frontend's location ('line 1')."""
    from onnx import helper

    from onnx_models import model

    rng = np.random.default_rng(0)
    w1, w2 = (rng.standard_normal((32, 32, 3, 3)).astype(np.float16) / 24 for _ in range(2))
    conv = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    m = model([helper.make_node("Conv", ["x", "w1"], ["h"], name="/layer1/conv1/Conv", **conv),
               helper.make_node("Relu", ["h"], ["r"], name="/layer1/relu/Relu"),
               helper.make_node("Conv", ["r", "w2"], ["y"], name="/layer1/conv2/Conv", **conv)],
              [("x", [1, 32, 16, 16], 10)], [("y", [1, 32, 16, 16], 10)], [("w1", w1), ("w2", w2)])
    _, remarks = compile_remarks(m, cores=1, pipeline="npu-lower{prefetch-remarks=true}")
    said = [r for r in remarks if r.startswith("node '/layer1/conv2/Conv' (Conv): npu-prefetch:")]
    assert len(said) == 1 and "'/layer1/conv1/Conv'" in said[0], remarks
    assert not any("'line " in r for r in remarks), remarks
