"""npu-prefetch's gap model counts a matmul loop's last load landing in
its tail: the last mads wait for it, one GM latency after MTE2 is done
with the load, and MTE2 idles meanwhile (`FactsCache._make`). Without it,
BERT seq 128's ffn_out was estimated to leave 864 cycles of MTE2 idle
after its last load, against ~1.9k simulated before the barrier, and the
next layer's V projection (cores 24-31) got one of its two weight slots
there; its share then ended ~2k cycles after Q's and K's. With both slots
the 12-layer encoder on 32 cores runs 572,193 -> 564,031 cycles, one layer
48,481 -> 48,127, seq 512 105,380 -> 105,188 (bench/chip.py); the CNNs'
prefetches are unchanged. Not on one core, where BERT's ffn_out then took
its first slot whole into ln1's tail (347,368 -> 347,561 cycles)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import compile_program, has_mad, kernel_tops, l1_weights_of

import npu
from npu.ir import functions, view_root
from npu.target import get_target

F = 16


def _t(shape, elem: str) -> str:
    return f'memref<{"x".join(map(str, shape))}x{elem}, "gm">'


def _matmul() -> str:
    """C = A x W, W an `npu.constant` in Nz (32 x 64 x 32: a short tail)."""
    a, w, c = (4, 2, F, F), (2, 4, F, F), (2, 2, F, F)
    data = (np.random.default_rng(3).standard_normal(w) * 0.2).astype(np.float16)
    const = (f'npu.constant = dense<"0x{data.tobytes().hex().upper()}"> : '
             f'tensor<{"x".join(map(str, w))}xf16>')
    return f"""
func.func @mm(%a: {_t(a, 'f16')}, %w: {_t(w, 'f16')} {{{const}}}, %c: {_t(c, 'f32')}) {{
  "ascend.matmul"(%a, %w, %c) : ({_t(a, 'f16')}, {_t(w, 'f16')}, {_t(c, 'f32')}) -> ()
  return
}}
"""


def test_a_matmul_loops_tail_counts_its_last_loads_landing() -> None:
    from npu.passes.prefetch.facts import FactsCache

    target = get_target("ascend910")
    module = compile_program(_matmul(), "npu-lower{cores=1}", target)
    tops = [o.operation for o in functions(module)[0].regions[0].blocks[0].operations]
    loop = next(op for op in tops if op.name == "scf.for" and has_mad(op))
    facts = FactsCache(target)(loop)
    latency = target.path("gm_to_l1").latency
    assert facts.loads > 0 and facts.tail > 0
    # the landing, then the tail's work (its mads at least), on top
    assert facts.tail_span > latency, (facts.tail_span, latency)
    assert facts.tail_span <= latency + facts.tail, (facts.tail_span, latency, facts.tail)
    # npu-prefetch leaves it out on one core (`landing=False`)
    assert FactsCache(target, landing=False)(loop).tail_span == facts.tail_span - latency


@pytest.mark.slow  # ~60 s: two BERT-base layers compiled for 32 cores
def test_the_next_layers_v_projection_loads_both_slots_in_ffn_outs_tail() -> None:
    from npu.frontend.bert import bert_layer

    kernel = npu.compile(bert_layer(128, 768, 12, 3072, layers=2), cores=32,
                         pipeline="builtin.module(npu-lower{emit=cce})")
    constants, tops = kernel_tops(kernel)

    def loop_of(name: str) -> int:
        return next(k for k, op in enumerate(tops)
                    if op.name in ("scf.for", "scf.if") and f'"{name}"' in str(op.location)
                    and has_mad(op))

    ffn_out = loop_of("ffn_out")
    barrier = next(k for k in range(ffn_out, len(tops)) if tops[k].name == "cce.sync_all")
    v_weights = l1_weights_of(tops[loop_of("l1_v_proj")], constants)
    assert v_weights

    def copies(op) -> int:
        if op.name == "cce.copy_gm_to_l1" and view_root(op.operands[0]) in v_weights:
            return 1
        if op.name == "scf.for":
            return 0
        return sum(copies(o.operation) for r in op.regions for b in r.blocks for o in b.operations)

    # both of V's slots (one copy each) between ffn_out's loop and the barrier after it
    assert sum(copies(tops[k]) for k in range(ffn_out + 1, barrier)) == 2
