"""What the conv path refuses (one located line naming the node) and what it
must not refuse: SAME padding, and a feature map larger than L1 (tiled in
bands of rows, each its own feature-map register)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import npu
from conv_cases import conv_model, ort_run, random_input
from npu.frontend.compile import CompileError

CUBE = dict(rtol=2e-2, atol=2e-2)


def test_3d_conv_is_one_located_error():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 2, 2, 2])
    w = numpy_helper.from_array(np.ones((3, 2, 3, 3, 3), np.float32), "w")
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv3d", kernel_shape=[3, 3, 3])
    m = helper.make_model(helper.make_graph([node], "g", [x], [y], [w]),
                          opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    with pytest.raises(CompileError) as e:
        npu.compile(m)
    assert str(e.value).count("\n") == 0
    assert "node 'conv3d' (Conv): attribute 'kernel_shape' has 3 dimensions" in str(e.value)


def test_same_upper_padding():
    m = conv_model(c=8, cout=8, k=3, h=7, w=7)
    node = m.graph.node[0]
    del node.attribute[:]
    node.attribute.extend([helper.make_attribute("kernel_shape", [3, 3]),
                           helper.make_attribute("auto_pad", "SAME_UPPER"),
                           helper.make_attribute("strides", [2, 2])])
    for d in (2, 3):
        m.graph.output[0].type.tensor_type.shape.dim[d].dim_value = 4
    x = random_input(m)
    (got,), _ = npu.compile(m)(x)
    np.testing.assert_allclose(got, ort_run(m, {"x": x})[0], **CUBE)


def test_map_larger_than_l1_is_tiled():
    # 64 x 96 x 96 f16 = 1.18 MB, more than the 1 MiB L1
    m = conv_model(c=64, cout=16, k=3, h=96, w=96)
    x = random_input(m)
    kernel = npu.compile(m)
    assert str(kernel.module).count("set_fmatrix") > 1  # bands
    (got,), _ = kernel(x)
    np.testing.assert_allclose(got, ort_run(m, {"x": x})[0], **CUBE)
