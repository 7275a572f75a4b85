"""A ShuffleNetV2 unit as torchvision exports it: the map's channels split
in halves (two Slices), one half through a 1x1 conv, a depthwise 3x3 and a
1x1 conv, the halves concatenated and shuffled (Reshape [1, 2, C/2, H, W],
Transpose (0, 2, 1, 3, 4), Reshape back). At 6x6 the shuffle's planes (36
f32) are not whole 32-byte blocks and the tensor is too large for the
element gather: it was refused ("needs the general transpose"); now each
plane is copied whole (npu-lower-transpose's kept rows). Checked against
onnxruntime on one core and on the chip."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from cnn_onnx import compile_npu, make, ort_run

F = TensorProto.FLOAT


def shuffle_unit(c: int = 96, size: int = 6, groups: int = 2):
    """torchvision's InvertedResidual with stride 1 after a 1x1 stem conv."""
    rng = np.random.default_rng(3)
    inits = []

    def w(name: str, shape: list[int]) -> str:
        fan = int(np.prod(shape[1:]))
        inits.append(numpy_helper.from_array(
            (rng.standard_normal(shape) / np.sqrt(fan)).astype(np.float32), name))
        return name

    def const(name: str, values: list[int]) -> str:
        inits.append(numpy_helper.from_array(np.array(values, np.int64), name))
        return name

    def conv(name: str, x: str, cin: int, cout: int, y: str, k: int = 1, group: int = 1):
        return helper.make_node("Conv", [x, w(name + ".w", [cout, cin // group, k, k]),
                                         w(name + ".b", [cout])], [y], name=name,
                                kernel_shape=[k, k], pads=[k // 2] * 4, group=group)

    h = c // 2
    nodes = [conv("stem", "x", 3, c, "s0"), helper.make_node("Relu", ["s0"], ["s"], name="stem_relu"),
             helper.make_node("Slice", ["s", const("z", [0]), const("h", [h]), const("one", [1])],
                              ["x1"], name="slice1"),
             helper.make_node("Slice", ["s", "h", const("c", [c]), "one"], ["x2"], name="slice2"),
             conv("b1", "x2", h, h, "b1o"), helper.make_node("Relu", ["b1o"], ["b1r"], name="b1_relu"),
             conv("b2", "b1r", h, h, "b2o", k=3, group=h), conv("b3", "b2o", h, h, "b3o"),
             helper.make_node("Relu", ["b3o"], ["b3r"], name="b3_relu"),
             helper.make_node("Concat", ["x1", "b3r"], ["cat"], name="concat", axis=1),
             helper.make_node("Reshape", ["cat", const("shape5", [1, groups, c // groups, size, size])],
                              ["r5"], name="reshape"),
             helper.make_node("Transpose", ["r5"], ["t5"], name="shuffle", perm=[0, 2, 1, 3, 4]),
             helper.make_node("Reshape", ["t5", const("shape4", [1, c, size, size])], ["sh"],
                              name="reshape_1"),
             conv("after", "sh", c, 16, "y")]
    return make(nodes, [("x", F, [1, 3, size, size])], [("y", F, [1, 16, size, size])], inits)


@pytest.mark.parametrize("cores", [1, 32])
def test_a_shuffle_of_planes_not_whole_blocks_runs(cores):
    model = shuffle_unit()
    kernel = compile_npu(model, cores)
    assert kernel.stages["ascend"].count("permutation = array<i64: 0, 2, 1, 3, 4>") == 1
    x = np.random.default_rng(4).standard_normal((1, 3, 6, 6)).astype(np.float32)
    (got,), _ = kernel(x)
    (want,) = ort_run(model, {"x": x})
    # The convs multiply in f16 (accumulating in f32).
    np.testing.assert_allclose(got, want, atol=2e-2, rtol=2e-2)


def test_the_halves_are_inserted_shuffled():
    """npu-canonicalize writes the two inserts of the Concat straight into the
    shuffle's result (`canonicalize/shuffles.py`): no concat buffer, no
    transpose of it; the same values, fewer cycles."""
    import npu

    model = shuffle_unit(size=14)
    x = np.random.default_rng(5).standard_normal((1, 3, 14, 14)).astype(np.float32)
    moved = npu.compile(model, cores=1)
    kept = npu.compile(model, pipeline="npu-lower{canonicalize-transposes=false}", cores=1)
    (a,), fast = moved(x)
    (b,), slow = kept(x)
    np.testing.assert_array_equal(a, b)
    assert fast["cycles"] < slow["cycles"]
