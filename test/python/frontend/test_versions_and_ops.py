"""Any IR version and opset: onnx.helper's defaults (IR 14, opset 28 with
onnx 1.23), which onnxruntime 1.31 cannot read, pass `--check` through a
converted reference; old opsets compile through onnx's version converter;
what cannot be converted is said, never an internal error. And a model with
several unsupported ops gets one line per op type, all at once."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from npu.tools import npu_run
from npu.tools.ort_compat import ReferenceUnavailable, _convert
from onnx_models import model


def run(capsys, *args) -> tuple[int, list[str], str]:
    code = npu_run.main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.err.strip().splitlines(), out.out


def helper_default_model() -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 32])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 32])
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Softmax", ["r"], ["y"], name="softmax", axis=-1)]
    return helper.make_model(helper.make_graph(nodes, "g", [x], [y]))  # onnx's defaults


def test_helper_defaults_pass_check(tmp_path, capsys):
    m = helper_default_model()
    assert m.ir_version >= 14 and m.opset_import[0].version >= 28  # what the pinned onnx writes
    path = tmp_path / "defaults.onnx"
    onnx.save(m, path)
    code, err, out = run(capsys, path, "--check")
    assert code == 0, err
    assert "check: passed" in out


@pytest.mark.parametrize("opset, ir", [(11, 6), (13, 7), (17, 8), (18, 8), (21, 10), (26, 13)])
def test_opsets_and_ir_versions(tmp_path, capsys, opset, ir):
    m = helper_default_model()
    m.ir_version = ir
    m.opset_import[0].version = opset
    path = tmp_path / f"m{opset}.onnx"
    onnx.save(m, path)
    code, err, out = run(capsys, path, "--check")
    assert code == 0, err
    assert "check: passed" in out


def test_old_softmax_on_a_middle_axis(tmp_path, capsys):
    # Opset 11 Softmax flattens from its axis: the converter writes that out.
    m = model([helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=1)], [("x", [2, 3, 8])],
              [("y", [2, 3, 8])], opset=11)
    path = tmp_path / "sm11.onnx"
    onnx.save(m, path)
    code, err, out = run(capsys, path, "--check")
    assert code == 0 and "check: passed" in out, err


def test_unconvertible_opset_says_what_to_do():
    # A runtime that read opset 16 at most could not take LayerNormalization
    # (opset 17): the converter has no older version of it.
    m = model([helper.make_node("LayerNormalization", ["x", "s"], ["y"], name="ln")], [("x", [4, 16])],
              [("y", [4, 16])], [("s", np.ones(16, np.float32))])
    message = "... Current official support for domain ai.onnx is till opset 16."
    with pytest.raises(ReferenceUnavailable, match="reads opsets up to 16.*export it with opset 16 or lower"):
        _convert(m, message, [])


def test_ir_version_is_not_lowered_over_new_types():
    m = model([helper.make_node("Cast", ["x"], ["c"], name="c", to=TensorProto.FLOAT8E4M3FN),
               helper.make_node("Cast", ["c"], ["y"], name="back", to=TensorProto.FLOAT)],
              [("x", [4, 16])], [("y", [4, 16])])
    with pytest.raises(ReferenceUnavailable, match=r"element types it may not know \(\[17\]\)"):
        _convert(m, "Unsupported model IR version: 14, max supported IR version: 8", [])


def test_other_failures_are_not_version_problems():
    assert _convert(helper_default_model(), "[ONNXRuntimeError] : 1 : FAIL : some other reason", []) is None


def test_every_unsupported_op_type_at_once(tmp_path, capsys):
    nodes = [helper.make_node("Softsign", ["x"], ["a"], name="ss_1"),
             helper.make_node("Relu", ["a"], ["b"], name="relu"),
             helper.make_node("Softsign", ["b"], ["c"], name="ss_2"),
             helper.make_node("Mish", ["c"], ["d"], name="mish"),
             helper.make_node("Softsign", ["d"], ["y"], name="ss_3")]
    path = tmp_path / "many.onnx"
    onnx.save(model(nodes, [("x", [4, 8])], [("y", [4, 8])], opset=18), path)
    out_npz = tmp_path / "out.npz"
    code, err, out = run(capsys, path, "--check", "-o", out_npz)
    assert code == 1
    assert err == [f"{path}: error: node 'ss_1' (Softsign): unsupported operator (3 nodes)",
                   f"{path}: error: node 'mish' (Mish): unsupported operator (1 node)"]
    assert not out and not out_npz.exists()


def test_ops_that_fold_away_are_not_reported(tmp_path, capsys):
    # Shape -> ConstantOfShape -> Add: nothing left to run but the Add.
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("ConstantOfShape", ["s"], ["ones"], name="ones",
                              value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])),
             helper.make_node("Add", ["x", "ones"], ["y"], name="add")]
    path = tmp_path / "fold.onnx"
    onnx.save(model(nodes, [("x", [4, 8])], [("y", [4, 8])]), path)
    code, err, out = run(capsys, path, "--check")
    assert code == 0 and "check: passed" in out, err
