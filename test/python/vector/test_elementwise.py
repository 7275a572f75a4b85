"""npu-lower-elementwise on the simulator vs numpy: every op and dtype, the
sizes around the repeat / block / chunk boundaries, and each op's edge
values (zero, negatives for sqrt and ln, overflow of exp in fp16)."""

from __future__ import annotations

import numpy as np
import pytest

from npu.target import get_target
from vec_common import NP, assert_matches, compile_source, func, memref, run, simulate_strict

SIZES = [1, 15, 16, 17, 127, 128, 129]
# With a cap of 256 elements a chunk, 1000 elements are 3 chunks plus an
# overlapped tail: the multi-chunk path on a small tensor.
SMALL_CHUNKS = "npu-lower-elementwise{max-chunk=256}"
LOWER = "npu-lower-elementwise"

BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
          "max": np.maximum, "min": np.minimum}
SCALAR = {"adds": (np.add, 0.5), "muls": (np.multiply, -3.0), "maxs": (np.maximum, 0.25),
          "mins": (np.minimum, -0.75)}


def _rsqrt(x):
    return 1 / np.sqrt(x)


UNARY = {"relu": lambda x: np.maximum(x, 0), "abs": np.abs, "neg": np.negative, "exp": np.exp,
         "ln": np.log, "sqrt": np.sqrt, "rsqrt": _rsqrt, "reciprocal": lambda x: 1 / x,
         "tanh": np.tanh, "sigmoid": lambda x: 1 / (1 + np.exp(-x))}
EXACT = {"add", "sub", "mul", "max", "min", "relu", "abs", "neg", "adds", "muls", "maxs", "mins"}
# Single correctly rounded transcendental: within one ulp of numpy.
ONE_ULP = {"div", "exp", "ln", "sqrt", "rsqrt", "reciprocal"}


def tolerance(op: str, elem: str) -> tuple[float, float]:
    """(rtol, atol) against numpy computed in float64 and rounded once."""
    eps = float(np.finfo(NP[elem]).eps)
    if op in EXACT:
        return 0.0, 0.0
    # The simulator (like the hardware) is not correctly rounded for f32
    # transcendentals: it uses numpy's float32 routines, documented to within
    # 4 ulp (log: 3.83 ulp max). f16 results are computed in f32 and rounded
    # once: within one f16 ulp.
    ulps = 1 if elem == "f16" else 4
    if op in ONE_ULP:
        return ulps * eps, 0.0
    # tanh/sigmoid run in f32 (f16 data: converted, one rounding at the end).
    # f32: four rounded steps, each error damped by e/(1+e) <= 1 (sigmoid);
    # tanh = 1 - 2/(exp(2x)+1) has an absolute error of a few ulps of 1.
    eps32 = float(np.finfo(np.float32).eps)
    if elem == "f16":
        return eps, (0.0 if op == "sigmoid" else 4 * eps32)
    if op == "sigmoid":
        return 8 * eps32, 1e-30
    return 8 * eps32, 6 * eps32


