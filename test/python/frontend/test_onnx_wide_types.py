"""Types the NPU does not hold (`onnx_wide_types`, `onnx_cast_narrow`,
`host_types`): held exactly in a wider type, converted at the graph
boundary, the model's type outside; against onnx's reference evaluator."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper
from onnx.reference import ReferenceEvaluator

import npu
from npu.frontend.compile import CompileError, InputError
from npu.frontend.host_types import check_exact

ALL_F16 = np.arange(65536, dtype=np.uint16).view(np.float16).reshape(256, 256)
NARROW_FLOATS = {T.FLOAT8E4M3FN: ml_dtypes.float8_e4m3fn, T.FLOAT8E4M3FNUZ: ml_dtypes.float8_e4m3fnuz,
                 T.FLOAT8E5M2: ml_dtypes.float8_e5m2, T.FLOAT8E5M2FNUZ: ml_dtypes.float8_e5m2fnuz,
                 T.FLOAT8E8M0: ml_dtypes.float8_e8m0fnu}


def _model(nodes, inputs, outputs):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                              [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])


def _cast(src: int, to: int, shape) -> object:
    return _model([helper.make_node("Cast", ["x"], ["y"], to=to)], [("x", src, shape)], [("y", to, shape)])


def _same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))


@pytest.mark.parametrize("to", [T.INT4, T.UINT4, T.INT2, T.UINT2])
def test_cast_f16_to_sub_byte_ints_every_value(to):
    """Truncation, then the low bits; NaN and infinities to 0."""
    model = _cast(T.FLOAT16, to, [256, 256])
    (got,), _ = npu.compile(model)(ALL_F16)
    _same(got, ReferenceEvaluator(model).run(None, {"x": ALL_F16})[0])


@pytest.mark.parametrize("to", [T.INT4, T.UINT2])
def test_cast_f32_to_sub_byte_ints_bit_patterns(to):
    """Random f32 bit patterns (past 2^24 f32 holds no fractions; past 2^27
    every value is a multiple of 16) and the edges, in an odd shape."""
    rng = np.random.default_rng(1)
    x = rng.integers(0, 2 ** 32, 3 * 37 * 41, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x[:12] = [2.0 ** 24 + 2, 2.0 ** 27 + 16, 2.0 ** 31, -2.0 ** 31, 3e38, -3e38, np.inf, -np.inf, np.nan,
              -7.99, 7.5, -8.5]
    x = x.reshape(3, 37, 41)
    model = _cast(T.FLOAT, to, [3, 37, 41])
    (got,), _ = npu.compile(model)(x)
    _same(got, ReferenceEvaluator(model).run(None, {"x": x})[0])


def _agrees(model, x) -> None:
    (got,), _ = npu.compile(model)(x)
    with np.errstate(all="ignore"):
        want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    _same(got, want)


@pytest.mark.parametrize("to, saturate", [(T.FLOAT8E4M3FN, 1), (T.FLOAT8E4M3FN, 0), (T.FLOAT8E4M3FNUZ, 1),
                                          (T.FLOAT8E4M3FNUZ, 0), (T.FLOAT8E5M2, 1), (T.FLOAT8E5M2, 0),
                                          (T.FLOAT8E5M2FNUZ, 1), (T.FLOAT8E5M2FNUZ, 0), (T.FLOAT4E2M1, None),
                                          (T.BFLOAT16, None)])
def test_cast_f16_to_narrow_floats_every_value(to, saturate):
    """Round to nearest even (ties, subnormals), saturation or overflow to
    inf/NaN, NaN: every f16 against onnx's reference."""
    attrs = {} if saturate is None else {"saturate": saturate}
    model = _model([helper.make_node("Cast", ["x"], ["y"], to=to, **attrs)],
                   [("x", T.FLOAT16, [256, 256])], [("y", to, [256, 256])])
    _agrees(model, ALL_F16)


