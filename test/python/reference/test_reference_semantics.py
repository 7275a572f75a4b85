"""npu.reference against independent numpy formulas (float64 where it matters)."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import assert_close
from npu.ir import functions, make_context, parse_module
from npu.reference import EvaluationError, evaluate

DTYPES = {np.float16: "f16", np.float32: "f32", np.int32: "i32", np.int8: "i8"}


def memref(shape, dtype) -> str:
    return f"memref<{'x'.join(map(str, shape))}x{DTYPES[dtype]}, \"gm\">"


def program(args: list[tuple[tuple, type]], body: list[tuple[str, list[int], str]]) -> str:
    """A func.func over gm memref args; body items: (op name, arg indices, attr dict text)."""
    sig = ", ".join(f"%a{i}: {memref(s, d)}" for i, (s, d) in enumerate(args))
    lines = [f"func.func @kernel({sig}) {{"]
    for name, operands, attrs in body:
        ops = ", ".join(f"%a{i}" for i in operands)
        types = ", ".join(memref(*args[i]) for i in operands)
        lines.append(f'  "{name}"({ops}) {attrs} : ({types}) -> ()')
    lines += ["  return", "}"]
    return "\n".join(lines)


def run(args, body, inputs):
    ctx = make_context()
    module = parse_module(program(args, body), ctx)
    return evaluate(functions(module)[0], inputs)


def nz_shape(rows, cols, lead=()):
    return tuple(lead) + (-(-cols // 16), -(-rows // 16), 16, 16)


RNG = np.random.default_rng(1234)


def f16(*shape, scale=1.0):
    return (RNG.uniform(-scale, scale, size=shape)).astype(np.float16)


# --- layout -----------------------------------------------------------------


def test_fractalize_follows_the_nz_formula_with_zero_padding():
    rows, cols = 20, 35
    src = f16(rows, cols)
    dst_shape = nz_shape(rows, cols)
    out = run([((rows, cols), np.float16), (dst_shape, np.float16)],
              [("ascend.fractalize", [0, 1], "")],
              [src, np.full(dst_shape, np.nan, np.float16)])
    nz = out[1]
    assert nz.shape == (3, 2, 16, 16)
    for i in range(3):
        for j in range(2):
            for k in range(16):
                for l in range(16):
                    r, c = j * 16 + k, i * 16 + l
                    want = src[r, c] if r < rows and c < cols else 0.0
                    assert nz[i, j, k, l] == want, (i, j, k, l)
    np.testing.assert_array_equal(out[0], src)  # the input is left alone


def test_defractalize_inverts_fractalize_with_batch_dims():
    shape = (2, 3, 33, 17)
    src = RNG.standard_normal(shape).astype(np.float32)
    nz = nz_shape(33, 17, lead=(2, 3))
    out = run([(shape, np.float32), (nz, np.float32), (shape, np.float32)],
              [("ascend.fractalize", [0, 1], ""), ("ascend.defractalize", [1, 2], "")],
              [src, np.zeros(nz, np.float32), np.zeros(shape, np.float32)])
    np.testing.assert_array_equal(out[2], src)


# --- matmul -----------------------------------------------------------------


@pytest.mark.parametrize("m,n,k", [(16, 16, 16), (40, 50, 24), (64, 96, 32)])
def test_fractalize_matmul_defractalize_equals_a_at_b(m, n, k):
    a, b = f16(m, n), f16(n, k)
    args = [((m, n), np.float16), ((n, k), np.float16),
            (nz_shape(m, n), np.float16), (nz_shape(n, k), np.float16),
            (nz_shape(m, k), np.float32), ((m, k), np.float32)]
    body = [("ascend.fractalize", [0, 2], ""), ("ascend.fractalize", [1, 3], ""),
            ("ascend.matmul", [2, 3, 4], ""), ("ascend.defractalize", [4, 5], "")]
    inputs = [a, b] + [np.zeros(s, d) for s, d in args[2:]]
    out = run(args, body, inputs)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    assert_close(out[5], exact.astype(np.float32), np.float32)
    # fp32 accumulation of exact products: far closer than the tolerance says.
    assert np.max(np.abs(out[5] - exact)) < 1e-5 * max(1.0, np.abs(exact).max())


def test_matmul_accumulates_in_fp32_and_rounds_once_to_fp16():
    # 32 products of 1.0 * 2**-11 plus one 1.0: an fp16 accumulator would lose
    # every small term (1 + 2**-11 rounds back to 1); fp32 keeps them.
    m, n, k = 16, 48, 16
    a = np.zeros((m, n), np.float16)
    b = np.zeros((n, k), np.float16)
    a[:, 0] = 1.0
    b[0, :] = 1.0
    a[:, 1:33] = 2.0 ** -11
    b[1:33, :] = 1.0
    args = [(nz_shape(m, n), np.float16), (nz_shape(n, k), np.float16), (nz_shape(m, k), np.float16)]
    from npu.reference import defractalize, fractalize
    out = run(args, [("ascend.matmul", [0, 1, 2], "")],
              [fractalize(a, args[0][0]), fractalize(b, args[1][0]), np.zeros(args[2][0], np.float16)])
    c = defractalize(out[2], m, k)
    assert c.dtype == np.float16
    np.testing.assert_array_equal(c, np.full((m, k), 1.015625, np.float16))  # 1 + 32 * 2**-11


def test_batch_matmul_is_one_matmul_per_batch():
    batch, m, n, k = 3, 32, 16, 48
    from npu.reference import defractalize, fractalize
    a, b = f16(batch, m, n), f16(batch, n, k)
    sa, sb, sc = nz_shape(m, n, (batch,)), nz_shape(n, k, (batch,)), nz_shape(m, k, (batch,))
    out = run([(sa, np.float16), (sb, np.float16), (sc, np.float32)],
              [("ascend.batch_matmul", [0, 1, 2], "")],
              [fractalize(a, sa), fractalize(b, sb), np.zeros(sc, np.float32)])
    c = defractalize(out[2], m, k)
    for i in range(batch):
        exact = a[i].astype(np.float64) @ b[i].astype(np.float64)
        assert_close(c[i], exact.astype(np.float32), np.float32)


# --- elementwise ------------------------------------------------------------

BINARY = {"ascend.add": np.add, "ascend.sub": np.subtract, "ascend.mul": np.multiply,
          "ascend.div": np.divide, "ascend.max": np.maximum, "ascend.min": np.minimum}


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_binary_broadcasts_like_numpy_and_rounds_once(name, dtype):
    lhs = RNG.uniform(0.5, 2.0, size=(4, 1, 8)).astype(dtype)
    rhs = RNG.uniform(0.5, 2.0, size=(8,)).astype(dtype)
    out_shape = (4, 3, 8)
    out = run([((4, 1, 8), dtype), ((8,), dtype), (out_shape, dtype)],
              [(name, [0, 1, 2], "")], [lhs, rhs, np.zeros(out_shape, dtype)])
    exact = BINARY[name](lhs.astype(np.float64), rhs.astype(np.float64))
    expected = np.broadcast_to(exact, out_shape).astype(dtype)
    if name == "ascend.div":
        assert_close(out[2], expected, dtype)
    else:  # exact in fp32 for fp16 inputs, and correctly rounded in fp32
        np.testing.assert_array_equal(out[2], expected)


def test_fp16_add_rounds_to_nearest_even():
    # 2048 + 1 is a tie between 2048 and 2050 in fp16: nearest-even gives 2048;
    # 2048 + 3 ties between 2050 and 2052 and gives 2052.
    lhs = np.array([2048, 2048, 1], np.float16)
    rhs = np.array([1, 3, 2.0 ** -11], np.float16)
    out = run([((3,), np.float16)] * 3, [("ascend.add", [0, 1, 2], "")],
              [lhs, rhs, np.zeros(3, np.float16)])
    np.testing.assert_array_equal(out[2], np.array([2048, 2052, 1], np.float16))


def test_i32_elementwise_wraps_around():
    lhs = np.array([2**31 - 1, -5, 7], np.int32)
    rhs = np.array([1, 3, -9], np.int32)
    args = [((3,), np.int32)] * 3
    add = run(args, [("ascend.add", [0, 1, 2], "")], [lhs, rhs, np.zeros(3, np.int32)])[2]
    np.testing.assert_array_equal(add, np.array([-2**31, -2, -2], np.int32))
    mx = run(args, [("ascend.max", [0, 1, 2], "")], [lhs, rhs, np.zeros(3, np.int32)])[2]
    np.testing.assert_array_equal(mx, np.array([2**31 - 1, 3, 7], np.int32))


SCALAR = {"ascend.adds": np.add, "ascend.muls": np.multiply,
          "ascend.maxs": np.maximum, "ascend.mins": np.minimum}


@pytest.mark.parametrize("name", sorted(SCALAR))
def test_scalar_ops_use_the_scalar_in_the_element_type(name):
    x = f16(64)
    out = run([((64,), np.float16)] * 2, [(name, [0, 1], "{scalar = 0.1 : f64}")],
              [x, np.zeros(64, np.float16)])
    s16 = np.float64(np.float16(0.1))  # 0.0999755859375
    expected = SCALAR[name](x.astype(np.float64), s16).astype(np.float16)
    np.testing.assert_array_equal(out[1], expected)


UNARY = {
    "ascend.relu": lambda x: np.maximum(x, 0), "ascend.abs": np.abs, "ascend.neg": np.negative,
    "ascend.exp": np.exp, "ascend.ln": np.log, "ascend.sqrt": np.sqrt,
    "ascend.rsqrt": lambda x: 1 / np.sqrt(x), "ascend.reciprocal": lambda x: 1 / x,
    "ascend.tanh": np.tanh, "ascend.sigmoid": lambda x: 1 / (1 + np.exp(-x)),
}
POSITIVE_ONLY = {"ascend.ln", "ascend.sqrt", "ascend.rsqrt"}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_unary_matches_float64_formula(name, dtype):
    low = 0.1 if name in POSITIVE_ONLY else -3.0
    x = RNG.uniform(low, 3.0, size=(5, 40)).astype(dtype)
    out = run([((5, 40), dtype)] * 2, [(name, [0, 1], "")], [x, np.zeros((5, 40), dtype)])
    expected = UNARY[name](x.astype(np.float64)).astype(dtype)
    assert out[1].dtype == dtype
    assert_close(out[1], expected, dtype)


def test_ln_of_negative_is_nan_not_an_exception():
    x = np.array([-1, 0, 1], np.float16)
    out = run([((3,), np.float16)] * 2, [("ascend.ln", [0, 1], "")], [x, np.zeros(3, np.float16)])
    assert np.isnan(out[1][0]) and out[1][1] == -np.inf and out[1][2] == 0


def test_clamp():
    x = np.linspace(-4, 4, 33).astype(np.float32)
    out = run([((33,), np.float32)] * 2, [("ascend.clamp", [0, 1], "{max = 1.5 : f64, min = -0.25 : f64}")],
              [x, np.zeros(33, np.float32)])
    np.testing.assert_array_equal(out[1], np.minimum(1.5, np.maximum(x, -0.25)).astype(np.float32))


# --- cast -------------------------------------------------------------------


def cast(x, src, dst, mode):
    n = x.shape[0]
    out = run([((n,), src), ((n,), dst)], [("ascend.cast", [0, 1], f'{{round_mode = "{mode}"}}')],
              [x, np.zeros(n, dst)])
    return out[1]


@pytest.mark.parametrize("mode,expected", [
    ("rint", [2, -2, 4, 1, -1]), ("none", [2, -2, 4, 1, -1]), ("round", [3, -3, 4, 1, -1]),
    ("floor", [2, -3, 3, 1, -2]), ("ceil", [3, -2, 4, 2, -1]), ("trunc", [2, -2, 3, 1, -1]),
])
@pytest.mark.parametrize("src", [np.float16, np.float32])
def test_cast_float_to_int_rounding_modes(mode, expected, src):
    x = np.array([2.5, -2.5, 3.5, 1.25, -1.25], src)
    got = cast(x, src, np.int32, mode)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.array(expected, np.int32))


def test_cast_to_int_saturates_and_maps_nan_to_zero():
    x = np.array([1e10, -1e10, np.nan, np.inf], np.float32)
    np.testing.assert_array_equal(cast(x, np.float32, np.int32, "rint"),
                                  np.array([2**31 - 1, -2**31, 0, 2**31 - 1], np.int32))
    y = np.array([300, -300, 126.5, -0.5], np.float16)
    np.testing.assert_array_equal(cast(y, np.float16, np.int8, "rint"),
                                  np.array([127, -128, 126, 0], np.int8))


ULP = 2.0 ** -10  # fp16 spacing in [1, 2)


@pytest.mark.parametrize("mode,expected", [
    # x:   1+ulp/4, 1+ulp/2 (tie), 1+3ulp/2 (tie), -(1+ulp/2) (tie), 1e6
    ("rint", [1, 1, 1 + 2 * ULP, -1, np.inf]),
    ("round", [1, 1 + ULP, 1 + 2 * ULP, -(1 + ULP), np.inf]),
    ("floor", [1, 1, 1 + ULP, -(1 + ULP), 65504]),
    ("ceil", [1 + ULP, 1 + ULP, 1 + 2 * ULP, -1, np.inf]),
    ("trunc", [1, 1, 1 + ULP, -1, 65504]),
])
def test_cast_f32_to_f16_rounding_modes(mode, expected):
    x = np.array([1 + ULP / 4, 1 + ULP / 2, 1 + 1.5 * ULP, -(1 + ULP / 2), 1e6], np.float32)
    got = cast(x, np.float32, np.float16, mode)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, np.array(expected, np.float16))


def test_widening_casts_are_exact():
    x = f16(50)
    np.testing.assert_array_equal(cast(x, np.float16, np.float32, "none"), x.astype(np.float32))
    i = np.arange(-128, 128, dtype=np.int8)
    np.testing.assert_array_equal(cast(i, np.int8, np.float16, "none"), i.astype(np.float16))


# --- transpose and reductions -----------------------------------------------


def test_transpose_3d():
    x = RNG.integers(-100, 100, size=(2, 3, 5)).astype(np.int32)
    out = run([((2, 3, 5), np.int32), ((5, 2, 3), np.int32)],
              [("ascend.transpose", [0, 1], "{permutation = array<i64: 2, 0, 1>}")],
              [x, np.zeros((5, 2, 3), np.int32)])
    for i in range(2):
        for j in range(3):
            for k in range(5):
                assert out[1][k, i, j] == x[i, j, k]


def test_reduce_sum_fp16_accumulates_in_fp32():
    # 4096 ones: an fp16 accumulator sticks at 2048 (2048 + 1 rounds to 2048).
    x = np.ones((2, 4096), np.float16)
    out = run([((2, 4096), np.float16), ((2,), np.float16)], [("ascend.reduce_sum", [0, 1], "")],
              [x, np.zeros(2, np.float16)])
    np.testing.assert_array_equal(out[1], np.array([4096, 4096], np.float16))


def test_reduce_sum_scale_multiplies_the_rounded_sum():
    # 2049 ones: the sum rounds to 2048 in fp16 first, then times 3 (6144;
    # 6147 rounded would be 6148), as a muls after the reduce_sum computes it.
    x = np.ones((1, 2049), np.float16)
    out = run([((1, 2049), np.float16), ((1,), np.float16)],
              [("ascend.reduce_sum", [0, 1], "{scale = 3.0 : f64}")], [x, np.zeros(1, np.float16)])
    np.testing.assert_array_equal(out[1], np.array([6144], np.float16))


def test_reduce_sum_and_max_along_last_axis():
    x = RNG.standard_normal((3, 4, 50)).astype(np.float32)
    s = run([((3, 4, 50), np.float32), ((3, 4), np.float32)], [("ascend.reduce_sum", [0, 1], "")],
            [x, np.zeros((3, 4), np.float32)])[1]
    assert_close(s, x.astype(np.float64).sum(axis=-1).astype(np.float32), np.float32)
    m = run([((3, 4, 50), np.float32), ((3, 4), np.float32)], [("ascend.reduce_max", [0, 1], "")],
            [x, np.zeros((3, 4), np.float32)])[1]
    np.testing.assert_array_equal(m, x.max(axis=-1))


def test_reduce_of_a_vector_gives_shape_one():
    x = np.array([3, -1, 7, 2], np.float16)
    out = run([((4,), np.float16), ((1,), np.float16)], [("ascend.reduce_max", [0, 1], "")],
              [x, np.zeros(1, np.float16)])
    np.testing.assert_array_equal(out[1], np.array([7], np.float16))


# --- chains, temporaries and errors -----------------------------------------


def test_ops_run_in_order_through_a_gm_temporary():
    text = """