def values(op: str, elem: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Random values in the op's interesting range, edge values first."""
    dt = NP[elem]
    if op == "exp":
        lo, hi = -12.0, 12.0
        edges = [0.0, 1.0, -1.0, 11.0, 12.0, -20.0] + ([100.0, -110.0] if elem == "f32" else [])
    elif op in ("ln", "sqrt", "rsqrt"):
        lo, hi = -1.0, 50.0
        edges = [0.0, -1.0, 1.0, 4.0, -0.5, 1e-3]
    elif op == "reciprocal":
        lo, hi = -8.0, 8.0
        edges = [0.0, 1.0, -2.0, 0.5]
    elif op in ("tanh", "sigmoid"):
        lo, hi = -20.0, 20.0
        edges = [0.0, 1e-3, -1e-3, 12.0, -12.0, 20.0]
    else:
        lo, hi = -4.0, 4.0
        edges = [0.0, -1.0, 1.0, 2.5]
    x = rng.uniform(lo, hi, size=n)
    k = min(n, len(edges))
    x[:k] = edges[:k]
    return x.astype(dt)


def reference(op: str, elem: str, *args: np.ndarray) -> np.ndarray:
    """numpy in float64, rounded once to the element type."""
    with np.errstate(all="ignore"):
        if op in BINARY:
            r = BINARY[op](*(a.astype(np.float64) for a in args))
        elif op in SCALAR:
            fn, s = SCALAR[op]
            r = fn(args[0].astype(np.float64), s)
        else:
            r = UNARY[op](args[0].astype(np.float64))
        return r.astype(NP[elem])


def case(op: str, elem: str, n: int, seed: int = 0, name: str = "f"):
    """(source, inputs) of one op on n elements with its edge values."""
    rng = np.random.default_rng(seed + n)
    t = memref([n], elem)
    if op in BINARY:
        a = values(op, elem, n, rng)
        b = values(op, elem, n, rng)[::-1].copy()
        if op == "div":
            b[: min(n, 3)] = [0.0, 2.0, -0.0][: min(n, 3)]  # x/0 -> inf, 0/0 -> nan
        return func(name, f"ascend.{op}", [t, t, t]), [a, b, np.zeros(n, NP[elem])]
    inputs = [values(op, elem, n, rng), np.zeros(n, NP[elem])]
    if op in SCALAR:
        return func(name, f"ascend.{op}", [t, t], f"scalar = {SCALAR[op][1]} : f64"), inputs
    return func(name, f"ascend.{op}", [t, t]), inputs


def verify(op: str, elem: str, n: int, inputs, result) -> None:
    expected = reference(op, elem, *inputs[:-1])
    rtol, atol = tolerance(op, elem)
    assert_matches(result.outputs[-1], expected, rtol, atol, f"{op} {elem} n={n}")
    for i, a in enumerate(inputs[:-1]):  # inputs untouched
        assert np.array_equal(result.outputs[i], a, equal_nan=True)


def check(op: str, elem: str, n: int, lowering: str = LOWER, seed: int = 0) -> None:
    src, inputs = case(op, elem, n, seed)
    verify(op, elem, n, inputs, run(src, lowering, inputs))


# Sizes under one 32-byte granule use the padded-argument convention.
TINY = [("f16", 1), ("f16", 15), ("f32", 1)]


@pytest.mark.parametrize("elem", ["f16", "f32"])
@pytest.mark.parametrize("op", list(BINARY) + list(SCALAR) + list(UNARY))
def test_op_sizes(op, elem):
    """Every size of SIZES that is at least one granule, compiled as one
    module (one function per size) and simulated per function."""
    sizes = [n for n in SIZES if n * NP[elem]().itemsize >= 32]
    cases = {n: case(op, elem, n, name=f"f{n}") for n in sizes}
    module, serialize = compile_source("".join(src for src, _ in cases.values()), LOWER)
    for n, (_, inputs) in cases.items():
        verify(op, elem, n, inputs, simulate_strict(module, inputs, serialize, entry=f"f{n}"))


@pytest.mark.parametrize("elem,n", TINY)
@pytest.mark.parametrize("op", list(BINARY) + list(SCALAR) + list(UNARY))
def test_op_tiny_sizes(op, elem, n):
    check(op, elem, n)


@pytest.mark.parametrize("elem", ["f16", "f32"])
@pytest.mark.parametrize("op", list(BINARY) + list(SCALAR) + list(UNARY))
def test_op_several_small_chunks(op, elem):
    check(op, elem, 1000, SMALL_CHUNKS)


def chunk_of(op_bytes_per_elem: int, lanes: int) -> int:
    """The chunk the pass picks with the default ub-fraction (0.5)."""
    ub = get_target().capacity("ub")
    return (ub // 2 // op_bytes_per_elem) // lanes * lanes


@pytest.mark.parametrize("op,elem", [("add", "f16"), ("exp", "f32")])
def test_one_chunk_plus_one(op, elem):
    # add f16 in place: 2 buffers x 2 B; exp f32 in place: 1 buffer x 4 B.
    chunk = chunk_of(4, 128) if op == "add" else chunk_of(4, 64)
    check(op, elem, chunk + 1)


@pytest.mark.parametrize("op,elem", [("add", "f16")])
def test_several_full_chunks(op, elem):
    check(op, elem, 3 * chunk_of(4, 128) + 5)


@pytest.mark.slow
@pytest.mark.parametrize("elem", ["f16", "f32"])
@pytest.mark.parametrize("op", list(BINARY) + list(SCALAR) + list(UNARY))
def test_op_full_chunks_slow(op, elem):
    es = 2 if elem == "f16" else 4
    per_elem = 2 * es if op in BINARY else es
    chunk = chunk_of(per_elem, 256 // es)
    check(op, elem, chunk + 1)
    check(op, elem, 2 * chunk + 77, seed=1)


# --- clamp -------------------------------------------------------------------


@pytest.mark.parametrize("n", SIZES + [1000])
@pytest.mark.parametrize("elem", ["f16", "f32"])
def test_clamp(elem, n):
    rng = np.random.default_rng(n)
    x = rng.uniform(-4, 4, size=n).astype(NP[elem])
    t = memref([n], elem)
    src = func("f", "ascend.clamp", [t, t], "min = -1.5 : f64, max = 2.25 : f64")
    res = run(src, SMALL_CHUNKS, [x, np.zeros(n, NP[elem])])
    assert np.array_equal(res.outputs[1], np.clip(x, NP[elem](-1.5), NP[elem](2.25)))


# --- in place ----------------------------------------------------------------


@pytest.mark.parametrize("n", [129, 1000])
def test_in_place_with_overlapped_tail(n):
    """out aliases lhs: the overlapped tail must read the original inputs."""
    rng = np.random.default_rng(7)
    a = rng.uniform(-4, 4, n).astype(np.float16)
    b = rng.uniform(-4, 4, n).astype(np.float16)
    t = memref([n], "f16")
    src = (f"func.func @f(%a: {t}, %b: {t}) {{\n"
           f'  "ascend.add"(%a, %b, %a) : ({t}, {t}, {t}) -> ()\n  return\n}}\n')
    res = run(src, SMALL_CHUNKS, [a, b])
    assert np.array_equal(res.outputs[0], a + b)


# --- multi-dimensional shapes and broadcasting ---------------------------------


BROADCASTS = [
    # (lhs shape, rhs shape, out shape)
    ((4, 33), (4, 33), (4, 33)),          # same shape, flattened
    ((3, 5, 7), (), (3, 5, 7)),           # rank-0 scalar
    ((300,), (1,), (300,)),               # one-element scalar
    ((1,), (129,), (129,)),               # scalar on the left
    ((28, 768), (768,), (28, 768)),       # bias row
    ((5, 64), (1, 64), (5, 64)),          # row as [1, N]
    ((40, 64), (40, 1), (40, 64)),        # column, tail rows overlap
    ((3, 7, 32), (3, 7, 1), (3, 7, 32)),  # column with batch dims, padded column
    ((16, 1), (16, 48), (16, 48)),        # column on the left
    ((20, 128), (128,), (20, 128)),
    # last dimension not whole blocks: whole blocks + an end block per row
    ((5, 100), (100,), (5, 100)),
    ((40, 21), (40, 1), (40, 21)),
    ((3, 4, 37), (37,), (3, 4, 37)),
    ((33, 19), (1, 19), (33, 19)),
    # both operands broadcast (outer product / sum)
    ((40, 1), (64,), (40, 64)),
    ((40, 1), (1, 37), (40, 37)),
]


def broadcast_case(shapes, op: str, elem: str, name: str = "f"):
    ls, rs, os_ = shapes
    rng = np.random.default_rng(len(ls) * 100 + len(rs))
    a = rng.uniform(-4, 4, ls).astype(NP[elem])
    b = rng.uniform(-4, 4, rs).astype(NP[elem])
    src = func(name, f"ascend.{op}", [memref(ls, elem), memref(rs, elem), memref(os_, elem)])
    return src, [a, b, np.zeros(os_, NP[elem])]


@pytest.mark.parametrize("elem", ["f16", "f32"])
@pytest.mark.parametrize("op", ["sub"])
def test_broadcast(op, elem, shapes_list=BROADCASTS):
    """Every broadcast shape of BROADCASTS, one module (a function each)."""
    cases = [broadcast_case(sh, op, elem, f"f{i}") for i, sh in enumerate(shapes_list)]
    module, serialize = compile_source("".join(c[0] for c in cases),
                                       "npu-lower-elementwise{max-chunk=1024}")
    tiny = []
    for i, (shapes, (_, inputs)) in enumerate(zip(shapes_list, cases)):
        if any(x.nbytes < 32 for x in inputs):
            tiny.append(shapes)  # padded-argument convention: see test_broadcast_tiny
            continue
        res = simulate_strict(module, inputs, serialize, entry=f"f{i}")
        a, b, _ = inputs
        assert np.array_equal(res.outputs[2], reference(op, elem, a, b).reshape(shapes[2])), shapes
    assert len(tiny) == len([s for s in shapes_list if s in TINY_BROADCASTS])


# Shapes whose scalar operand is one element in its own GM tensor.
TINY_BROADCASTS = [s for s in BROADCASTS if int(np.prod(s[1] or (1,))) == 1
                   or int(np.prod(s[0] or (1,))) == 1]


@pytest.mark.parametrize("elem", ["f16", "f32"])
@pytest.mark.parametrize("shapes", TINY_BROADCASTS, ids=lambda s: f"{s[0]}-{s[1]}")
def test_broadcast_tiny(shapes, elem):
    src, inputs = broadcast_case(shapes, "sub", elem)
    res = run(src, "npu-lower-elementwise{max-chunk=1024}", inputs)
    a, b, _ = inputs
    assert np.array_equal(res.outputs[2], reference("sub", elem, a, b).reshape(shapes[2]))


@pytest.mark.slow
@pytest.mark.parametrize("elem", ["f16", "f32"])
@pytest.mark.parametrize("op", ["add", "mul", "max", "min"])
def test_broadcast_more_ops(op, elem):
    test_broadcast(op, elem, [s for s in BROADCASTS if s not in TINY_BROADCASTS])


# --- cast ----------------------------------------------------------------------


def _round(x: np.ndarray, mode: str) -> np.ndarray:
    return {"rint": np.rint, "none": np.rint, "floor": np.floor, "ceil": np.ceil,
            "trunc": np.trunc,
            "round": lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5)}[mode](x)


CASTS = [("f16", "f32", "none"), ("f32", "f16", "rint"), ("f32", "f16", "floor"),
         ("f32", "f16", "ceil"), ("f32", "f16", "trunc"), ("f16", "i32", "rint"),
         ("f32", "i32", "floor"), ("f32", "i32", "ceil"), ("f32", "i32", "trunc"),
         ("f32", "i32", "round"), ("i8", "f16", "none"), ("f16", "i8", "trunc")]


def cast_inputs(src: str, n: int, rng) -> np.ndarray:
    if src == "i8":
        x = rng.integers(-128, 128, n)
        x[: min(n, 3)] = [-128, 127, 0][: min(n, 3)]
        return x.astype(np.int8)
    x = rng.uniform(-100, 100, n) * (700 if src == "f32" else 1)  # f32: past f16's range too
    edges = [0.0, -0.0, 2.5, -2.5, 3.5, -0.5, 126.7, -127.4, 1e-8]
    if src == "f32":
        edges += [65519.0, -70000.0, 65520.0]  # around and past f16's largest value
    k = min(n, len(edges))
    x[:k] = edges[:k]
    return x.astype(NP[src])


def cast_expected(x: np.ndarray, dst: str, mode: str) -> np.ndarray:
    if dst in ("i32", "i8"):
        return _round(x.astype(np.float64), mode).astype(NP[dst])
    with np.errstate(over="ignore"):  # beyond f16's range: inf, then stepped back below
        y = x.astype(NP[dst])  # round to nearest even (f16<->f32; i8->f16 is exact)
        if dst != "f16" or mode not in ("floor", "ceil", "trunc"):
            return y
        # Directed rounding: step to the neighbouring f16 on the wrong side
        # (so floor of a huge value is 65504, not inf).
        xd, yd = x.astype(np.float64), y.astype(np.float64)
        down = np.nextafter(y, np.float16(-np.inf))
        up = np.nextafter(y, np.float16(np.inf))
    if mode == "floor":
        return np.where(yd > xd, down, y)
    if mode == "ceil":
        return np.where(yd < xd, up, y)
    # trunc: toward zero
    return np.where((xd >= 0) & (yd > xd), down, np.where((xd < 0) & (yd < xd), up, y))


CAST_SIZES = [1, 15, 17, 128, 1000]


def _tiny_cast(src: str, dst: str, n: int) -> bool:
    return n * min(np.dtype(NP[src]).itemsize, np.dtype(NP[dst]).itemsize) < 32


def cast_case(src: str, dst: str, mode: str, n: int, name: str = "f"):
    x = cast_inputs(src, n, np.random.default_rng(n))
    text = func(name, "ascend.cast", [memref([n], src), memref([n], dst)],
                f'round_mode = "{mode}"')
    return text, [x, np.zeros(n, NP[dst])]


def verify_cast(src: str, dst: str, mode: str, x: np.ndarray, out: np.ndarray) -> None:
    expected = cast_expected(x, dst, mode)
    assert out.dtype == expected.dtype
    assert np.array_equal(out, expected), (
        f"{src}->{dst} {mode} n={x.size}: first mismatch at "
        f"{np.flatnonzero(out != expected)[:5]}")


@pytest.mark.parametrize("src,dst,mode", CASTS, ids=lambda v: str(v))
def test_cast(src, dst, mode, sizes=CAST_SIZES):
    """All sizes of at least one granule, one module (a function per size)."""
    cases = {n: cast_case(src, dst, mode, n, f"f{n}") for n in sizes
             if not _tiny_cast(src, dst, n)}
    module, serialize = compile_source("".join(t for t, _ in cases.values()), SMALL_CHUNKS)
    for n, (_, inputs) in cases.items():
        res = simulate_strict(module, inputs, serialize, entry=f"f{n}")
        verify_cast(src, dst, mode, inputs[0], res.outputs[1])


@pytest.mark.parametrize("src,dst,mode,n", [c + (n,) for c in CASTS for n in CAST_SIZES
                                            if _tiny_cast(c[0], c[1], n)], ids=str)
def test_cast_tiny(src, dst, mode, n):
    text, inputs = cast_case(src, dst, mode, n)
    res = run(text, SMALL_CHUNKS, inputs)
    verify_cast(src, dst, mode, inputs[0], res.outputs[1])


@pytest.mark.slow
@pytest.mark.parametrize("src,dst,mode", CASTS, ids=lambda v: str(v))
def test_cast_more_sizes(src, dst, mode):
    test_cast(src, dst, mode, sizes=[16, 127, 129, 4097])


def test_cast_one_chunk_plus_one():
    # f16 -> f32: 2 + 4 bytes per element, 64 lanes.
    n = chunk_of(6, 64) + 1
    x = cast_inputs("f16", n, np.random.default_rng(3))
    text = func("f", "ascend.cast", [memref([n], "f16"), memref([n], "f32")], 'round_mode = "none"')
    res = run(text, LOWER, [x, np.zeros(n, np.float32)])
    assert np.array_equal(res.outputs[1], x.astype(np.float32))


@pytest.mark.parametrize("elem", ["f16", "f32"])
@pytest.mark.parametrize("op", ["sub"])
@pytest.mark.parametrize("scalar_first", [False, True])
@pytest.mark.parametrize("shape", [(300,), (4, 64), (17,)], ids=str)
def test_scalar_operand_in_parameter_buffer(shape, scalar_first, op, elem):
    """A one-element operand that is a view into a larger GM buffer (a scale
    kept among other parameters): its granule load stays inside the buffer,
    so the vcadd broadcast and the operand order are checked end to end."""
    n = int(np.prod(shape))
    t, tp = memref(shape, elem), memref([64], elem)
    ts = f'memref<1xf{elem[1:]}, strided<[1], offset: 5>, "gm">'
    lhs, rhs = ("%s", "%a") if scalar_first else ("%a", "%s")
    lt, rt = (ts, t) if scalar_first else (t, ts)
    src = (f"func.func @f(%a: {t}, %p: {tp}, %c: {t}) {{\n"
           f"  %s = memref.subview %p[5] [1] [1] : {tp} to {ts}\n"
           f'  "ascend.{op}"({lhs}, {rhs}, %c) : ({lt}, {rt}, {t}) -> ()\n  return\n}}\n')
    rng = np.random.default_rng(n)
    a = rng.uniform(-4, 4, shape).astype(NP[elem])
    p = rng.uniform(-4, 4, 64).astype(NP[elem])
    res = run(src, "npu-lower-elementwise{max-chunk=128}", [a, p, np.zeros(shape, NP[elem])])
    s = p[5:6]
    expected = reference(op, elem, s, a) if scalar_first else reference(op, elem, a, s)
    assert np.array_equal(res.outputs[2], expected.reshape(shape))


def _random_case(seed: int):
    """A random op, dtype, shape and broadcast kind (row/column need the last
    dimension in whole 32-byte blocks)."""
    rng = np.random.default_rng(seed)
    elem = str(rng.choice(["f16", "f32"]))
    op = str(rng.choice(list(BINARY)))
    rank = int(rng.integers(1, 4))
    shape = [int(d) for d in rng.integers(1, 40, rank)]
    kind = str(rng.choice(["full", "row", "column", "full"]))
    block = 16 if elem == "f16" else 8
    if kind != "full" and rank >= 2:
        # at least one block (whole blocks or not)
        shape[-1] = block + int(rng.integers(0, 5 * block))
        rhs = [shape[-1]] if kind == "row" else shape[:-1] + [1]
    else:
        rhs = list(shape)
    if int(np.prod(shape)) * (2 if elem == "f16" else 4) < 32:
        shape[-1] += block  # keep clear of the padded-granule case (see vec_common)
        rhs = list(shape) if kind == "full" or rank < 2 else rhs
    return elem, op, shape, rhs, rng


@pytest.mark.parametrize("seed", range(12))
def test_random_shapes(seed):
    elem, op, shape, rhs, rng = _random_case(seed)
    a = rng.uniform(-4, 4, shape).astype(NP[elem])
    b = rng.uniform(0.5, 4, rhs).astype(NP[elem])
    src = func("f", f"ascend.{op}", [memref(shape, elem), memref(rhs, elem), memref(shape, elem)])
    chunk = int(rng.choice([128, 512, 0]))
    lowering = f"npu-lower-elementwise{{max-chunk={chunk}}}" if chunk else LOWER
    res = run(src, lowering, [a, b, np.zeros(shape, NP[elem])])
    expected = reference(op, elem, a, b)
    rtol = float(np.finfo(NP[elem]).eps) if op == "div" else 0.0
    assert_matches(res.outputs[2], expected, rtol, 0.0, f"{op} {elem} {shape} {rhs}")


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(12, 200))
def test_random_shapes_slow(seed):
    test_random_shapes(seed)


@pytest.mark.parametrize("n", [1, 9, 64, 65, 1000])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "max", "min"])
def test_binary_i32(op, n):
    """i32 arithmetic wraps around (numpy int32 does too)."""
    rng = np.random.default_rng(n)
    a = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    b = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    t = memref([n], "i32")
    res = run(func("f", f"ascend.{op}", [t, t, t]), SMALL_CHUNKS, [a, b, np.zeros(n, np.int32)])
    with np.errstate(over="ignore"):
        assert np.array_equal(res.outputs[2], BINARY[op](a, b))


