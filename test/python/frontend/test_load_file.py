"""`load_model` of a `.onnx` path parses the mapped file (`_load_file`):
the same proto `onnx.load` makes, external data included, and the same
one-line error for a file that is no model."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from npu.frontend.onnx_import import ImportError_, load_model
from onnx_models import model


def _weighted():
    w = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
    return model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
                 [("x", [4, 64])], [("y", [4, 32])], [("w", w)])


def test_same_proto_as_onnx_load(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(_weighted(), path)
    assert load_model(path, "m.onnx") == onnx.load(path)


def test_external_data_is_loaded(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(_weighted(), path, save_as_external_data=True, all_tensors_to_one_file=True,
              location="m.data", size_threshold=0)
    assert (tmp_path / "m.data").exists()
    got = load_model(path, "m.onnx")
    w = next(t for t in got.graph.initializer if t.name == "w")
    assert np.array_equal(numpy_helper.to_array(w), np.arange(64 * 32, dtype=np.float32).reshape(64, 32))


@pytest.mark.parametrize("content", [b"", b"\x00\x01 not protobuf \xff" * 10, "truncated"])
def test_not_a_model_is_one_line(tmp_path, content):
    path = tmp_path / "bad.onnx"
    if content == "truncated":
        whole = _weighted().SerializeToString()
        content = whole[:len(whole) - 100]
    path.write_bytes(content)
    with pytest.raises(ImportError_) as e:
        load_model(path, "bad.onnx")
    assert len(str(e.value).splitlines()) == 1
    assert str(e.value).startswith("bad.onnx: error: not an ONNX model")
