"""The shared test helpers: tolerances that catch real errors, and the
compile-and-simulate round trip on a small program."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import assert_close, compile_and_simulate, compile_program, random_inputs, tolerances


def test_fp16_tolerance_accepts_rounding_and_rejects_one_bad_element():
    expected = np.linspace(-8, 8, 256).astype(np.float16)
    one_ulp_off = np.nextafter(expected, np.float16(np.inf))
    assert_close(one_ulp_off, expected, np.float16)
    wrong = expected.copy()
    wrong[17] += np.float16(0.125)
    with pytest.raises(AssertionError, match=r"1 of 256 elements differ .* worst at \(17,\)"):
        assert_close(wrong, expected, np.float16)


def test_fp32_tolerance_is_relative_to_the_magnitude():
    expected = np.array([1000.0, -2000.0, 0.0], np.float32)
    assert_close(expected + np.float32(0.5), expected, np.float32)  # 0.5 of 2000: fine
    with pytest.raises(AssertionError):
        assert_close(expected + np.array([0, 0, 5], np.float32), expected, np.float32)
    rtol, atol = tolerances(np.float32, expected)
    assert rtol == 1e-3 and atol == pytest.approx(2.0)


def test_integers_compare_exactly_and_shapes_dtypes_and_nans_must_match():
    with pytest.raises(AssertionError):
        assert_close(np.array([1, 2], np.int32), np.array([1, 3], np.int32))
    with pytest.raises(AssertionError, match="shape"):
        assert_close(np.zeros(3, np.float16), np.zeros(4, np.float16))
    with pytest.raises(AssertionError, match="dtype"):
        assert_close(np.zeros(3, np.float32), np.zeros(3, np.float16))
    with pytest.raises(AssertionError, match="NaN"):
        assert_close(np.array([np.nan, 1], np.float32), np.array([0, 1], np.float32))
    assert_close(np.array([np.nan, np.inf], np.float32), np.array([np.nan, np.inf], np.float32))


ADD = """func.func @add(%a: memref<4096xf16, "gm">, %b: memref<4096xf16, "gm">, %c: memref<4096xf16, "gm">) {
  "ascend.add"(%a, %b, %c) : (memref<4096xf16, "gm">, memref<4096xf16, "gm">, memref<4096xf16, "gm">) -> ()
  return
}"""


def test_compile_and_simulate_round_trip(target):
    inputs = random_inputs(ADD, seed=3)
    assert [(a.shape, a.dtype) for a in inputs] == [((4096,), np.float16)] * 3
    simulated, expected, result = compile_and_simulate(
        ADD, "npu-lower-elementwise", inputs, target, serialize=True)
    np.testing.assert_array_equal(expected[2], (inputs[0].astype(np.float32) + inputs[1]).astype(np.float16))
    for got, want in zip(simulated, expected):
        assert_close(got, want)
    assert result.cycles > 0


def test_compile_program_returns_the_lowered_module(target):
    text = str(compile_program(ADD, "npu-lower-elementwise", target))
    assert '"cce.vadd"' in text and "ascend.add" not in text