func.func @chain(%x: memref<8xf32, "gm">, %y: memref<8xf32, "gm">) {
  %t = memref.alloc() : memref<8xf32, "gm">
  "ascend.muls"(%x, %t) {scalar = 3.0 : f64} : (memref<8xf32, "gm">, memref<8xf32, "gm">) -> ()
  "ascend.adds"(%t, %y) {scalar = -1.0 : f64} : (memref<8xf32, "gm">, memref<8xf32, "gm">) -> ()
  memref.dealloc %t : memref<8xf32, "gm">
  return
}"""
    module = parse_module(text, make_context())
    x = np.arange(8, dtype=np.float32)
    out = evaluate(functions(module)[0], [x, np.zeros(8, np.float32)])
    np.testing.assert_array_equal(out[1], 3 * x - 1)


def test_an_op_outside_the_ascend_level_is_a_located_error():
    text = """func.func @f(%x: memref<8xf32, "gm">) {
  %c = arith.constant 1.0 : f32
  return
}"""
    module = parse_module(text, make_context())
    with pytest.raises(EvaluationError, match=r":2:8: error: the reference semantics only evaluates integer constants"):
        evaluate(functions(module)[0], [np.zeros(8, np.float32)])


def test_inputs_must_match_the_signature():
    text = program([((4,), np.float16), ((4,), np.float16)], [("ascend.relu", [0, 1], "")])
    module = parse_module(text, make_context())  # owns f: keep it alive while f is used
    f = functions(module)[0]
    with pytest.raises(EvaluationError, match="2 arguments, got 1 inputs"):
        evaluate(f, [np.zeros(4, np.float16)])
    with pytest.raises(EvaluationError, match=r"argument #1 .* the input is float32\[4\]"):
        evaluate(f, [np.zeros(4, np.float16), np.zeros(4, np.float32)])


@pytest.mark.parametrize("mode,expected", [
    ("rint", [65504, np.inf, -np.inf]), ("round", [65504, np.inf, -np.inf]),
    ("floor", [65504, 65504, -np.inf]), ("ceil", [np.inf, np.inf, -65504]),
    ("trunc", [65504, 65504, -65504]),
])
def test_cast_f32_to_f16_at_the_overflow_edge(mode, expected):
    # 65519 is below the halfway point 65520 between fp16 max and 2**16.
    x = np.array([65519, 65520, -70000], np.float32)
    np.testing.assert_array_equal(cast(x, np.float32, np.float16, mode), np.array(expected, np.float16))


def test_on_chip_buffers_are_not_part_of_the_ascend_level():
    text = """func.func @f(%x: memref<8xf32, "gm">) {
  %t = memref.alloc() : memref<8xf32, "ub">
  return
}"""
    module = parse_module(text, make_context())
    with pytest.raises(EvaluationError, match=r":2:8: error: the reference semantics has no on-chip buffers"):
        evaluate(functions(module)[0], [np.zeros(8, np.float32)])
