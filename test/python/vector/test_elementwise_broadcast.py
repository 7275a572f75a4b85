"""npu-lower-elementwise with broadcast operands on the simulator vs numpy:
multi-dimensional shapes, scalar, row and column operands (f16, f32, i32),
a scalar that is a view into a parameter buffer, random shapes, and an
output aliasing an input with a row or column operand."""

from __future__ import annotations

import numpy as np
import pytest

from elementwise_reference import BINARY, LOWER, SMALL_CHUNKS, reference
from vec_common import NP, assert_matches, compile_source, func, memref, run, simulate_strict

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
    assert_broadcast(shapes, "sub", elem, "npu-lower-elementwise{max-chunk=1024}")


def assert_broadcast(shapes, op: str, elem: str, pipeline: str) -> None:
    """One broadcast case of `op`, lowered by `pipeline`, equals numpy's."""
    src, inputs = broadcast_case(shapes, op, elem)
    res = run(src, pipeline, inputs)
    a, b, _ = inputs
    assert np.array_equal(res.outputs[2], reference(op, elem, a, b).reshape(shapes[2]))


@pytest.mark.slow
@pytest.mark.parametrize("elem", ["f16", "f32"])
@pytest.mark.parametrize("op", ["add", "mul", "max", "min"])
def test_broadcast_more_ops(op, elem):
    test_broadcast(op, elem, [s for s in BROADCASTS if s not in TINY_BROADCASTS])


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


# A row or column operand whose rows are longer than one vector repeat
# stride reaches (255 blocks: 2,040 f32 or 4,080 f16 elements): the
# attention mask [1, 1, S, S] added to the scores [1, H, S, S] of an unfused
# decoder, whose rows of S * S elements did not lower.
LONG_ROWS = [((2, 64, 64), (1, 64, 64), (2, 64, 64)),    # a row of 4,096
             ((3, 4100), (4100,), (3, 4100)),             # not whole blocks
             ((2, 3, 4104), (4104,), (2, 3, 4104))]       # over a leading dim


@pytest.mark.parametrize("elem", ["f16", "f32"])
@pytest.mark.parametrize("shapes", LONG_ROWS, ids=lambda s: f"{s[0]}-{s[1]}")
def test_rows_longer_than_the_repeat_stride(shapes, elem):
    assert_broadcast(shapes, "add", elem, "npu-lower-elementwise")


# A column operand beside rows longer than the repeat stride: a
# squeeze-excite scale [1, C, 1, 1] times its feature map [1, C, H, W]
# (MobileNetV3, EfficientNet), whose rows of H * W did not lower. Each row
# is computed on its own, its repeats stepping along the row.
LONG_COLUMNS = [((1, 6, 70, 70), (1, 6, 1, 1), (1, 6, 70, 70)),  # 4,900: not whole blocks
                ((20, 1), (20, 4096), (20, 4096)),                # the column on the left
                ((2, 5, 4104), (2, 5, 1), (2, 5, 4104))]          # over a leading dim


@pytest.mark.parametrize("pipeline", ["npu-lower-elementwise", "npu-lower-elementwise{max-chunk=1024}"])
@pytest.mark.parametrize("elem", ["f16", "f32"])
@pytest.mark.parametrize("shapes", LONG_COLUMNS, ids=lambda s: f"{s[0]}-{s[1]}")
def test_columns_beside_rows_longer_than_the_repeat_stride(shapes, elem, pipeline):
    assert_broadcast(shapes, "mul", elem, pipeline)
