"""Light drains: npu-lower-matmul marks a piece's drain scf.if when the drain
is under a quarter of the cube's work (`PipelinedPlanning.light_drain`), and
npu-insert-sync then sinks an earlier piece's carried store set past it, so
the pieces' stores stream with one GM latency (one flag releases both).

Checked: the mark (on a long reduction, not on a drain-heavy shape), the
numerics against numpy with strict simulation, and that the same program
without the mark (the sets after each drain) is slower."""

from __future__ import annotations

import numpy as np

from helpers import assert_close, at_cce, simulate_levels
from mm_common import blocks, matmul_reference, nz, nz_matmul_program, un_nz

from npu.ir import make_context, parse_module, walk
from npu.passes.base import LIGHT_DRAIN_ATTR
from npu.pipeline import run_pipeline
from npu.target import get_target

TARGET = get_target("ascend910")
LOWER = "npu-lower-matmul{schedule=pipelined c-pieces=2},npu-double-buffer,npu-plan-memory"
SYNC = "npu-insert-sync{sink-sets=true}"


def _lowered(M: int, N: int, K: int):
    module = parse_module(nz_matmul_program(M, N, K, "f32"), make_context())
    run_pipeline(module, LOWER, TARGET)
    return module


def _marked(module) -> int:
    return sum(LIGHT_DRAIN_ATTR in op.attributes for op in walk(module.operation)
               if op.name == "scf.if")


def _run(module, M: int, N: int, K: int):
    run_pipeline(module, at_cce(SYNC), TARGET)
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (M, N)).astype(np.float16)
    b = rng.uniform(-1, 1, (N, K)).astype(np.float16)
    c0 = np.full((blocks(K), blocks(M), 16, 16), np.nan, np.float32)
    res = simulate_levels(module, [nz(a), nz(b), c0], TARGET, strict=True)
    assert not res.hazards
    assert_close(un_nz(res.outputs[2], M, K), matmul_reference(a, b).astype(np.float32))
    return res.cycles


def test_light_drain_streams_the_pieces_stores() -> None:
    M, N, K = 64, 2048, 128
    module = _lowered(M, N, K)
    assert _marked(module) >= 2  # both pieces' drains, in each slot of the ping-pong
    unmarked = _lowered(M, N, K)
    for op in walk(unmarked.operation):
        if op.name == "scf.if" and LIGHT_DRAIN_ATTR in op.attributes:
            del op.attributes[LIGHT_DRAIN_ATTR]
    fast, slow = _run(module, M, N, K), _run(unmarked, M, N, K)
    assert fast < slow, (fast, slow)


def test_heavy_drain_is_not_marked() -> None:
    # a short reduction: C's f32 stores are as long as the cube's work
    module = _lowered(128, 64, 256)
    assert any(op.name == "scf.if" for op in walk(module.operation))  # its drains
    assert _marked(module) == 0