def _f32_patterns(shape) -> np.ndarray:
    """Random f32 bit patterns with the formats' edges, in `shape`."""
    x = np.random.default_rng(4).integers(0, 2 ** 32, int(np.prod(shape)), dtype=np.uint64)
    x = x.astype(np.uint32).view(np.float32)
    edges = [0.0, -0.0, 1e-45, 2.0 ** -127, 1.5 * 2.0 ** -127, 2.0 ** -126, 2.0 ** -133, 2.0 ** 64,
             3.3895314e38, 3.3961776e38, 3.4028235e38, np.inf, -np.inf, np.nan, 464.0, 464.01, 61440.0]
    x[:len(edges)] = edges
    return x.reshape(shape)


@pytest.mark.parametrize("to", [T.BFLOAT16, T.FLOAT8E4M3FN, T.FLOAT8E5M2])
def test_cast_f32_to_narrow_floats_bit_patterns(to):
    model = _cast(T.FLOAT, to, [5, 39, 61])
    _agrees(model, _f32_patterns((5, 39, 61)))


@pytest.mark.parametrize("mode, saturate", [("up", 1), ("down", 1), ("nearest", 0)])
def test_cast_to_e8m0(mode, saturate):
    """Powers of two by the exponent field, per round_mode; f32 subnormals,
    zero, overflow past 2^127."""
    node = helper.make_node("Cast", ["x"], ["y"], to=T.FLOAT8E8M0, saturate=saturate, round_mode=mode)
    model = _model([node], [("x", T.FLOAT, [5, 39, 61])], [("y", T.FLOAT8E8M0, [5, 39, 61])])
    model.opset_import[0].version = 25
    _agrees(model, _f32_patterns((5, 39, 61)))
    model.graph.input[0].type.tensor_type.elem_type = T.FLOAT16
    _agrees(model, ALL_F16[:5 * 39 * 61 // 256 + 1].reshape(-1)[:5 * 39 * 61].reshape(5, 39, 61))


@pytest.mark.parametrize("src, to", [(T.FLOAT8E4M3FN, T.FLOAT), (T.FLOAT8E4M3FNUZ, T.FLOAT16),
                                     (T.FLOAT8E5M2, T.FLOAT16), (T.FLOAT8E5M2FNUZ, T.FLOAT),
                                     (T.FLOAT8E8M0, T.FLOAT), (T.FLOAT8E8M0, T.FLOAT16)])
def test_every_float8_code_is_widened_exactly(src, to):
    """All 256 codes (NaNs, infinities, subnormals, -0) in an odd shape."""
    x = np.arange(256, dtype=np.uint8).view(NARROW_FLOATS[src])[:255].reshape(3, 5, 17)
    model = _cast(src, to, [3, 5, 17])
    kernel = npu.compile(model)
    assert kernel.interface.inputs[0].numpy_dtype == x.dtype
    (got,), _ = kernel(x)
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    _same(got, want)


@pytest.mark.parametrize("src, dtype, to", [(T.INT4, ml_dtypes.int4, T.INT8), (T.UINT4, ml_dtypes.uint4, T.UINT8),
                                            (T.INT2, ml_dtypes.int2, T.FLOAT16),
                                            (T.FLOAT4E2M1, ml_dtypes.float4_e2m1fn, T.FLOAT),
                                            (T.BFLOAT16, ml_dtypes.bfloat16, T.FLOAT)])
def test_narrow_inputs_are_widened(src, dtype, to):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((7, 3)).astype(np.float32) * 4
    x = x.astype(dtype)
    model = _cast(src, to, [7, 3])
    kernel = npu.compile(model)
    assert "npu.host_type" in kernel.stages["ascend"]
    (got,), _ = kernel(x)
    _same(got, ReferenceEvaluator(model).run(None, {"x": x})[0])


def test_narrow_values_move_and_come_out_in_their_type():
    """An int4 input reshaped is an int4 output; a Cast to int4 feeds a
    Concat with it."""
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["t"]),
             helper.make_node("Cast", ["f"], ["c"], to=T.INT4),
             helper.make_node("Concat", ["t", "c"], ["y"], axis=0)]
    model = _model(nodes, [("x", T.INT4, [3, 5]), ("f", T.FLOAT, [2, 3])], [("y", T.INT4, [7, 3])])
    model.graph.initializer.append(helper.make_tensor("shape", T.INT64, [2], [5, 3]))
    x = np.arange(-8, 7).reshape(3, 5).astype(ml_dtypes.int4)
    f = np.array([[9.5, -9.5, 100], [-0.5, 7.9, -8]], np.float32)
    kernel = npu.compile(model)
    assert [p.numpy_dtype for p in kernel.interface.outputs] == [np.dtype(ml_dtypes.int4)]
    (got,), _ = kernel(x, f)
    _same(got, ReferenceEvaluator(model).run(None, {"x": x, "f": f})[0])


