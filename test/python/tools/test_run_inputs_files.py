"""`npu-run --inputs FILE` with a bad file, for an MLIR kernel and for an
ONNX model alike: one `<program>: error:` line naming the file (and the
array), exit 1, no traceback, nothing simulated."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from npu.tools import npu_run

ADD = """func.func @add(%a: memref<256xf16, "gm">, %b: memref<256xf16, "gm">, %c: memref<256xf16, "gm">) {
  "ascend.add"(%a, %b, %c) : (memref<256xf16, "gm">, memref<256xf16, "gm">, memref<256xf16, "gm">) -> ()
  return
}
"""


def _onnx(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g", [x], [y])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), path)


@pytest.fixture(params=["mlir", "onnx"])
def program(request, tmp_path):
    """(program path, a dict of valid inputs for it)."""
    if request.param == "mlir":
        path = tmp_path / "add.mlir"
        path.write_text(ADD)
        return path, {f"arg{i}": np.zeros(256, np.float16) for i in range(3)}
    path = tmp_path / "relu.onnx"
    _onnx(path)
    return path, {"x": np.ones((4, 8), np.float32)}


def _npz_bytes(arrays: dict) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def _run(capsys, program_path, inputs_path, *fragments) -> str:
    code = npu_run.main([str(program_path), "--inputs", str(inputs_path)])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 1, err
    assert len(lines) == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    assert lines[0].startswith(f"{program_path}: error: "), err
    for f in fragments:
        assert f in lines[0], lines[0]
    return lines[0]


def test_valid_inputs_run(program, tmp_path, capsys):
    path, arrays = program
    good = tmp_path / "in.npz"
    np.savez(good, **arrays)
    assert npu_run.main([str(path), "--inputs", str(good)]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("cut", [0.3, 0.6, 0.95])
def test_truncated_npz(program, tmp_path, capsys, cut):
    path, arrays = program
    data = _npz_bytes(arrays)
    bad = tmp_path / "in.npz"
    bad.write_bytes(data[:max(4, int(len(data) * cut))])
    _run(capsys, path, bad, f"cannot read inputs '{bad}'")


def test_a_corrupt_member_is_named(program, tmp_path, capsys):
    path, arrays = program
    bad = tmp_path / "in.npz"
    with zipfile.ZipFile(bad, "w") as z:
        for name, a in arrays.items():
            z.writestr(name + ".npy", b"\x93NUMPY\x01\x00garbage")
    first = next(iter(arrays))
    _run(capsys, path, bad, f"array '{first}' is truncated or corrupt")


def test_npy_is_refused(program, tmp_path, capsys):
    path, arrays = program
    bad = tmp_path / "in.npy"
    np.save(bad, next(iter(arrays.values())))
    _run(capsys, path, bad, "it is a .npy file", "np.savez")


def test_object_array_is_named(program, tmp_path, capsys):
    path, arrays = program
    bad = tmp_path / "in.npz"
    first = next(iter(arrays))
    np.savez(bad, **{**arrays, first: np.array([1, "a"], dtype=object)})
    _run(capsys, path, bad, f"array '{first}' is an object array")


def test_text_file(program, tmp_path, capsys):
    path, _ = program
    bad = tmp_path / "in.txt"
    bad.write_text("1 2 3\n4 5 6\n")
    line = _run(capsys, path, bad, "not an .npz archive")
    assert "pickle" not in line


def test_extra_arrays_are_refused(program, tmp_path, capsys):
    path, arrays = program
    bad = tmp_path / "in.npz"
    np.savez(bad, **arrays, typo=np.zeros(3, np.float32))
    _run(capsys, path, bad, "match no input: 'typo'")


def test_a_non_array_member(program, tmp_path, capsys):
    path, arrays = program
    bad = tmp_path / "in.npz"
    with zipfile.ZipFile(bad, "w") as z:
        for name, a in arrays.items():
            buffer = io.BytesIO()
            np.save(buffer, a)
            z.writestr(name + ".npy", buffer.getvalue())
        z.writestr("notes.txt", b"hello")
    _run(capsys, path, bad, "'notes.txt'")
