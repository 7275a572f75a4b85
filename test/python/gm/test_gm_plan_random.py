"""Random graphs of GM temporaries (elementwise ops, reshapes, hoisted
allocs, deallocs): the planned program must compute exactly what the
unplanned one computes, in the numpy reference, where an overlap of two
live tensors in the workspace would corrupt a value. Cheap (no simulation),
so many graphs; the simulator-backed tests are in test_gm_plan.py."""

from __future__ import annotations

import random

import numpy as np
import pytest

from gm_programs import mt
from helpers import compile_program, random_inputs
from npu.ir import functions
from npu.passes.plan_gm import plan_function
from npu.reference import evaluate
from npu.target import get_target

NUMELS = (64, 128, 256, 512, 1024, 4096)
UNARY = ('"ascend.relu"', '"ascend.neg"', '"ascend.abs"')
BINARY = ('"ascend.add"', '"ascend.sub"', '"ascend.max"', '"ascend.mul"')


def _shape(rng: random.Random, n: int) -> tuple[int, ...]:
    return rng.choice([(n,), (n // 16, 16), (n // 32, 2, 16)])


def random_graph(seed: int) -> str:
    rng = random.Random(seed)
    allocs, body = [], []
    tensors: list[tuple[str, tuple[int, ...]]] = []
    args = []
    for i in range(3):
        shape = _shape(rng, rng.choice(NUMELS))
        args.append(f"%in{i}: {mt(shape, 'f32')}")
        tensors.append((f"%in{i}", shape))
    counter = [0]

    def fresh(prefix: str) -> str:
        counter[0] += 1
        return f"%{prefix}{counter[0]}"

    def as_shape(value: str, shape: tuple[int, ...], want: tuple[int, ...]) -> str:
        """`value` reshaped to `want` (same element count) through views."""
        if shape == want:
            return value
        n = int(np.prod(shape))
        if len(shape) > 1:
            flat = fresh("c")
            dims = ", ".join(map(str, range(len(shape))))
            body.append(f"  {flat} = memref.collapse_shape {value} [[{dims}]] : "
                        f"{mt(shape, 'f32')} into {mt((n,), 'f32')}")
            value, shape = flat, (n,)
        if want == shape:
            return value
        out = fresh("x")
        dims = ", ".join(map(str, range(len(want))))
        body.append(f"  {out} = memref.expand_shape {value} [[{dims}]] output_shape "
                    f"[{', '.join(map(str, want))}] : {mt(shape, 'f32')} into {mt(want, 'f32')}")
        return out

    hoist = rng.random() < 0.4
    for _ in range(rng.randint(6, 16)):
        a, a_shape = rng.choice(tensors)
        n = int(np.prod(a_shape))
        out_shape = _shape(rng, n)
        result = fresh("t")
        (allocs if hoist else body).append(f"  {result} = memref.alloc() : {mt(out_shape, 'f32')}")
        partners = [t for t in tensors if int(np.prod(t[1])) == n]
        src = as_shape(a, a_shape, out_shape)
        if rng.random() < 0.5 and len(partners) > 1:
            b, b_shape = rng.choice(partners)
            other = as_shape(b, b_shape, out_shape)
            t = mt(out_shape, "f32")
            body.append(f"  {rng.choice(BINARY)}({src}, {other}, {result}) : ({t}, {t}, {t}) -> ()")
        else:
            t = mt(out_shape, "f32")
            body.append(f"  {rng.choice(UNARY)}({src}, {result}) : ({t}, {t}) -> ()")
        tensors.append((result, out_shape))
    # Two results leave through output arguments; some temporaries are
    # deallocated at the end.
    for k, (value, shape) in enumerate(rng.sample(tensors[3:], 2)):
        args.append(f"%out{k}: {mt(shape, 'f32')}")
        t = mt(shape, "f32")
        body.append(f'  "ascend.muls"({value}, %out{k}) {{scalar = 1.0 : f64}} : ({t}, {t}) -> ()')
    for value, shape in tensors[3:]:
        if rng.random() < 0.3:
            body.append(f"  memref.dealloc {value} : {mt(shape, 'f32')}")
    return (f"func.func @g({', '.join(args)}) {{\n" + "\n".join(allocs + body)
            + "\n  return\n}\n")


@pytest.mark.parametrize("seed", range(40))
def test_planned_graph_computes_what_the_unplanned_one_does(seed):
    source = random_graph(seed)
    inputs = random_inputs(source, seed=seed)
    unplanned_module = compile_program(source, "")  # modules outlive their functions' use
    expected = evaluate(functions(unplanned_module)[0], inputs)
    algorithm = ("greedy-by-size", "pushdown")[seed % 2]
    planned_module = compile_program(source, f"npu-plan-gm{{algorithm={algorithm}}}")
    planned = functions(planned_module)[0]
    got = evaluate(planned, inputs)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)
    assert not any(np.isnan(e).any() for e in expected)
    plan = planned.attributes["npu.gm_plan"]
    assert plan["lower_bound"].value <= plan["allocated"].value <= plan["sum"].value


def test_random_graphs_reuse_bytes():
    """The graphs above are not trivially planned: most share bytes."""
    target = get_target()
    reused = 0
    for seed in range(40):
        module = compile_program(random_graph(seed), "")
        plan = plan_function(functions(module)[0], target, apply=False)
        reused += plan.allocated < plan.total
    assert reused >= 30
