"""Invalid ONNX models are refused before torch-mlir (or any allocation)
sees them: one located line, exit 1, no hang, no partial output."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T, helper as h

from npu.frontend import onnx_checks
from npu.frontend.onnx_import import ImportError_, import_onnx
from npu.simulator.run_inputs import MAX_ARGUMENT_BYTES
from npu.tools.npu_run import main as npu_run


def make(nodes, inputs, outputs, inits=(), opset=17, ir=9):
    """inputs/outputs: (name, shape); no checker (these models are invalid)."""
    info = [[h.make_tensor_value_info(n, T.FLOAT, s) for n, s in side] for side in (inputs, outputs)]
    m = h.make_model(h.make_graph(nodes, "g", *info, list(inits)),
                     opset_imports=[h.make_opsetid("", opset)])
    if ir is not None:
        m.ir_version = ir
    return m


def relu(**attrs):
    return h.make_node("Relu", ["x"], ["y"], name="r", **attrs)


X, Y = ("x", [4, 8]), ("y", [4, 8])


def refused(model) -> str:
    with pytest.raises(ImportError_) as e:
        import_onnx(model, "m.onnx")
    message = str(e.value)
    assert "\n" not in message, message
    assert message.startswith("m.onnx: error: "), message
    return message


def run(tmp_path, model, capsys, *args) -> tuple[int, str]:
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    out = tmp_path / "out.npz"
    code = npu_run([str(path), "-o", str(out), *(args or ("--check",))])
    err = capsys.readouterr().err
    assert not out.exists()
    return code, err


@pytest.mark.parametrize("model, fragment", [
    (make([relu(foo=1)], [X], [Y]), "node 'r' (Relu): invalid: Unrecognized attribute: foo"),
    (make([relu()], [X], []), "the graph has no outputs"),
    (make([relu(), h.make_node("Neg", ["x"], ["y"], name="n")], [X], [Y]), "single static assignment"),
    (make([h.make_node("Relu", ["x", "x"], ["y"], name="r")], [X], [Y]), "node 'r' (Relu): invalid: "),
    (make([relu()], [X], [Y], opset=99), "opset 99"),
    (make([relu()], [X], [Y], ir=99), "ir_version 99"),
    (make([h.make_node("Softmax", ["x"], ["y"], name="s", axis=1.5)], [X], [Y]),
     "node 's' (Softmax): invalid: Mismatched attribute type"),
    (make([h.make_node("Transpose", ["x"], ["y"], name="t", perm="ab")], [X], [("y", [8, 4])]),
     "node 't' (Transpose): invalid: Mismatched attribute type"),
    (make([h.make_node("MatMul", ["x", "x"], ["y"], name="mm")], [X], [Y]),
     "node 'mm' (MatMul): invalid: [ShapeInferenceError] Incompatible dimensions"),
    # A required input given as '' (the trailing one is dropped first): found by the fuzzer.
    (make([h.make_node("MatMul", ["x", ""], ["y"], name="mm")], [X], [Y]),
     "node 'mm' (MatMul): invalid: its required input #1 ('B') is missing"),
    (make([h.make_node("Add", ["", "x"], ["y"], name="a")], [X], [Y]),
     "node 'a' (Add): invalid: its required input #0 ('A') is missing"),
])
def test_checker_refusals_are_one_line(model, fragment, tmp_path, capsys):
    assert fragment in refused(model)
    code, err = run(tmp_path, model, capsys)
    assert code == 1 and err.count("\n") == 1 and fragment in err, err


def test_default_helper_versions_still_compile():
    """onnx.helper's defaults (IR 14, the newest opset) are accepted."""
    m = h.make_model(h.make_graph([relu()], "g", [h.make_tensor_value_info("x", T.FLOAT, [4, 8])],
                                  [h.make_tensor_value_info("y", T.FLOAT, [4, 8])]))
    assert m.ir_version == onnx.IR_VERSION and m.opset_import[0].version == onnx.defs.onnx_opset_version()
    assert "linalg" in import_onnx(m).mlir


