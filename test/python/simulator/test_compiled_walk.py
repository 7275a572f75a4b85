"""The compiled scalar walk (`_cengine.Walker`, simulator/walk_code.py)
against the closures it replaces: random scalar programs (every arith op the
walker runs, on negative, boolean and near-overflow values; loops with
carried values, ifs with results, the block index) must leave every slot
with the same value and type and the same trailing scalar cycles, or give
the core back to Python (overflow, division by zero, a bad step); and
`Program.walk` gives the same trace, cycles or error on both engines.
test_compiled_engine.py runs whole hivm programs on both."""

from __future__ import annotations

import os
import random

import pytest

from npu.ir import make_context, parse_module
from npu.simulator import SimulationError, compiled, walk_code
from npu.simulator.core import find_entry
from npu.simulator.program import Decoder
from npu.target import get_target

pytestmark = pytest.mark.skipif(not compiled.available() and not os.environ.get("CI"),
                                reason="npu.simulator._cengine is not built (no C compiler?)")
TARGET = get_target("ascend910")
CONSTANTS = (0, 1, -1, 2, 3, 5, 7, -8, 64, 100, -1000, 1 << 40, 1 << 62, -(1 << 63),
             (1 << 63) - 1, 12345678901)
PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
BOOL_BINARY = ("andi", "ori", "xori", "maxsi", "minsi", "maxui", "minui")


