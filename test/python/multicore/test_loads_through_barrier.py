"""A chip barrier (`cce.sync_all`) drains every pipe of a core but MTE2: the
loads still queued there (npu-prefetch's constant weights for the op after
the barrier) stream on through it, and npu-insert-sync orders their
consumers after it with flags (`simulator/pipes.py`, `IN_FLIGHT`). BERT seq
128 on 32 cores 48,127 -> 46,719 cycles, 12 layers 563,455 -> 540,103
(bench/chip.py; docs/multicore.md, "Loads through the barrier")."""

from __future__ import annotations

import numpy as np
import pytest

from npu.ir import make_context, parse_module
from npu.pipeline import run_pipeline
from npu.simulator import SimulationError, simulate
from npu.target import get_target

N = 16384  # f16 elements: a 32 KB load, ~860 cycles, longer than the barrier
UB = f'memref<{N}xf16, "ub">'
GM = f'memref<{N}xf16, "gm">'
COPY = f'{{n_burst = 1 : i64, burst_len = {N * 2 // 32} : i64, src_gap = 0 : i64, dst_gap = 0 : i64}}'
VEC = (f'{{repeat = {N // 128} : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, '
       'dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64}')


def _program(after: str = "") -> str:
    """Both cores load %w before the barrier and exp it after it; `after`:
    more ops after the exp (%b holds its result)."""
    return f"""
func.func @f(%blk: index {{npu.block_idx}}, %w: {GM}) attributes {{npu.block_dim = 2 : i64}} {{
  %a = memref.alloc() {{npu.offset = 0 : i64}} : {UB}
  %b = memref.alloc() {{npu.offset = {N * 2} : i64}} : {UB}
  "cce.copy_gm_to_ub"(%w, %a) {COPY} : ({GM}, {UB}) -> ()
  "cce.sync_all"() : () -> ()
  "cce.vexp"(%b, %a) {VEC} : ({UB}, {UB}) -> ()
  {after}
  return
}}
"""


def _synced(text: str) -> str:
    module = parse_module(text, make_context())
    run_pipeline(module, "builtin.module(npu-insert-sync)", get_target("ascend910"))
    return module.operation.get_asm(print_generic_op_form=True)


def _w() -> np.ndarray:
    return np.random.default_rng(2).uniform(-1, 1, N).astype(np.float16)


def test_a_load_streams_through_the_barrier_and_its_consumer_waits_for_it() -> None:
    text = _synced(_program())
    # the pair across the barrier: set after the load, wait after the barrier
    assert text.index('"cce.set_flag"') < text.index('"cce.sync_all"') < text.index(
        '"cce.wait_flag"')
    res = simulate(parse_module(text, make_context()), [_w()])
    assert res.hazards == [] and res.report["block_dim"] == 2
    sync = get_target("ascend910").sync_all_cycles
    for trace, tl in res.core_traces:
        names = [instr.name for instr, _, _ in trace]
        load, barrier, vexp = (names.index(n) for n in ("cce.copy_gm_to_ub", "cce.sync_all",
                                                        "cce.vexp"))
        arrival = tl.end[barrier] - sync  # both cores arrive at once
        assert tl.end[load] > arrival + sync // 2, (tl.end[load], arrival)  # still in flight
        assert tl.start[vexp] >= tl.end[load]  # the flag holds the exp until it lands
    # the load and the barrier overlap: less than their sum and the exp's
    _, tl = res.core_traces[0]
    load_span = tl.end[load] - tl.start[load]
    assert res.cycles < load_span + sync + (tl.end[vexp] - tl.start[vexp])


def _without_flags_across_the_barrier(text: str) -> str:
    """`text` without the set_flag before its chip barrier and the wait after it."""
    lines = text.splitlines()
    at = next(k for k, line in enumerate(lines) if '"cce.sync_all"' in line)
    pair = {max(k for k in range(at) if '"cce.set_flag"' in lines[k]),
            min(k for k in range(at, len(lines)) if '"cce.wait_flag"' in lines[k])}
    return "\n".join(line for k, line in enumerate(lines) if k not in pair)


def test_deleting_the_flags_across_the_barrier_is_a_race() -> None:
    text = _without_flags_across_the_barrier(_synced(_program()))
    assert '"cce.sync_all"' in text and '"cce.set_flag"' not in text
    with pytest.raises(SimulationError) as e:
        simulate(parse_module(text, make_context()), [_w()])
    assert e.value.kind == "race" and "MTE2" in str(e.value)


def test_another_core_writing_what_a_load_in_flight_reads_is_a_race() -> None:
    # Core 1 stores over %w right after the barrier, while core 0's load of
    # it may still stream: a load left in flight must read only what no core
    # writes after the barrier (npu-prefetch loads host constants only).
    store = f'"cce.copy_ub_to_gm"(%b, %w) {COPY} : ({UB}, {GM}) -> ()'
    after = f"""%one = arith.constant 1 : index
  %is1 = arith.cmpi eq, %blk, %one : index
  scf.if %is1 {{
    {store}
  }}"""
    text = _synced(_program(after))
    with pytest.raises(SimulationError) as e:
        simulate(parse_module(text, make_context()), [_w()])
    assert e.value.kind == "race" and "no ordering between the cores" in str(e.value)


def test_both_engines_time_the_loads_through_the_barrier_alike(monkeypatch) -> None:
    text = _synced(_program())
    runs = []
    for engine in ("python", "compiled"):  # simulator/pipes.py and csrc/engine.c
        monkeypatch.setenv("NPU_SIM", engine)
        res = simulate(parse_module(text, make_context()), [_w()])
        runs.append((res.cycles, [[int(t) for t in tl.end] for _, tl in res.core_traces]))
    assert runs[0] == runs[1]
