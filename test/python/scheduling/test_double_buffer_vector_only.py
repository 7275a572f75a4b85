"""npu-double-buffer with vector-only loop buffers: a buffer of a loop body
that only V touches lives over its uses (not the whole body), each unrolled
half gets its own copy, and the fit check plans the loop's own op. BERT's
residual + layernorm with an f16 copy of its result (ln1) then keeps both
inputs in two slots, so the next chunk's loads overlap this chunk's compute.
(npu-lower-fused's own slots, its default, allocate the sets before the
chunk loop instead: `npu-lower{fuse-slots=1}` leaves them to this pass.)"""

from __future__ import annotations

import os
import sys

import numpy as np

from npu.ir import functions, make_context, memory_space, parse_module, walk
from npu.passes.buffer_lifetimes import BufferCollector
from npu.pipeline import run_pipeline
from npu.simulator import simulate
from npu.target import get_target

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "fusion"))
from row_patterns import layernorm  # noqa: E402

ROWS, N = 128, 768


def layernorm_with_f16_copy() -> str:
    """ln1 of the BERT layer: y = layernorm(x + r), and y cast to f16."""
    text = layernorm(ROWS, N)
    y16 = f'memref<1x{ROWS}x{N}xf16, "gm">'
    y = f'memref<1x{ROWS}x{N}xf32, "gm">'
    text = text.replace(f"%y: {y})", f"%y: {y}, %y16: {y16})")
    return text.replace("  return\n", f'  "ascend.cast"(%y, %y16) {{round_mode = "rint"}} : '
                                      f"({y}, {y16}) -> ()\n  return\n")


def reference(x, r, g, b):
    a = x.astype(np.float64) + r
    d = a - a.mean(axis=-1, keepdims=True)
    y = d / np.sqrt((d * d).mean(axis=-1, keepdims=True) + 1e-5) * g + b
    return y


def _lowered():
    target = get_target("ascend910")
    module = parse_module(layernorm_with_f16_copy(), make_context())
    run_pipeline(module, "npu-lower{cores=1 emit=cce fuse-slots=1}", target)
    return module, target


def test_loads_of_both_inputs_are_double_buffered_and_the_run_is_clean():
    module, target = _lowered()
    (loop,) = [op for op in walk(module, lambda o: o.name == "scf.for")
               if any(u.name == "cce.copy_gm_to_ub" for u in walk(op))]
    loads = [op for op in walk(loop, lambda o: o.name == "cce.copy_gm_to_ub")]
    assert len(loads) == 4  # x and r, in each half of the unrolled body
    dests = []
    for load in loads:
        alloc = load.operands[1].owner
        while alloc.name != "memref.alloc":
            alloc = alloc.operands[0].owner
        dests.append(alloc)
    assert all("npu.slot" in a.attributes for a in dests)
    offsets = {int(str(a.attributes["npu.offset"]).split(":")[0]) for a in dests}
    assert len(offsets) == 4  # no load waits for the other half's compute

    rng = np.random.default_rng(0)
    x, r = (rng.standard_normal((1, ROWS, N)).astype(np.float32) for _ in range(2))
    g, b = (rng.standard_normal(N).astype(np.float32) for _ in range(2))
    y = np.zeros((1, ROWS, N), np.float32)
    res = simulate(module, [x, r, g, b, y, np.zeros((1, ROWS, N), np.float16)], target=target)
    assert not res.hazards
    want = reference(x, r, g, b)
    np.testing.assert_allclose(res.outputs[4], want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(res.outputs[5].astype(np.float32), want, rtol=2e-3, atol=2e-3)


def test_vector_only_buffers_live_over_their_uses():
    module, target = _lowered()
    func = functions(module)[0]
    collector = BufferCollector(target)
    collector.track(func)
    (loop,) = [op for op in walk(module, lambda o: o.name == "scf.for")
               if any(u.name == "cce.copy_gm_to_ub" for u in walk(op))]
    in_loop = {op for op in walk(loop, lambda o: o.name == "memref.alloc")}
    lives = [b for b in collector.collect(func) if b.op in in_loop and memory_space(
        b.op.results[0]) == "ub"]
    body = max(b.end - b.start for b in lives)
    vector_only = [b for b in lives if b.first_pipe == b.last_pipe == "V"
                   and b.end - b.start < body]
    movers = [b for b in lives if "MTE2" in (b.first_pipe, b.last_pipe)
              or "MTE3" in (b.first_pipe, b.last_pipe)]
    assert vector_only and movers
    assert all(b.end - b.start == body for b in movers)
    # Two of them share bytes: the planner reused a vector temporary's space.
    placed = [(int(str(b.op.attributes["npu.offset"]).split(":")[0]), b) for b in vector_only]
    assert len({o for o, _ in placed}) < len(placed)
