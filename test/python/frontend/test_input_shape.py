"""Pinning dynamic input dims: `npu-run --input-shape NAME=DIMS` and
`npu.compile(model, input_shapes=...)`; the dynamic-shape error shows the
option; a name or shape that does not fit the model is a usage error (exit 2,
one line); the option is refused where it does not apply."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper

import npu
from npu.frontend.compile import UsageError
from npu.frontend.onnx_shapes import InputShapeError, parse_input_shape
from npu.tools import npu_run
from onnx_models import IR_VERSION, OPSET


def dynamic_model() -> onnx.ModelProto:
    """(x + m) -> Relu, both inputs [batch, seq, 8]; the output's dims symbolic too."""
    def info(name):
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", "seq", 8])

    g = helper.make_graph([helper.make_node("Add", ["x", "m"], ["s"], name="add"),
                           helper.make_node("Relu", ["s"], ["y"], name="relu")],
                          "g", [info("x"), info("m")], [info("y")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)


@pytest.fixture
def path(tmp_path):
    p = tmp_path / "dyn.onnx"
    onnx.save(dynamic_model(), p)
    return p


def run(capsys, *args) -> tuple[int, list[str], str]:
    try:
        code = npu_run.main([str(a) for a in args])
    except SystemExit as e:  # argparse's usage errors
        code = e.code
    out = capsys.readouterr()
    return code, out.err.strip().splitlines(), out.out


@pytest.mark.parametrize("text, want", [
    ("x=1x128", {"x": (1, 128)}), ("x=2X3", {"x": (2, 3)}), ("x=", {"x": ()}),
    ("input_ids=1x16,attention_mask=1x16", {"input_ids": (1, 16), "attention_mask": (1, 16)}),
    ("a=1x2;b=3", {"a": (1, 2), "b": (3,)}), ("a.b:0=4", {"a.b:0": (4,)})])
def test_parse(text, want):
    assert parse_input_shape(text) == want


@pytest.mark.parametrize("text", ["x", "x=1xa", "=1x2", "x=0x4", "x=1x2,x=1x3", ","])
def test_parse_refuses(text):
    with pytest.raises(InputShapeError):
        parse_input_shape(text)


def test_without_the_option_the_error_names_the_dims_and_the_option(path, capsys):
    code, err, _ = run(capsys, path)
    assert code == 1 and len(err) == 1
    assert "input 'x': dynamic or unknown shape [batch, seq, 8]" in err[0]
    assert "dynamic dims batch, seq" in err[0]
    assert "--input-shape x=<batch>x<seq>x8" in err[0]


def test_pinned_model_runs_and_matches_onnxruntime(path, capsys):
    code, err, out = run(capsys, path, "--input-shape", "x=2x16x8", "--check")
    assert code == 0, err
    assert "check: passed" in out  # m took batch and seq from x


def test_each_input_given(path, capsys):
    code, err, out = run(capsys, path, "--input-shape", "x=2x16x8", "--input-shape", "m=2x16x8",
                         "--check")
    assert code == 0 and "check: passed" in out, err


@pytest.mark.parametrize("option, fragment", [
    ("q=2x16x8", "the model has no input 'q' (its inputs: x, m)"),
    ("x=2x16", "input 'x' has rank 3 [batch, seq, 8], not 2"),
    ("x=2x16x9", "dimension 2 of input 'x' is 8 in the model"),
    ("x=2x16x8,m=3x16x8", "dimension 'batch' is 2 in input 'x'"),
    ("x=2xa", "'x=2xa' is not NAME=DIMS"),
])
def test_bad_shapes_are_usage_errors(path, capsys, option, fragment):
    code, err, out = run(capsys, path, "--input-shape", option)
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith("npu-run: error: ") and fragment in err[0], err[0]
    assert not out


def test_refused_where_it_does_not_apply(tmp_path, capsys):
    mlir = tmp_path / "k.mlir"
    mlir.write_text("func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                    "  %0 = arith.addf %a, %a : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n")
    code, err, _ = run(capsys, mlir, "--input-shape", "a=4")
    assert code == 2 and len(err) == 1 and "applies to ONNX models only" in err[0]


def test_python_api():
    kernel = npu.compile(dynamic_model(), input_shapes={"x": (1, 4, 8), "m": [1, 4, 8]})
    assert [p.shape for p in kernel.interface.inputs] == [(1, 4, 8), (1, 4, 8)]
    assert kernel.interface.outputs[0].shape == (1, 4, 8)
    rng = np.random.default_rng(0)
    x, m = rng.standard_normal((2, 1, 4, 8)).astype(np.float32)
    (got,), _ = kernel(x, m)
    session = onnxruntime.InferenceSession(dynamic_model().SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(got, session.run(None, {"x": x, "m": m})[0], rtol=1e-6)
    with pytest.raises(UsageError, match="no input 'nope'"):
        npu.compile(dynamic_model(), input_shapes={"nope": (1,)})
    with pytest.raises(UsageError, match="not a sequence of integers"):
        npu.compile(dynamic_model(), input_shapes={"x": None})
    with pytest.raises(UsageError, match="ONNX models only"):
        npu.compile("func.func @f() {\n  return\n}\n", input_shapes={"x": (1,)})


def test_a_static_model_accepts_its_own_shape(tmp_path, capsys):
    from onnx_models import mlp

    p = tmp_path / "mlp.onnx"
    onnx.save(mlp(), p)
    assert run(capsys, p, "--input-shape", "x=6x40")[0] == 0
    code, err, _ = run(capsys, p, "--input-shape", "x=7x40")
    assert code == 2 and "dimension 0 of input 'x' is 6 in the model" in err[0]


def test_a_real_dynamic_export_pinned_is_the_static_export(capsys):
    """torch.onnx with dynamic batch and sequence, pinned to 1x16: its
    shape plumbing folds as the static export's does, so both end alike
    (today: the same refused operators; once those run, both compile)."""
    import os

    models = os.path.join(os.path.dirname(__file__), "..", "..", "models")
    static = os.path.join(models, "bert_ts_eager.onnx")
    dynamic = os.path.join(models, "bert_ts_eager_dynamic.onnx")
    code, err, _ = run(capsys, dynamic)
    assert code == 1 and "input 'input_ids': dynamic or unknown shape [batch, sequence]" in err[0]
    want = run(capsys, static, "--seed", "1")
    got = run(capsys, dynamic, "--input-shape", "input_ids=1x16", "--seed", "1")
    assert got[0] == want[0]
    assert [l.replace(dynamic, static) for l in got[1]] == want[1]