@pytest.mark.parametrize("shapes", [((300,), (1,)), ((1,), (129,)), ((3, 5, 7), ()),
                                    ((40, 64), (40, 1)), ((7, 100), (100,))], ids=str)
@pytest.mark.parametrize("op", ["add", "mul", "max"])
def test_binary_i32_broadcast(op, shapes):
    """i32 with a scalar, column or row operand (the broadcast moves data
    with vnchwconv, which handles any 4-byte type)."""
    ls, rs = shapes
    out = np.broadcast_shapes(ls, rs)
    rng = np.random.default_rng(len(ls) + 3 * len(rs))
    a = rng.integers(-2**31, 2**31, ls, dtype=np.int64).astype(np.int32)
    b = rng.integers(-2**31, 2**31, rs, dtype=np.int64).astype(np.int32)
    src = func("f", f"ascend.{op}", [memref(list(ls), "i32"), memref(list(rs), "i32"),
                                     memref(list(out), "i32")])
    res = run(src, SMALL_CHUNKS, [a, b, np.zeros(out, np.int32)])
    with np.errstate(over="ignore"):
        assert np.array_equal(res.outputs[2], BINARY[op](a, b))


@pytest.mark.parametrize("shape,rhs", [((40, 64), (40, 1)), ((40, 21), (40, 1)), ((7, 100), (100,))],
                         ids=str)
def test_in_place_rows(shape, rhs):
    """out aliases lhs with a row/column operand: overlapped row tails (and
    the end block of unaligned rows) must use the original inputs."""
    rng = np.random.default_rng(8)
    a = rng.uniform(-4, 4, shape).astype(np.float16)
    b = rng.uniform(-4, 4, rhs).astype(np.float16)
    t, tb = memref(shape, "f16"), memref(rhs, "f16")
    src = (f"func.func @f(%a: {t}, %b: {tb}) {{\n"
           f'  "ascend.add"(%a, %b, %a) : ({t}, {tb}, {t}) -> ()\n  return\n}}\n')
    res = run(src, "npu-lower-elementwise{max-chunk=1024}", [a, b])
    assert np.array_equal(res.outputs[0], a + b)
