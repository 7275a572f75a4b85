"""Scalar loads from GM (`memref.load` in cce, `hivm.load_gm_scalar` in hivm)
and `cf.assert`: what lets the scalar unit drive data-dependent copies (a
gather's row addresses come from its indices).

The simulator walks the scalar program before the pipes run, so a scalar
load sees GM as the kernel starts. That is exact for bytes no instruction of
the kernel writes (kernel inputs), and only for those: a load of any other
byte is refused when it happens (not input data yet) or after the run (an
instruction wrote it later, so the hardware would need the scalar unit to
wait for that write). Loads go through a data cache: a hit costs
`scalar_load_cycles`, a miss first fetches the line at the GM read latency;
the same model at both levels, so a program and its hivm lowering take the
same cycles.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from npu.simulator.errors import BOUNDS, INVALID, UNSUPPORTED, SimulationError
from npu.simulator.memory import DTYPES, INPUT_STAMP, Region
from npu.target import Target


@dataclass
class ScalarLoads:
    """Per core: the data cache's lines, and every GM range a load read (for
    the check after the run)."""

    target: Target
    lines: set = field(default_factory=set)
    read: dict = field(default_factory=dict)  # (memory id, byte) -> (memory, region label, where)

    def cost(self, mem, byte: int) -> int:
        t = self.target
        line = (id(mem), byte // t.scalar_dcache_line_bytes)
        if line in self.lines:
            return t.scalar_load_cycles
        if len(self.lines) * t.scalar_dcache_line_bytes >= t.scalar_dcache_bytes:
            self.lines.clear()  # a full cache starts over (no replacement policy is modelled)
        self.lines.add(line)
        return t.path("gm_to_ub").latency + t.scalar_load_cycles

    def load(self, region: Region, byte: int, dtype: str, where: str) -> tuple[int | float, int]:
        """(value, cycles) of the `dtype` element at absolute `byte` of `region`'s memory."""
        mem = region.mem
        if mem.space != "gm":
            raise SimulationError(UNSUPPORTED, f"a scalar load from {mem.space}: the scalar unit "
                                  "reads GM only in this model", where)
        size = np.dtype(DTYPES[dtype]).itemsize
        if byte < region.base or byte + size > region.base + region.size:
            raise SimulationError(BOUNDS, f"scalar load of bytes [{byte - region.base}, "
                                  f"{byte - region.base + size}) is outside its allocation of "
                                  f"{region.size} bytes ({region.label})", where)
        for b in range(byte, byte + size):
            if mem.wstamp.at(b) != INPUT_STAMP:
                raise SimulationError(INVALID, f"scalar load of byte {b - region.base} of "
                                      f"{region.label}, which is not kernel input data: the "
                                      "scalar unit reads GM as the kernel starts, so its loads "
                                      "may only read inputs", where)
        self.read.setdefault((id(mem), byte, size), (mem, region.label, where))
        value = mem.data[byte:byte + size].view(DTYPES[dtype])[0]
        value = float(value) if dtype.startswith("f") else int(value)
        return value, self.cost(mem, byte)

    def check_unwritten(self) -> None:
        """After the run: no instruction wrote a byte a scalar load read (the
        load happened before it on the hardware only with a sync the model
        does not have)."""
        for (_, byte, size), (mem, label, where) in self.read.items():
            for b in range(byte, byte + size):
                if mem.wstamp.at(b) != INPUT_STAMP:
                    raise SimulationError(INVALID, f"a scalar load read {label} before an "
                                          "instruction of the kernel wrote it: scalar loads may "
                                          "only read kernel inputs", where)


Fn = Callable[[list], None]


def assert_fn(cond: int, message: str, where: str) -> Fn:
    """`cf.assert`: a failed condition is a located `bounds` error with the op's message."""
    def check(env: list) -> None:
        if not env[cond]:
            raise SimulationError(BOUNDS, message, where)
    check.code = ("assert", cond)  # the compiled walk leaves a failure to this (walk_code.py)
    return check