class Gen:
    """A random scalar program over `index` values and `i1` conditions."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.n = 0
        self.lines: list[str] = []

    def new(self) -> str:
        self.n += 1
        return f"%v{self.n}"

    def emit(self, indent: int, text: str) -> None:
        self.lines.append("  " * indent + text)

    def const(self, indent: int, ints: list, value=None) -> str:
        v = self.new()
        value = self.rng.choice(CONSTANTS) if value is None else value
        self.emit(indent, f"{v} = arith.constant {value} : index")
        ints.append(v)
        return v

    def op(self, indent: int, ints: list, bools: list) -> None:
        r = self.rng.random()
        v = self.new()
        pick = self.rng.choice
        if r < 0.45:
            name = pick(sorted(walk_code.BINARY))
            rhs = pick(ints)
            if "sh" in name:  # Python shifts by any amount: keep its ints small
                rhs = self.const(indent, [], pick((0, 1, 5, 62, 63, 64, 70, -1)))
            self.emit(indent, f"{v} = {name} {pick(ints)}, {rhs} : index")
            ints.append(v)
        elif r < 0.6:
            self.emit(indent, f"{v} = arith.cmpi {pick(PREDICATES)}, {pick(ints)}, {pick(ints)} "
                      ": index")
            bools.append(v)
        elif r < 0.7 and bools:
            self.emit(indent, f"{v} = arith.{pick(BOOL_BINARY)} {pick(bools)}, {pick(bools)} : i1")
            bools.append(v)
        elif r < 0.8 and bools:
            self.emit(indent, f"{v} = arith.select {pick(bools)}, {pick(ints)}, {pick(ints)} "
                      ": index")
            ints.append(v)
        elif r < 0.87 and bools:  # a bool in an index slot (Python keeps it a bool)
            self.emit(indent, f"{v} = arith.index_cast {pick(bools)} : i1 to index")
            ints.append(v)
        else:
            terms = [pick(ints) for _ in range(self.rng.randint(0, 3))]
            scales = ", ".join(str(pick((1, 2, -3, 512, 1 << 40))) for _ in terms)
            types = ", ".join("index" for _ in terms)
            self.emit(indent, f'{v} = "hivm.addr"({", ".join(terms)}) {{base = '
                      f'{pick((0, 64, -7))} : i64, scales = array<i64{": " * bool(terms)}{scales}>}} : '
                      f'({types}) -> i64')
            w = self.new()
            self.emit(indent, f"{w} = arith.index_cast {v} : i64 to index")
            ints.append(w)

    def block(self, indent: int, ints: list, bools: list, depth: int) -> None:
        for _ in range(self.rng.randint(2, 7)):
            r = self.rng.random()
            if r < 0.15 and depth < 2:
                self.loop(indent, ints, bools, depth)
            elif r < 0.25 and depth < 2 and bools:
                self.branch(indent, ints, bools, depth)
            else:
                self.op(indent, ints, bools)

    def loop(self, indent: int, ints: list, bools: list, depth: int) -> None:
        lb = self.const(indent, ints, self.rng.choice((0, 1, -2)))
        ub = self.const(indent, ints, self.rng.choice((0, 3, 5)))
        step = self.const(indent, ints, self.rng.choice((1, 1, 2, 0, -1)))
        carried = [self.rng.choice(ints) for _ in range(self.rng.randint(0, 2))]
        iv, res = self.new(), self.new()
        args = [self.new() for _ in carried]
        inits = ", ".join(f"{a} = {c}" for a, c in zip(args, carried))
        head = f"scf.for {iv} = {lb} to {ub} step {step}"
        if carried:
            head = (f"{res}:{len(carried)} = {head} iter_args({inits}) -> "
                    f"({', '.join('index' for _ in carried)})")
        self.emit(indent, head + " {")
        inner, inner_bools = ints + [iv] + args, list(bools)
        self.block(indent + 1, inner, inner_bools, depth + 1)
        if carried:
            yields = [self.rng.choice(inner) for _ in carried]
            self.emit(indent + 1, f"scf.yield {', '.join(yields)} : "
                      f"{', '.join('index' for _ in carried)}")
            ints += [f"{res}#{k}" for k in range(len(carried))]
        self.emit(indent, "}")

    def branch(self, indent: int, ints: list, bools: list, depth: int) -> None:
        res = self.new()
        self.emit(indent, f"{res} = scf.if {self.rng.choice(bools)} -> (index) {{")
        for arm in ("then", "else"):
            inner, inner_bools = list(ints), list(bools)
            self.block(indent + 1, inner, inner_bools, depth + 1)
            self.emit(indent + 1, f"scf.yield {self.rng.choice(inner)} : index")
            self.emit(indent, "} else {" if arm == "then" else "}")
        ints.append(res)

    def program(self) -> str:
        ints: list[str] = ["%blk"]
        bools: list[str] = []
        for _ in range(3):
            self.const(1, ints)
        self.block(1, ints, bools, 0)
        body = "\n".join(self.lines)
        return (f"func.func @k(%blk: index {{npu.block_idx}}) attributes {{npu.block_dim = 8 : i64}} "
                f"{{\n{body}\n  return\n}}\n")


def decoded(text: str):
    module = parse_module(text, make_context())
    with module.context:
        return Decoder(TARGET).decode(find_entry(module, None)), module


def outcome(program, block: int):
    program.set_block_idx(block)
    try:
        return ("ok", program.walk(), list(program.trace))
    except (SimulationError, ZeroDivisionError, ValueError, OverflowError) as e:
        return ("error", type(e).__name__, str(e))


@pytest.mark.parametrize("seed", range(40))
def test_random_scalar_programs_walk_alike(seed, monkeypatch):
    text = Gen(seed).program()
    block = seed % 5
    python, keep = decoded(text)
    monkeypatch.setenv("NPU_SIM", "python")
    expected = outcome(python, block)
    compiled_program, keep2 = decoded(text)
    walker = walk_code.compile_walk(compiled_program, compiled._cengine.Walker)
    assert walker is not None, text  # every op here is one the walker runs
    trailing = walker.walk(block, [])
    if trailing is not None:  # the walker finished: Python's walk did too, with the same slots
        assert expected[0] == "ok", (expected, text)
        assert trailing == expected[1]
        got = walker.values()
        for s, value in enumerate(python.env):
            if type(value) in (int, bool):
                assert (got[s], type(got[s])) == (value, type(value)), (s, text)
    monkeypatch.setenv("NPU_SIM", "compiled")
    assert outcome(compiled_program, block) == expected  # bails or not: Program.walk agrees


def test_most_random_programs_stay_compiled(monkeypatch):
    """The bail-out is for edge cases, not the common path."""
    finished = 0
    for seed in range(40):
        program, keep = decoded(Gen(seed).program())
        walker = walk_code.compile_walk(program, compiled._cengine.Walker)
        finished += walker.walk(seed % 5, []) is not None
    assert finished >= 20


def test_cce_programs_keep_the_python_walk():
    """Views are not ints: a cce-level program is not compiled."""
    text = """func.func @k(%a: memref<16xf16, "gm">) {
      %c0 = arith.constant 0 : index
      %v = memref.subview %a[%c0] [16] [1] : memref<16xf16, "gm"> to memref<16xf16, strided<[1], offset: ?>, "gm">
      return
    }"""
    program, keep = decoded(text)
    assert walk_code.compile_walk(program, compiled._cengine.Walker) is None
