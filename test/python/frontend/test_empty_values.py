"""Zero-size tensors (`onnx_empty`): their values are known on the host;
the device runs only what is left, or nothing."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import npu
from npu.frontend.empty_kernel import HostValuesKernel


def _model(nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


def test_mixed_device_and_host_outputs():
    """Relu runs on the device; the empty slice and the sum over an empty
    axis (0) and the max over it (-inf) come from the host; the empty input
    is taken but never passed to the device."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    e = helper.make_tensor_value_info("e", TensorProto.FLOAT, [0, 4])
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 0]),
            helper.make_tensor_value_info("s", TensorProto.FLOAT, [4]),
            helper.make_tensor_value_info("m", TensorProto.FLOAT, [1, 4])]
    inits = [numpy_helper.from_array(np.array(v, np.int64), n)
             for n, v in (("st", [5]), ("en", [9]), ("ax", [1]), ("a0", [0]))]
    nodes = [helper.make_node("Relu", ["x"], ["y"]),
             helper.make_node("Slice", ["x", "st", "en", "ax"], ["z"]),
             helper.make_node("ReduceSum", ["e", "a0"], ["s"], keepdims=0),
             helper.make_node("ReduceMax", ["e", "a0"], ["m"], keepdims=1)]
    kernel = npu.compile(_model(nodes, [x, e], outs, inits))
    assert isinstance(kernel, HostValuesKernel) and kernel.device is not None
    assert kernel.input_names == ["x", "e"] and kernel.output_names == ["y", "z", "s", "m"]
    xv = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
    (y, z, s, m), report = kernel(xv, np.zeros((0, 4), np.float32))
    np.testing.assert_array_equal(y, np.maximum(xv, 0))
    assert z.shape == (2, 0) and z.dtype == np.float32
    np.testing.assert_array_equal(s, np.zeros(4, np.float32))
    np.testing.assert_array_equal(m, np.full((1, 4), -np.inf, np.float32))
    assert report["cycles"] > 0


def test_no_device_work():
    """Every output empty: no device program, no cycles."""
    x = helper.make_tensor_value_info("x", TensorProto.INT32, [3, 0])
    y = helper.make_tensor_value_info("y", TensorProto.INT32, [0, 3])
    kernel = npu.compile(_model([helper.make_node("Transpose", ["x"], ["y"])], [x], [y]))
    assert kernel.device is None
    (out,), report = kernel(np.zeros((3, 0), np.int32))
    assert out.shape == (0, 3) and out.dtype == np.int32 and report["cycles"] == 0


def test_empty_piece_read_by_device_is_refused():
    """A MatMul of [2, 0] by [0, 3] has a non-empty result (zeros) the host
    does not derive: it stays refused with the zero-size reason, one line."""
    import pytest

    from npu.frontend.compile import CompileError

    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 0])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [0, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    model = _model([helper.make_node("MatMul", ["a", "b"], ["y"])], [a, b], [y])
    onnx.checker.check_model(model)
    with pytest.raises(CompileError, match="zero-size dimension") as e:
        npu.compile(model)
    assert "\n" not in str(e.value)


def test_a_concat_drops_its_empty_pieces():
    """Phi-3 concatenates each head's rotary part with the rest, empty when
    the whole head rotates: Concat(Relu(x), x[:, 3:]) along the axis x[:, 3:]
    is empty on is Relu(x); the empty Slice never reaches the device."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    inits = [numpy_helper.from_array(np.array(v, np.int64), n)
             for n, v in (("st", [3]), ("en", [9]), ("ax", [1]))]
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Slice", ["x", "st", "en", "ax"], ["rest"], name="rest"),
             helper.make_node("Concat", ["r", "rest"], ["y"], name="join", axis=1)]
    kernel = npu.compile(_model(nodes, [x], [y], inits))
    xv = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
    (out,), report = kernel(xv)
    np.testing.assert_array_equal(out, np.maximum(xv, 0))
    assert report["cycles"] > 0



def test_reshape_of_an_empty_value_to_another_count_is_refused():
    """Transpose of a 4x0 input (empty: the host knows it) reshaped to 2x16:
    the model is invalid, which strict shape inference lets through; a
    located one-line error, not torch-mlir's crash (shape fuzzer, onnx-2486)."""
    import pytest

    from npu.frontend.compile import CompileError

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 0])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 16])
    shape = numpy_helper.from_array(np.array([2, 16], np.int64), "shape")
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]),
             helper.make_node("Reshape", ["t", "shape"], ["y"], name="rs")]
    with pytest.raises(CompileError, match=r"node 'rs' \(Reshape\): cannot reshape 't' of shape "
                                           r"\[0, 4\] \(0 elements\) to \[2, 16\]") as e:
        npu.compile(_model(nodes, [x], [y], [shape]))
    assert "\n" not in str(e.value)

def test_npu_run_checks_a_model_without_device_work(tmp_path):
    """npu-run --check: zero cycles, the empty output saved, onnxruntime agrees."""
    import subprocess
    import sys

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 0])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [0, 3])
    path, out = tmp_path / "empty.onnx", tmp_path / "out.npz"
    onnx.save(_model([helper.make_node("Transpose", ["x"], ["y"])], [x], [y]), path)
    r = subprocess.run([sys.executable, "-m", "npu.tools.npu_run", str(path), "--check", "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "cycles            0" in r.stdout and "check: passed" in r.stdout
    assert np.load(out)["y"].shape == (0, 3)
