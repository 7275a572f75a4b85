"""`npu-run --check` on quantised outputs: one step of the output's grid is
allowed (onnxruntime sums dequantised floats where the int8 cube sums exact
integers, so a value at a rounding boundary may land a step away), two are not."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from npu.frontend.onnx_qdq import output_steps
from npu.simulator.run_check import compare

STEP = 0.25


def _grid(values: list[float]) -> np.ndarray:
    return np.asarray(values, np.float32) * np.float32(STEP)


def test_one_step_passes_two_fail() -> None:
    want = _grid([40, -3, 7, 0])  # 10.0 at most: the float bound alone is 0.01 * 10 + 0.02 * |x|
    one = compare([_grid([41, -3, 7, 0])], [want], {"float32": (0.0, 0.0)}, "q", [STEP])
    assert one.passed and one.max_abs_err == STEP
    two = compare([_grid([40, -3, 9, 0])], [want], {"float32": (0.0, 0.0)}, "q", [STEP])
    assert not two.passed
    assert "differs at element [2]" in two.failure and "one step 0.25" in two.failure
    # Without a step the same one-step difference fails.
    assert not compare([_grid([41, -3, 7, 0])], [want], {"float32": (0.0, 0.0)}).passed


def test_output_steps_are_the_dequantize_scales() -> None:
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"]),
             helper.make_node("DequantizeLinear", ["q", "per_axis", "zeros"], ["y_axis"], axis=1),
             helper.make_node("Relu", ["x"], ["r"])]
    init = [numpy_helper.from_array(np.float32(STEP), "s"), numpy_helper.from_array(np.int8(3), "z"),
            numpy_helper.from_array(np.array([0.5, 0.25], np.float32), "per_axis"),
            numpy_helper.from_array(np.zeros(2, np.int8), "zeros")]
    info = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [3, 2])  # noqa: E731
    graph = helper.make_graph(nodes, "g", [info("x")], [info("y"), info("y_axis"), info("r")], init)
    # A per-axis grid has no one step: its output is checked as floats.
    assert output_steps(helper.make_model(graph), ["r", "y", "y_axis"]) == [None, STEP, None]
