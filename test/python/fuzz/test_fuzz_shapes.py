"""Shape fuzzing per op family: random shapes and dtypes of valid programs,
compiled by `npu-lower`, simulated strictly and compared with the numpy
reference (`npu-run --check`, in-process). A case passes when the check
passes; a program the compiler cannot handle must say so with a located
error naming a documented limit, never a wrong result or an internal error.
"""

from __future__ import annotations

import random
import re

import pytest

from npu.tools import npu_run

import fuzz_lib

FLOATS = ("f16", "f32")
BINARY = ("add", "sub", "mul", "div", "max", "min")
UNARY = ("relu", "abs", "neg", "exp", "ln", "sqrt", "rsqrt", "reciprocal", "tanh", "sigmoid")
SCALAR = ("adds", "muls", "maxs", "mins")
CAST_PAIRS = (("f16", "f32"), ("f32", "f16"), ("f16", "i32"), ("f32", "i32"), ("i8", "f16"),
              ("f16", "i8"))
ROUND_MODES = ("rint", "floor", "ceil", "trunc", "round", "none")
TRANSPOSES = {2: ((1, 0),), 3: ((0, 2, 1),), 4: ((0, 2, 1, 3),)}

# Located refusals of documented limits of the lowerings (not bugs).
ACCEPTED_REFUSALS = tuple(re.compile(p) for p in (
    r"the reduced dimension \(\d+\) must be at least one 32-byte block",
    r"transposing a \d+x\d+ matrix needs at least 16 rows and \d+ columns",
    r"permutation \[0, 2, 1, 3\] is lowered as block copies and needs the last dimension",
    # The whole-tensor fallbacks for rows shorter than a block (reduce_small.py)
    # and for gathers (transpose_general.py) hold the tensor in UB by design.
    r"holds the whole tensor in UB",
))

CASES_PER_FAMILY, SLOW_PER_FAMILY = 10, 150


def memref(shape, dtype: str) -> str:
    return "memref<" + "".join(f"{d}x" for d in shape) + f'{dtype}, "gm">'


def program(op: str, types: list[str], attrs: str = "") -> str:
    args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(types))
    vals = ", ".join(f"%a{i}" for i in range(len(types)))
    attr_text = f" {{{attrs}}}" if attrs else ""
    return (f"func.func @k({args}) {{\n  \"ascend.{op}\"({vals}){attr_text} : "
            f"({', '.join(types)}) -> ()\n  return\n}}\n")


def dims(rng: random.Random, rank: int, biggest: int = 4096) -> list[int]:
    """Mostly small, sometimes at or around the block, repeat and UB edges."""
    edge = (1, 2, 15, 16, 17, 31, 32, 33, 64, 127, 128, 129, 255, 256, 257, 1000, 2048, 4096)
    out = [rng.choice(edge) if rng.random() < 0.5 else rng.randint(1, 300) for _ in range(rank)]
    while len(out) > 1 and _prod(out) > 1 << 17:
        out[rng.randrange(len(out))] = rng.randint(1, 64)
    return [min(d, biggest) for d in out]


def _prod(xs) -> int:
    p = 1
    for x in xs:
        p *= x
    return p


def elementwise(rng: random.Random) -> str:
    shape = dims(rng, rng.randint(1, 3))
    kind = rng.choice(("binary", "unary", "scalar"))
    if kind == "binary":
        op = rng.choice(BINARY)
        dtype = rng.choice(FLOATS if op == "div" else FLOATS + ("i32",))
        return program(op, [memref(shape, dtype)] * 3)
    dtype = rng.choice(FLOATS)
    if kind == "unary":
        return program(rng.choice(UNARY), [memref(shape, dtype)] * 2)
    return program(rng.choice(SCALAR), [memref(shape, dtype)] * 2,
                   f"scalar = {rng.choice((0.5, -2.0, 3.25, 0.0))} : f64")


def cast(rng: random.Random) -> str:
    src, dst = rng.choice(CAST_PAIRS)
    shape = dims(rng, rng.randint(1, 2))
    return program("cast", [memref(shape, src), memref(shape, dst)],
                   f'round_mode = "{rng.choice(ROUND_MODES)}"')


def reduce(rng: random.Random) -> str:
    shape = dims(rng, rng.randint(1, 3))
    out = shape[:-1] or [1]
    dtype = rng.choice(FLOATS)
    return program(rng.choice(("reduce_sum", "reduce_max")), [memref(shape, dtype), memref(out, dtype)])


def transpose(rng: random.Random) -> str:
    rank = rng.randint(2, 4)
    perm = rng.choice(TRANSPOSES[rank])
    shape = dims(rng, rank, 512)
    if rng.random() < 0.8:  # mostly shapes the lowering supports, so numerics get checked
        moved = (-2, -1) if perm != (0, 2, 1, 3) else (-3, -2)
        for axis in moved:
            shape[axis] = max(shape[axis], 16)
        if perm == (0, 2, 1, 3):
            shape[-1] = -(-shape[-1] // 16) * 16
    dtype = rng.choice(FLOATS + ("i32",))
    out = [shape[p] for p in perm]
    return program("transpose", [memref(shape, dtype), memref(out, dtype)],
                   f"permutation = array<i64: {', '.join(map(str, perm))}>")


def fractalize(rng: random.Random) -> str:
    rows, cols = dims(rng, 2, 1024)
    dtype = rng.choice(FLOATS)
    nz = [-(-cols // 16), -(-rows // 16), 16, 16]
    if rng.random() < 0.5:
        return program("fractalize", [memref([rows, cols], dtype), memref(nz, dtype)])
    return program("defractalize", [memref(nz, dtype), memref([rows, cols], dtype)])


def matmul(rng: random.Random) -> str:
    m1, k1, n1 = (rng.randint(1, 8) for _ in range(3))
    out = rng.choice(("f32", "f16"))
    a, b, c = [k1, m1, 16, 16], [n1, k1, 16, 16], [n1, m1, 16, 16]
    if rng.random() < 0.3:
        batch = rng.randint(1, 3)
        return program("batch_matmul", [memref([batch] + a, "f16"), memref([batch] + b, "f16"),
                                        memref([batch] + c, out)])
    return program("matmul", [memref(a, "f16"), memref(b, "f16"), memref(c, out)])


FAMILIES = {"elementwise": elementwise, "cast": cast, "reduce": reduce, "transpose": transpose,
            "fractalize": fractalize, "matmul": matmul}


def _cases() -> list:
    return [pytest.param(family, i, id=f"{family}-{i:03d}",
                         marks=(pytest.mark.slow,) if i >= CASES_PER_FAMILY else ())
            for family in FAMILIES for i in range(SLOW_PER_FAMILY)]


@pytest.mark.parametrize("family, seed", _cases())
def test_shapes_compute_what_numpy_computes(family, seed, tmp_path):
    rng = random.Random(f"{family}-{seed}")
    text = FAMILIES[family](rng)
    path = fuzz_lib.write_case(tmp_path, text)
    argv = [str(path), "--check", "--seed", str(seed)]
    outcome = fuzz_lib.run_tool(npu_run.main, argv)
    error = next((line for line in outcome.err.splitlines() if ": error: " in line), "")
    found = fuzz_lib.problems(outcome, str(path))
    if outcome.code != 0 and not found:
        if not any(p.search(error) for p in ACCEPTED_REFUSALS):
            found.append(f"refused or wrong: {error[:300]}")
    assert not found, fuzz_lib.report(f"{family} | npu-run {' '.join(argv[1:])}", seed, [], text,
                                      outcome, found)