def _axis_model(op, attrs=None, shape=(4, 64), out=None, inputs=(), inits=()):
    node = h.make_node(op, ["x", *inputs], ["y"], name="n", **(attrs or {}))
    return make([node], [("x", list(shape))], [("y", list(out or shape))], inits)


AXES = h.make_tensor("ax", T.INT64, [1], [5])
AXIS_CASES = {
    "softmax_2^32": (_axis_model("Softmax", {"axis": 2**32}), "attribute 'axis' = 4294967296"),
    "softmax_2^40": (_axis_model("Softmax", {"axis": 2**40}), "attribute 'axis' = 1099511627776"),
    "softmax_-2^62": (_axis_model("Softmax", {"axis": -2**62}), "out of range [-2, 1]"),
    "layernorm": (_axis_model("LayerNormalization", {"axis": 2**32}, inputs=["g"],
                              inits=[h.make_tensor("g", T.FLOAT, [64], [1.0] * 64)]), "attribute 'axis'"),
    "flatten": (_axis_model("Flatten", {"axis": 2**32}, out=(1, 256)), "attribute 'axis'"),
    "reducemean_attr": (_axis_model("ReduceMean", {"axes": [2**33]}, out=(4, 1)), "attribute 'axes'"),
    "reducesum_input": (_axis_model("ReduceSum", inputs=["ax"], inits=[AXES], out=(4, 1)), "input 'ax' (axes) = 5"),
    "transpose": (_axis_model("Transpose", {"perm": [0, 2**32]}, out=(64, 4)), "attribute 'perm'"),
    "squeeze": (_axis_model("Squeeze", inputs=["ax"], inits=[AXES], shape=(4, 1)), "input 'ax' (axes) = 5"),
    "unsqueeze": (_axis_model("Unsqueeze", inputs=["ax"], inits=[AXES], out=(4, 64, 1)), "out of range [-3, 2]"),
    "cast": (_axis_model("Cast", {"to": 2**32}), "attribute 'to' = 4294967296"),
}


@pytest.mark.parametrize("case", sorted(AXIS_CASES))
def test_axes_out_of_range_name_the_node(case):
    """Refused by the checker's shape inference when it sees the problem,
    by `check_axes` otherwise; either way the line names the node."""
    model, fragment = AXIS_CASES[case]
    message = refused(model)
    assert "node 'n' (" in message, message
    with pytest.raises(ValueError, match=re.escape(fragment)):
        onnx_checks.check_flags(model, ValueError)
        onnx_checks.check_axes(model, onnx_checks.value_types(model), ValueError)


