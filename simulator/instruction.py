"""What every decoded instruction looks like to the pipes and the checker.

An `Instr` is built once per static op. It knows its pipe, its cost (from the
target), the byte pattern each operand touches and the alignment each operand
address needs; `compute` applies its effect to the byte arrays. The machine
does the generic work (bounds, alignment, hazards) from `accesses`, so unit
modules only describe semantics.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from operator import attrgetter
from typing import Callable

import numpy as np
from mlir import ir

from npu import ir as npu_ir
from npu.simulator.access import Pattern
from npu.simulator.errors import INVALID, SimulationError
from npu.simulator.hazards import PIPE_NAMES
from npu.simulator.memory import Memory
from npu.target import Target

OP, SET, WAIT, BARRIER = range(4)
PIPE_INDEX = {name: i for i, name in enumerate(PIPE_NAMES)}
ALL_PIPES = "ALL"


@dataclass(frozen=True)
class OperandInfo:
    space: str
    dtype: str
    esize: int
    type_text: str


@dataclass(frozen=True)
class Access:
    operand: int
    pattern: Pattern
    write: bool
    align: int  # the operand address must be a multiple of this


def access_plan(instr: Instr) -> tuple:
    """(operand, lo, hi, pattern, dense, align, write, pattern key) per access.
    Reads come first: the machine checks them, then the writes. The machine
    reads it from `Instr.plan` in its innermost loop."""
    writes = [a.write for a in instr.accesses]
    if writes != sorted(writes):
        raise AssertionError(f"'{instr.name}' lists a read after a write")
    return tuple((a.operand, a.pattern.lo, a.pattern.hi, a.pattern, a.pattern.dense, a.align,
                  a.write, a.pattern.key) for a in instr.accesses)


# The facts of an instruction that the pipes and the reports read of every
# one (`trace_codes.TraceCodes`), kept as one tuple (`Instr.facts`): numbers,
# then texts.
NUMBERS = ("kind", "pipe", "op_pipe", "nbytes", "rate", "occupancy")
TEXTS = ("path", "where", "name")


_FACTS = attrgetter(*NUMBERS, *TEXTS)


def facts_of(instr) -> tuple:
    """`Instr.facts`: the values of NUMBERS and TEXTS (one C call: the
    generator was 4% of a 32-core BERT's profiled timing-only run: 24k calls)."""
    return _FACTS(instr)


class DecodeContext:
    """One op being decoded: its attributes, operand types and the target."""

    def __init__(self, op: ir.Operation, where: str, target: Target):
        self.op = op
        self.name = op.name
        self.cce_name = op.name  # the semantics the units look up (hivm: its cce twin)
        self.where = where
        self.target = target
        self.operands: list[OperandInfo] = []
        for v in op.operands:
            if not npu_ir.is_memref(v.type):
                raise SimulationError(INVALID, f"'{op.name}' expects memref operands, got {v.type}", where)
            dtype = npu_ir.memref_element(v.type)
            if dtype not in ("f16", "f32", "i8", "i32"):
                raise SimulationError(INVALID, f"'{op.name}': unsupported element type {dtype}", where)
            self.operands.append(OperandInfo(npu_ir.memory_space(v.type), dtype,
                                             npu_ir.element_bytes(dtype), str(v.type)))

    def fail(self, message: str, kind: str = INVALID) -> SimulationError:
        return SimulationError(kind, f"'{self.name}' {message}", self.where)

    def int(self, name: str, default: int | None = None) -> int:
        attrs = self.op.attributes  # a new binding object each time it is asked for
        if name not in attrs:
            if default is not None:
                return default
            raise self.fail(f"is missing the integer attribute '{name}'")
        return ir.IntegerAttr(attrs[name]).value

    def float(self, name: str) -> float:
        if name not in self.op.attributes:
            raise self.fail(f"is missing the float attribute '{name}'")
        attr = self.op.attributes[name]
        if isinstance(attr, ir.IntegerAttr):
            return float(ir.IntegerAttr(attr).value)
        return ir.FloatAttr(attr).value

    def str(self, name: str, default: str | None = None) -> str:
        attrs = self.op.attributes
        if name not in attrs:
            if default is not None:
                return default
            raise self.fail(f"is missing the string attribute '{name}'")
        return ir.StringAttr(attrs[name]).value

    def bool(self, name: str, default: bool | None = None) -> bool:
        attrs = self.op.attributes
        if name not in attrs:
            if default is not None:
                return default
            raise self.fail(f"is missing the boolean attribute '{name}'")
        return ir.BoolAttr(attrs[name]).value

    def ints(self, name: str) -> list[int]:
        if name not in self.op.attributes:
            raise self.fail(f"is missing the array attribute '{name}'")
        return list(ir.DenseI64ArrayAttr(self.op.attributes[name]))

    def expect_operands(self, *spaces: str) -> None:
        got = tuple(o.space for o in self.operands)
        if got != spaces:
            raise self.fail(f"expects operands in memory spaces ({', '.join(spaces)}), got "
                            f"({', '.join(got)})")


class Instr:
    """A decoded instruction; subclasses set the cost and implement `compute`."""

    kind = OP
    # Pure data movement (copies, loads, vnchwconv) carries uninitialised bytes
    # along; every other instruction computes with what it reads.
    moves = False

    def __init__(self, ctx: DecodeContext, pipe: str):
        self.name = ctx.name
        self.where = ctx.where
        self.pipe_name = pipe
        self.pipe = PIPE_INDEX[pipe]
        self.op_pipe = self.pipe if self.kind == OP else -1  # the pipe whose epochs it counts in
        self.operands = ctx.operands
        self.occupancy = 0  # cycles the pipe is busy before it can start the next one
        self.latency = 0  # further cycles until the result is visible
        self.path: str | None = None  # data path whose bytes this moves
        self.gm_operand: int | None = None  # a GM transfer: its GM operand (memory system)
        self.n_bursts = 0
        self.rate = 0
        self.nbytes = 0
        self.accesses: tuple[Access, ...] = ()
        self.who = (self.name, pipe, self.where)
        self.esizes = tuple(o.esize for o in ctx.operands)
        self.plan: tuple = ()  # filled by `finish` once the accesses are known
        self.facts: tuple | None = None  # likewise

    def finish(self) -> "Instr":
        """Precompute the machine's per-access plan (`access_plan`) and the
        facts the pipes and reports read of every instruction
        (`facts_of`)."""
        self.plan = access_plan(self)
        self.facts = facts_of(self)
        return self

    def compute(self, mems: list[Memory], addrs: list[int]) -> None:
        raise NotImplementedError

    def bound(self, mems: list[Memory], addrs: list[int]) -> Callable[[], None]:
        """`compute` on these operands as a call without arguments. The machine
        keeps it per operand set, so units whose effect is a numpy call on
        fixed views build those views here, once."""
        return partial(self.compute, mems, addrs)


class SyncInstr(Instr):
    """set_flag / wait_flag / pipe_barrier / sync_all: they order pipes (and,
    sync_all, cores), touch no memory. sync_all is a barrier of every pipe
    (`barrier_all`) that then waits for the other cores (`chip`)."""

    chip = False

    def __init__(self, ctx: DecodeContext, kind: int, chip: bool = False):
        target = ctx.target
        if chip:
            super().__init__(ctx, "S")
            self.barrier_all = self.chip = True
            self.key = None
        elif kind == BARRIER:
            pipe = ctx.str("pipe")
            if pipe != ALL_PIPES and pipe not in PIPE_INDEX:
                raise ctx.fail(f"names an unknown pipe '{pipe}'")
            super().__init__(ctx, "S" if pipe in (ALL_PIPES, "S") else pipe)
            self.barrier_all = pipe == ALL_PIPES
            self.key = None
        else:
            src, dst, event = ctx.str("src"), ctx.str("dst"), ctx.int("event")
            for p in (src, dst):
                if p not in PIPE_INDEX:
                    raise ctx.fail(f"names an unknown pipe '{p}'", "flag")
            if src == dst:
                raise ctx.fail(f"synchronises pipe {src} with itself (use pipe_barrier)", "flag")
            if not 0 <= event < target.events_per_pipe_pair:
                raise ctx.fail(f"event {event} is out of range: the target has "
                               f"{target.events_per_pipe_pair} event ids per pipe pair", "flag")
            super().__init__(ctx, src if kind == SET else dst)
            self.key = (PIPE_INDEX[src], PIPE_INDEX[dst], event)
            self.barrier_all = False
            self.flag_text = f"{src} -> {dst}, event {event}"
        self.kind = kind
        self.op_pipe = -1

    def compute(self, mems: list[Memory], addrs: list[int]) -> None:  # pragma: no cover
        pass


def np_dtype(name: str) -> type:
    return {"f16": np.float16, "f32": np.float32, "i8": np.int8, "i32": np.int32}[name]
