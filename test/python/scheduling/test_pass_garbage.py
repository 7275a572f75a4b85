"""Passes run with the cycle collector off (`cyclic_gc_paused`), so what they
leave in reference cycles waits for the first collection after them: the
analyses that run per op must leave none (a recursive closure is a cycle
through its own cell, and held its whole numbering alive)."""

from __future__ import annotations

import gc
from contextlib import contextmanager

from npu.ir import functions, make_context, parse_module, walk
from npu.passes.base import cyclic_gc_paused
from npu.passes.buffer_pieces import analyse_piece
from npu.pipeline import run_pipeline
from npu.target import get_target

ND = 'memref<256x512xf16, "gm">'
PROGRAM = "\n".join([
    f"func.func @f(%x: {ND}, %w: {ND}, %t1: {ND}, %t2: {ND}) {{",
    f'  "ascend.add"(%x, %w, %t1) : ({ND}, {ND}, {ND}) -> ()',
    f'  "ascend.exp"(%t1, %t2) : ({ND}, {ND}) -> ()',
    "  return", "}", ""])


@contextmanager
def _cyclic_garbage():
    """The objects that only the cycle collector could free, made inside."""
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    found: list = []
    try:
        yield found
    finally:
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        gc.set_debug(0)
        found.extend(gc.garbage)
        gc.garbage.clear()
        if enabled:
            gc.enable()


def test_collector_off_while_a_pass_runs():
    assert gc.isenabled()
    with cyclic_gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with cyclic_gc_paused():
            pass
        assert not gc.isenabled()  # left as the caller had it
    finally:
        gc.enable()


def test_per_op_analyses_leave_no_cycles():
    ctx = make_context()
    module = parse_module(PROGRAM, ctx)
    target = get_target("ascend910")
    run_pipeline(module, "npu-lower{emit=cce}", target)
    tops = [op.operation for op in functions(module)[0].regions[0].blocks[0].operations]
    with _cyclic_garbage() as garbage:
        ops = list(walk(module.operation))
        pieces = [analyse_piece(top, target) for top in tops]
    assert len(ops) > len(tops) > 1 and sum(p.length for p in pieces) == len(ops) - 2
    names = sorted({getattr(o, "__qualname__", type(o).__name__) for o in garbage
                    if callable(o) and hasattr(o, "__qualname__")})
    assert names == [], f"left in cycles: {names}"