def test_cast_to_double_is_f32_on_device_and_double_outside():
    model = _cast(T.FLOAT16, T.DOUBLE, [5, 3])
    x = np.random.default_rng(3).standard_normal((5, 3)).astype(np.float16)
    kernel = npu.compile(model)
    assert kernel.interface.outputs[0].storage_dtype == np.float32
    (got,), _ = kernel(x)
    _same(got, x.astype(np.float64))


@pytest.mark.parametrize("to, dtype", [(T.FLOAT, np.float32), (T.FLOAT16, np.float16)])
def test_double_input_cast_once_is_rounded_on_the_host(to, dtype):
    """1 + 2^-11 + 2^-40 rounds up to f16 directly, to 1 through f32."""
    x = np.array([1 + 2.0 ** -11 + 2.0 ** -40, 1e300, -1e-300, np.pi, np.nan], np.float64)
    (got,), _ = npu.compile(_cast(T.DOUBLE, to, [5]))(x)
    with np.errstate(over="ignore"):
        _same(got, x.astype(dtype))


def test_double_arithmetic_is_refused_at_its_node():
    model = _model([helper.make_node("Add", ["a", "b"], ["c"])],
                   [("a", T.DOUBLE, [2]), ("b", T.DOUBLE, [2])], [("c", T.DOUBLE, [2])])
    with pytest.raises(CompileError, match=r"node 'Add_0' \(Add\): DOUBLE data is not computed"):
        npu.compile(model)


def test_double_input_with_other_uses_is_refused():
    nodes = [helper.make_node("Cast", ["x"], ["a"], to=T.FLOAT), helper.make_node("Cast", ["x"], ["b"], to=T.FLOAT16)]
    model = _model(nodes, [("x", T.DOUBLE, [2])], [("a", T.FLOAT, [2]), ("b", T.FLOAT16, [2])])
    with pytest.raises(CompileError, match=r"input 'x': DOUBLE data is not computed"):
        npu.compile(model)


def test_narrow_arithmetic_is_refused_at_its_node():
    model = _model([helper.make_node("Add", ["a", "b"], ["c"])],
                   [("a", T.INT4, [2]), ("b", T.INT4, [2])], [("c", T.INT4, [2])])
    with pytest.raises(CompileError, match=r"node 'Add_0' \(Add\): INT4 data is not computed .*wrap"):
        npu.compile(model)


def test_an_input_value_outside_the_type_is_located():
    kernel = npu.compile(_cast(T.INT4, T.FLOAT, [2, 3]))
    with pytest.raises(InputError, match=r"input 'x': element \[1, 2\] is 9, not exactly a int4"):
        kernel(np.array([[0, 1, 2], [-8, 7, 9]], np.int64))
    (got,), _ = kernel(np.array([[0, 1, 2], [-8, 7, 3]], np.int64))  # exact values are taken
    _same(got, np.array([[0, 1, 2], [-8, 7, 3]], np.float32))


def test_a_device_value_outside_the_type_is_located():
    with pytest.raises(InputError, match=r"output 'y': element \[0, 1\] is 0.3"):
        check_exact(np.array([[0.5, 0.3]], np.float16), np.dtype(ml_dtypes.float8_e4m3fn), "output 'y'", "float8_e4m3fn")
    check_exact(np.array([[0.5, np.nan, -448]], np.float16), np.dtype(ml_dtypes.float8_e4m3fn), "output 'y'", "x")
