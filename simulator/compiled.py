"""The compiled pieces of the simulator (`_cengine`, C in `simulator/csrc/`)
and whether a run uses them: the scheduling loop, and the cross-core GM
check of accesses made of equal runs of bytes.

`pipes._run_parallel` is the reference: `_cengine.Engine` makes the same
decisions in the same order and calls back into Python for everything that
is not scheduling (each operand set's runner: checks and effect; the memory
system's GM timing), so results, cycles, hazards and reports are identical
(test/python/simulator/test_compiled_engine.py runs both). It is compiled
because the loop is the largest single cost of a run that Python cannot cut
further: one interpreted step per entry, per pipe head and per flag (BERT-base,
12 layers, 32 cores, timing only: 2.0 of 16.9 profiled seconds in its own
body, the rest in the runners it calls).

`NPU_SIM=python` selects the Python loop even when the extension is built;
`NPU_SIM=compiled` requires the extension (CI sets it, so a build that
silently fell back fails there). Without a C compiler `pip install` still
succeeds (the extension is optional) and every run uses the Python loop.
"""

from __future__ import annotations

import importlib
import os
from functools import partial

try:
    # The extension module itself, not the package's __init__ (which imports
    # the simulator that imports this module).
    _cengine = importlib.import_module("npu.simulator._cengine")
except ImportError:  # built without a C compiler: the Python loop runs
    _cengine = None


def available() -> bool:
    """The extension is built and importable."""
    return _cengine is not None


def engine():
    """`_cengine` when this run should use it, else None (`NPU_SIM`)."""
    choice = os.environ.get("NPU_SIM", "").lower()
    if choice == "python":
        return None
    if choice == "compiled" and not available():
        raise RuntimeError("NPU_SIM=compiled, but npu.simulator._cengine is not built "
                           "(pip install -e . needs a C compiler)")
    return _cengine if available() else None


def cross_runs():
    """`_cengine.cross_runs` when this run uses the compiled pieces, else None."""
    cengine = engine()
    return None if cengine is None else cengine.cross_runs


def hand_over():
    """`_cengine.hand_over` (`launch.hand_over`'s stamp updates) when this run
    uses the compiled pieces, else None."""
    cengine = engine()
    return None if cengine is None else cengine.hand_over


def generic():
    """`_cengine.generic` (the generic path's checks, `Machine.generic_checks`)
    when this run uses the compiled pieces, else None."""
    cengine = engine()
    return None if cengine is None else cengine.generic


def runner_type():
    """`_cengine.Runner` (one operand set's generic path, called by the
    compiled loop without a Python frame) when this run uses the compiled
    pieces, else None."""
    cengine = engine()
    return None if cengine is None else getattr(cengine, "Runner", None)


def bind_static():
    """`_cengine.bind_static` (`machine.SharedBindings.bind`, compiled) when
    this run uses the compiled pieces, else None."""
    cengine = engine()
    return None if cengine is None else getattr(cengine, "bind_static", None)


def bind_run():
    """`_cengine.bind_run` (`machine.Machine.bind` with the compiled generic
    path) when this run uses the compiled pieces, else None."""
    cengine = engine()
    return None if cengine is None else getattr(cengine, "bind_run", None)


def memsys():
    """(`_cengine.l2_touch`, `_cengine.bus_take`), the memory system's loops,
    when this run uses the compiled pieces, else (None, None)."""
    cengine = engine()
    return (None, None) if cengine is None else (cengine.l2_touch, cengine.bus_take)


def walker_type():
    """`_cengine.Walker` (the compiled scalar walk, `walk_code.py`) when this
    run uses the compiled pieces, else None."""
    cengine = engine()
    return None if cengine is None else getattr(cengine, "Walker", None)


def walk_limit() -> type[Exception]:
    """`_cengine.WalkLimit`: a compiled walk's trace would pass its limit."""
    return engine().WalkLimit


def forget_buffers() -> None:
    """Let go of the arrays whose buffers the compiled generic path keeps
    (`csrc/stamps.c`): a run is over."""
    if _cengine is not None:
        _cengine.forget_buffers()


def gm_timer(memsys):
    """The memory system's cycles for one GM transfer of a trace entry, as
    `pipes._run_parallel` computes them (None: static occupancy). Compiled
    whole (`csrc/gmxfer.c`: the loop calls it without a Python frame; it
    hands what it does not take to `MemorySystem.transfer`) unless the run
    uses the Python engine or the memory system's Python loops."""
    if memsys is None:
        return None
    cengine = engine()
    if cengine is not None and getattr(memsys, "_cbus", None) is not None:
        return partial(cengine.gm_transfer, memsys, memsys.bin_cycles)
    transfer = memsys.transfer

    def gm(t0: int, instr, views: tuple) -> int:
        k = instr.gm_operand
        region = views[k][0]
        return transfer(t0, instr.nbytes, instr.n_bursts, instr.rate, region.mem,
                        instr.src_pat if k == 0 else instr.dst_pat,
                        region.base + views[k][1] * instr.esizes[k], k == 1)
    return gm