@pytest.mark.parametrize("axis", [2**32, 2**40, -2**62])
def test_softmax_huge_axis_does_not_hang(tmp_path, axis):
    """torch-mlir's softmax decomposition looped forever on these axes."""
    path = tmp_path / "sm.onnx"
    onnx.save(_axis_model("Softmax", {"axis": axis}), path)
    r = subprocess.run([sys.executable, "-m", "npu.tools.npu_run", str(path), "--no-numerics"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1, r.stderr
    assert r.stderr.count("\n") == 1 and "node 'n' (Softmax): attribute 'axis'" in r.stderr, r.stderr


def _matmul_with(w: onnx.TensorProto):
    return make([h.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [("x", [16, 16])],
                [("y", [16, 32])], [w])


def _raw(nbytes: int) -> onnx.TensorProto:
    w = onnx.TensorProto(name="w", data_type=T.FLOAT, dims=[16, 32])
    w.raw_data = np.ones(nbytes // 4, np.float32).tobytes()
    return w


@pytest.mark.parametrize("w, fragment", [
    (_raw(64), "initializer 'w' holds 64 bytes of raw_data; its shape [16, 32] needs 2048 bytes"),
    (_raw(4096), "initializer 'w' holds 4096 bytes of raw_data"),   # large: stripped before the fix
    (onnx.TensorProto(name="w", data_type=T.FLOAT, dims=[16, 32], float_data=[1.0] * 100),
     "initializer 'w' holds 100 values in float_data; its shape [16, 32] needs 512"),
])
def test_initializer_data_must_match_its_shape(w, fragment, tmp_path, capsys):
    assert fragment in refused(_matmul_with(w))
    code, err = run(tmp_path, _matmul_with(w), capsys)
    assert code == 1 and err.count("\n") == 1 and fragment in err, err


def test_constant_node_data_must_match_its_shape():
    t = onnx.TensorProto(name="c", data_type=T.FLOAT, dims=[4, 8], float_data=[1.0] * 3)
    m = make([h.make_node("Constant", [], ["c"], name="k", value=t),
              h.make_node("Add", ["x", "c"], ["y"], name="add")], [X], [Y])
    assert "node 'k' (Constant): attribute 'value' holds 3 values" in refused(m)


ROWS = 2**31


@pytest.mark.parametrize("case", ["input", "initializer", "intermediate"])
def test_huge_tensors_are_refused_before_allocation(case, tmp_path, capsys):
    if case == "input":
        m = make([relu()], [("x", [ROWS, 4])], [("y", [ROWS, 4])])
        fragment = "value 'x' has shape [2147483648, 4]"
    elif case == "initializer":
        w = onnx.TensorProto(name="w", data_type=T.FLOAT, dims=[ROWS, 4], raw_data=b"\0" * 16)
        m = make([h.make_node("Add", ["x", "w"], ["y"], name="add")], [("x", [1, 4])], [("y", [ROWS, 4])], [w])
        fragment = "initializer 'w' has shape [2147483648, 4]"
    else:
        n = 2**16  # two 256 KiB inputs broadcast to a 16 GiB sum
        m = make([h.make_node("Add", ["a", "b"], ["e"], name="big"),
                  h.make_node("ReduceSum", ["e", "ax"], ["y"], name="sum", keepdims=0)],
                 [("a", [n, 1]), ("b", [1, n])], [("y", [n])], [h.make_tensor("ax", T.INT64, [1], [1])])
        fragment = "node 'big' (Add): output 'e' has shape [65536, 65536]"
    message = refused(m)
    assert fragment in message and f"limit of {MAX_ARGUMENT_BYTES} bytes" in message, message
    code, err = run(tmp_path, m, capsys, "--no-numerics")
    assert code == 1 and err.count("\n") == 1 and fragment in err, err


@pytest.mark.parametrize("args", [("--check",), ("--no-numerics",)])
def test_f16_overflow_of_weights_is_one_located_warning(args, tmp_path, capsys):
    """f32 weights past f16's range become inf on the cube: a warning at the
    node, not numpy's RuntimeWarning (from the cast, or the check's inf/inf)."""
    import warnings

    from onnx import numpy_helper

    w = np.full((16, 32), 3e38, np.float32)
    w[0, 0] = 1.0
    m = make([h.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [("x", [16, 16])], [("y", [16, 32])],
             [numpy_helper.from_array(w, "w")])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        path = tmp_path / "m.onnx"
        onnx.save(m, path)
        code = npu_run([str(path), *args])
    err = capsys.readouterr().err
    assert not [c for c in caught if issubclass(c.category, RuntimeWarning)], [str(c.message) for c in caught]
    assert "RuntimeWarning" not in err
    lines = err.strip().splitlines()
    assert lines[0].startswith(f"{path}: warning: node 'mm' (MatMul): 511 of 512 values"), err
    assert "exceed the f16 range" in lines[0]
    assert code == (1 if "--check" in args else 0) and len(lines) == (2 if "--check" in args else 1), err


@pytest.mark.parametrize("name,symbol", [("my graph-1.0", "my_graph_1_0"), ("", "main_graph"),
                                         ("2nd", "_2nd"), ("torch_jit", "torch_jit")])
def test_any_graph_name_is_a_valid_entry(name, symbol):
    """torch-mlir names the function after the graph, bare: a space made the
    IR unparsable ('expected (')."""
    import npu

    m = make([relu()], [X], [Y])
    m.graph.name = name
    kernel = npu.compile(m, where="m.onnx")
    assert f"func.func @{symbol}(" in str(kernel.module)
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    (y,), _ = kernel(x)
    np.testing.assert_array_equal(y, np.maximum(x, 0))
