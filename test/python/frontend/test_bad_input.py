"""Bad input to `npu-run` on a model: one line naming the node and the
reason, exit 1, no traceback, nothing written."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

from onnx_models import model


def npu_run(*args):
    return subprocess.run([sys.executable, "-m", "npu.tools.npu_run", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


def assert_one_line_failure(result, *fragments):
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for f in fragments:
        assert f in lines[0], lines[0]


def test_not_a_model(tmp_path):
    bad = tmp_path / "garbage.onnx"
    bad.write_bytes(b"\x00\x01 this is not protobuf \xff" * 10)
    out = tmp_path / "out.npz"
    r = npu_run(bad, "-o", out)
    assert_one_line_failure(r, "garbage.onnx: error:", "not an ONNX model")
    assert not out.exists()


def test_unsupported_operator_names_the_node(tmp_path):
    m = model([helper.make_node("Relu", ["x"], ["r"], name="first"),
               helper.make_node("Softsign", ["r"], ["y"], name="softsign_7")],
              [("x", [4, 8])], [("y", [4, 8])])
    path = tmp_path / "m.onnx"
    onnx.save(m, path)
    out = tmp_path / "out.npz"
    r = npu_run(path, "--check", "-o", out)
    assert_one_line_failure(r, "node 'softsign_7' (Softsign): unsupported operator")
    assert not out.exists()


def test_dynamic_shape_is_rejected(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    path = tmp_path / "dyn.onnx"
    onnx.save(m, path)
    r = npu_run(path)
    assert_one_line_failure(r, "input 'x': dynamic or unknown shape")


def test_inputs_and_outputs_are_keyed_by_name(tmp_path):
    m = model([helper.make_node("Mul", ["a", "b"], ["prod"], name="mul"),
               helper.make_node("Neg", ["prod"], ["neg"], name="neg")],
              [("a", [3, 8]), ("b", [3, 8])], [("prod", [3, 8]), ("neg", [3, 8])])
    path = tmp_path / "mul.onnx"
    onnx.save(m, path)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 3, 8)).astype(np.float32)
    np.savez(tmp_path / "in.npz", b=b, a=a)  # keyed, not ordered
    r = npu_run(path, "--inputs", tmp_path / "in.npz", "--check", "-o", tmp_path / "out.npz")
    assert r.returncode == 0, r.stderr
    assert "check: passed" in r.stdout
    got = np.load(tmp_path / "out.npz")
    assert sorted(got.files) == ["neg", "prod"]
    np.testing.assert_array_equal(got["prod"], a * b)
    np.testing.assert_array_equal(got["neg"], -(a * b))
    np.savez(tmp_path / "bad.npz", a=a)
    r = npu_run(path, "--inputs", tmp_path / "bad.npz")
    assert_one_line_failure(r, "has no array 'b'")


LINALG = """
func.func @scale(%x: tensor<4x24xf32>) -> tensor<4x24xf32> {
  %e = tensor.empty() : tensor<4x24xf32>
  %c = arith.constant 2.5 : f32
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x24xf32>) outs(%e : tensor<4x24xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %c : f32
    %t = math.tanh %m : f32
    linalg.yield %t : f32
  } -> tensor<4x24xf32>
  return %r : tensor<4x24xf32>
}
"""


def test_linalg_module_checks_against_numpy(tmp_path):
    path = tmp_path / "scale.mlir"
    path.write_text(LINALG)
    r = npu_run(path, "--check")
    assert r.returncode == 0, r.stderr
    assert "check: passed" in r.stdout
    bad = tmp_path / "slice.mlir"
    # math on whole tensors (outside a linalg body) has no conversion
    bad.write_text(LINALG.replace("%r = linalg.generic", "%s = math.tanh %x : tensor<4x24xf32>\n  %r = linalg.generic"))
    r = npu_run(bad, "--check")
    assert_one_line_failure(r, "slice.mlir:5:8: error:", "'math.tanh' is not supported")


def test_model_too_large_for_the_target_names_the_node():
    import dataclasses

    import npu
    from npu.frontend.compile import CompileError
    from npu.target import get_target
    from onnx_models import mlp

    # fc1's weight (72 x 40 in f16 Nz: 5 x 3 fractals of 512 bytes) is the
    # largest buffer; a target with 4 KiB of GM cannot hold the model.
    tiny = dataclasses.replace(get_target("ascend910"), gm_bytes=4096)
    try:
        npu.compile(mlp(), target=tiny, where="mlp.onnx")
    except CompileError as e:
        message = str(e)
    else:
        raise AssertionError("a model larger than the target's GM compiled")
    assert message.startswith("mlp.onnx: error: node 'fc1' (Gemm): the model needs ")
    assert "more than the 4096 bytes of target 'ascend910'" in message
    assert "\n" not in message
    npu.compile(mlp(), target=dataclasses.replace(tiny, gm_bytes=1 << 20))  # fits
