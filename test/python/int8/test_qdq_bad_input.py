"""Bad quantisation parameters and dtypes: one located line naming the node."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from npu.frontend.onnx_import import ImportError_, import_onnx


def _qdq_model(scale: float, zp: np.ndarray, q_type: int = TensorProto.INT8,
               op: str = "QuantizeLinear") -> onnx.ModelProto:
    inits = [numpy_helper.from_array(np.array(scale, np.float32), "s")]
    if zp is not None:
        inits.append(numpy_helper.from_array(zp, "z"))
    if op == "QuantizeLinear":
        x, y = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8]), \
            helper.make_tensor_value_info("y", q_type, [4, 8])
    else:
        x, y = helper.make_tensor_value_info("x", q_type, [4, 8]), \
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])
    node = helper.make_node(op, ["x", "s"] + (["z"] if zp is not None else []), ["y"], name="quant_1")
    graph = helper.make_graph([node], "g", [x], [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


@pytest.mark.parametrize("scale, shown", [(0.0, "0.0"), (float("nan"), "nan"), (float("inf"), "inf")])
def test_bad_scale_names_the_node(scale: float, shown: str) -> None:
    with pytest.raises(ImportError_) as e:
        import_onnx(_qdq_model(scale, np.array(0, np.int8)), where="m.onnx")
    msg = str(e.value)
    assert msg.count("\n") == 0
    assert msg.startswith("m.onnx: error: node 'quant_1' (QuantizeLinear): scale 's' is " + shown)


@pytest.mark.parametrize("q_type, name", [(TensorProto.UINT4, "uint4"), (TensorProto.INT4, "int4"),
                                          (TensorProto.FLOAT8E4M3FN, "float8e4m3fn"),
                                          (TensorProto.INT16, "int16")])
def test_unsupported_quantised_type_names_the_node(q_type: int, name: str) -> None:
    with pytest.raises(ImportError_) as e:
        import_onnx(_qdq_model(0.5, None, q_type, "DequantizeLinear"), where="m.onnx")
    assert str(e.value) == (f"m.onnx: error: node 'quant_1' (DequantizeLinear): 'x' is {name}: "
                            "quantised values run as int8 or uint8 only")


def test_int32_dequantize_needs_a_zero_zero_point() -> None:
    with pytest.raises(ImportError_, match="node 'quant_1' .*zero point 'z' of int32 data must be 0"):
        import_onnx(_qdq_model(0.5, np.array(3, np.int32), TensorProto.INT32, "DequantizeLinear"),
                    where="m.onnx")


def test_npu_run_exits_with_one_line(tmp_path) -> None:
    path, out = tmp_path / "m.onnx", tmp_path / "out.npz"
    onnx.save(_qdq_model(float("nan"), np.array(0, np.int8)), path)
    r = subprocess.run([sys.executable, "-m", "npu.tools.npu_run", str(path), "-o", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [
        f"{path}: error: node 'quant_1' (QuantizeLinear): scale 's' is nan: a quantisation scale "
        "must be finite and non-zero"]
    assert not out.exists()
