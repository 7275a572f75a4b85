"""Vector work of fused kernels: every pipe_barrier(V) that
npu-insert-sync leaves in the fused layernorm is needed (dropping any one
of them makes the race detector fire), row sums run in two levels and the
variance folds its squares with multiply-adds (its two accumulators share
one barrier per round), and the GELU recipe's
Horner steps are multiply-adds against constant blocks written before the
chunk loop."""

from __future__ import annotations

import re

import numpy as np

from helpers import compile_program
from row_patterns import gelu, layernorm

from npu.ir import make_context, parse_module
from npu.simulator import SimulationError, simulate

V_BARRIER = re.compile(r'^\s*"cce.pipe_barrier"\(\) \{pipe = "V"\}.*$', re.M)


def test_every_vector_barrier_of_the_fused_layernorm_is_needed():
    text = layernorm(16, 768, "f32", residual=False)
    lowered = str(compile_program(text, "npu-lower{cores=1}"))
    barriers = list(V_BARRIER.finditer(lowered))
    rng = np.random.default_rng(3)
    ins = [rng.standard_normal(s).astype(np.float32) for s in ((1, 16, 768), (768,), (768,))]
    ins.append(np.zeros((1, 16, 768), np.float32))
    ctx = make_context()
    assert simulate(parse_module(lowered, ctx), ins).hazards == []
    # Per chunk body: the mean's row sum in two levels (one vcadd per row
    # over its 12 repeats, one over the rows' partials: no fold rows), and
    # the variance's squares folded straight into two accumulators (12
    # segments: 2 vmul + 10 vmla, one vadd joining them; no product pass),
    # each round of the two accumulators one pipe_barrier(V).
    bodies = lowered.count('"cce.vrsqrt"')
    assert bodies >= 1
    assert lowered.count('"cce.vmla"') == bodies * 10
    assert lowered.count('"cce.vadd"') == bodies  # no folds of the plain sum
    per_row = re.findall(r'"cce.vcadd".*repeat = 12 : i64', lowered)
    assert len(per_row) == 16  # each row's first level, once
    assert lowered.count('"cce.vmadd"') > 0  # the scale and shift
    for body in lowered.split('"cce.vrsqrt"')[:-1]:
        squares = body[body.rfind('"cce.vsub"'):]
        squares = squares[squares.find('"cce.vmul"'):squares.rfind('"cce.vcadd"')]
        assert squares.count('"cce.vmla"') == 10
        assert len(V_BARRIER.findall(squares)) <= 7
    for b in barriers:
        without = lowered[:b.start()] + lowered[b.end():]
        try:
            res = simulate(parse_module(without, ctx), ins)
        except SimulationError as e:
            assert "race" in str(e), e
            continue
        assert res.hazards, f"the barrier at offset {b.start()} is not needed"


def test_fused_gelu_uses_multiply_adds_and_hoisted_constants():
    # Chunks of at most 16 rows: a loop over two of them (72 rows: too many
    # chunks for the kernel's last group to run without a loop, `short_last`).
    lowered = str(compile_program(gelu(72, 96, "f32"), f"npu-lower{{cores=1 max-chunk={16 * 96}}}"))
    head, _, loop = lowered.partition("scf.for")
    # The seven multiply-add coefficients of the recipe's polynomial as
    # constant blocks, written once before the chunks.
    assert head.count('"cce.vdup"') == 7 and '"cce.vdup"' not in loop
    # Per emitted chunk (the loop body, double-buffered, and the tail): one
    # vexp and seven vmadds reading their addend with strides 0.
    chunks = loop.count('"cce.vexp"')
    assert chunks >= 2 and loop.count('"cce.vmadd"') == 7 * chunks
    assert loop.count("src1_blk_stride = 0 : i64, src1_rep_stride = 0 : i64") == 7 * chunks
