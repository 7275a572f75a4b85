"""The pipelined output-stationary schedule (`npu-lower-matmul{schedule=pipelined}`,
the default of `npu-lower` with double buffering): one flat loop over (C tile,
L1 chunk), L0A/L0B ping-pong sub-steps, C drained in L0C pieces.

Checked: results against numpy on random shapes (tiles that divide the shape
use the schedule, others fall back to the plain nest), with and without
double buffering, both sync modes and set sinking, f16 output and batches;
strict simulation (no race); the GM traffic is still the cost model's; and
the cycles it reaches against the simulator's lower bound, so a regression
of the schedule fails here.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from helpers import assert_close, at_cce, simulate_levels
from mm_common import blocks, matmul_reference, nz, nz_matmul_program, un_nz

from npu.ir import make_context, parse_module, walk
from npu.costmodel.matmul.fitting import MatmulShape
from npu.costmodel.matmul.tiling import choose_tiling
from npu.pipeline import run_pipeline
from npu.target import get_target

TARGET = get_target("ascend910")


def compile_and_run(M: int, N: int, K: int, pipeline: str, out: str = "f32", batch: int = 0,
                    seed: int = 7):
    rng = np.random.default_rng(seed)
    lead = (batch,) if batch else ()
    a = rng.uniform(-1, 1, lead + (M, N)).astype(np.float16)
    b = rng.uniform(-1, 1, lead + (N, K)).astype(np.float16)
    out_dt = np.float32 if out == "f32" else np.float16
    c0 = np.full(lead + (blocks(K), blocks(M), 16, 16), np.nan, out_dt)
    module = parse_module(nz_matmul_program(M, N, K, out, batch), make_context())
    run_pipeline(module, at_cce(pipeline), TARGET)
    res = simulate_levels(module, [nz(a), nz(b), c0], TARGET, strict=True)
    assert not res.hazards
    assert_close(un_nz(res.outputs[2], M, K), matmul_reference(a, b).astype(out_dt))
    return module, res


def is_pipelined(module) -> bool:
    """The flat loop derives tile and chunk from its induction variable."""
    return any(op.name == "arith.remui" for op in walk(module.operation))


def lowering(m: int, k: int, extra: str = "") -> str:
    return f"npu-lower-matmul{{m={m} k={k} schedule=pipelined {extra}}}"


BACKENDS = {
    "db": "npu-double-buffer,npu-plan-memory,npu-insert-sync{sink-sets=true}",
    "db-nosink": "npu-double-buffer,npu-plan-memory,npu-insert-sync",
    "single": "npu-plan-memory,npu-insert-sync{sink-sets=true}",
    "barrier": "npu-double-buffer,npu-plan-memory,npu-insert-sync{mode=barrier}",
}


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_several_tiles_chunks_and_pieces(backend):
    # 3 x 2 C tiles of 32 x 64, N = 96: chunks of the reduction, 2 C pieces.
    module, res = compile_and_run(96, 96, 128, lowering(32, 64, "l1-chunk=32") + ","
                                  + BACKENDS[backend])
    assert is_pipelined(module)
    mads = [op for op in walk(module.operation) if op.name == "cce.mad"]
    assert {op.attributes["k"].value for op in mads} == {32}  # pieces of 64 / 2 columns


def test_single_chunk_odd_tile_count_and_f16_output():
    # One chunk per tile (no scf.if on the chunk), 3 tiles (odd: the ping-pong
    # leaves a remainder iteration), an odd number of column blocks (1 piece).
    module, res = compile_and_run(48, 64, 48, lowering(16, 48) + "," + BACKENDS["db"], out="f16")
    assert is_pipelined(module)


def test_batches_join_the_flat_loop():
    module, _ = compile_and_run(32, 48, 64, lowering(32, 32) + "," + BACKENDS["db"], batch=3)
    assert is_pipelined(module)
    loops = [op for op in walk(module.operation) if op.name == "scf.for"]
    assert loops and not any(inner.name == "scf.for" for loop in loops
                             for inner in walk(loop) if inner is not loop)


def test_tiles_that_do_not_divide_fall_back_to_the_nest():
    module, _ = compile_and_run(80, 48, 48, lowering(32, 32) + "," + BACKENDS["db"])
    assert not is_pipelined(module)


@settings(max_examples=12, derandomize=True, deadline=None)
@given(mb=st.integers(1, 3), kb=st.integers(1, 4), tm=st.integers(1, 3), tk=st.integers(1, 2),
       N=st.integers(1, 80), backend=st.sampled_from(list(BACKENDS)),
       out=st.sampled_from(["f32", "f16"]), batch=st.sampled_from([0, 0, 2]))
def test_random_pipelined_shapes(mb, kb, tm, tk, N, backend, out, batch):
    """M and K are whole tiles (the schedule applies), N anything (padded)."""
    m, k = 16 * mb, 16 * kb
    module, _ = compile_and_run(m * tm, N, k * tk, lowering(m, k) + "," + BACKENDS[backend], out,
                                batch)
    assert is_pipelined(module)


@settings(max_examples=12, derandomize=True, deadline=None)
@given(rows=st.sampled_from([2, 4]), cols=st.integers(1, 2), per=st.integers(1, 3),
       tm=st.integers(1, 2), tk=st.integers(1, 2), N=st.integers(1, 80),
       backend=st.sampled_from(list(BACKENDS)), out=st.sampled_from(["f32", "f16"]),
       batch=st.sampled_from([0, 0, 2]))
def test_c_pieces_in_a_grid(rows, cols, per, tm, tk, N, backend, out, batch):
    """C pieces in a rows x cols grid (`c-piece-rows`): each piece's mads
    read its rows of the A sub-tile and its columns of the B one, and its
    drain writes it at its row and column offsets in C (pieces of one or
    several blocks each way, several tiles, N anything)."""
    m, k = 16 * rows * per, 16 * cols * per
    module, _ = compile_and_run(m * tm, N, k * tk, lowering(
        m, k, f"c-pieces={rows * cols} c-piece-rows={rows}") + "," + BACKENDS[backend], out, batch)
    assert is_pipelined(module)
    mads = [op for op in walk(module.operation) if op.name == "cce.mad"]
    assert {(op.attributes["m"].value, op.attributes["k"].value) for op in mads} == {
        (16 * per, 16 * per)}


@pytest.mark.parametrize("resident", [True, False])
def test_gm_traffic_is_still_the_models(resident):
    """Chunks and pieces cut the same traffic differently: the simulated GM
    bytes equal the cost model's for the same tiles, with A's row strips
    resident in L1 (A read once) or streamed (A read per column tile)."""
    M, N, K = 128, 192, 192
    _, res = compile_and_run(M, N, K, lowering(128, 96, f"resident-a={str(resident).lower()}")
                             + "," + BACKENDS["db"])
    shape = MatmulShape(M, N, K)
    model = choose_tiling(shape, TARGET, "os", 128, 0, 96, pipelined=True,
                          resident_a=resident)
    assert model.a_resident == resident
    assert model.traffic.a_reads == M * N * (1 if resident else K // 96)
    assert res.report["bytes"]["gm_to_l1"] == model.traffic.read_bytes(shape)
    assert res.report["bytes"]["ub_to_gm"] == model.traffic.write_bytes(shape)


def a_strip_copies(module, n1: int) -> int:
    """Copies GM -> L1 (in the IR) of all n1 of A's block columns at once:
    the resident row strip, or a streamed A chunk of the whole reduction
    (the GM bytes the tests also check tell those apart)."""
    return sum(1 for op in walk(module.operation)
               if op.name == "cce.copy_gm_to_l1" and op.attributes["n_burst"].value == n1
               and "%arg0" in str(op.operands[0].owner.operands[0].get_name()))


@settings(max_examples=12, derandomize=True, deadline=None)
@given(mb=st.integers(1, 3), kb=st.integers(1, 3), tk=st.integers(2, 3), N=st.integers(17, 90),
       backend=st.sampled_from(list(BACKENDS)), out=st.sampled_from(["f32", "f16"]),
       batch=st.sampled_from([0, 0, 1]))
def test_resident_a_row_strip(mb, kb, tk, N, backend, out, batch):
    """One row of C tiles (m = M), several column tiles, N anything above one
    block (padded; an odd N1 too), a plain matmul or a batch_matmul of one
    matrix: A's strip is copied to L1 once, before the loop, whose L0A loads
    read it at each chunk's offset; results match numpy and the race
    detector finds nothing (compile_and_run). (timed-residency=false: the
    strip wherever it fits, as these reductions are too short for the time
    estimate to keep it.)"""
    m, k = 16 * mb, 16 * kb
    module, res = compile_and_run(m, N, k * tk, lowering(m, k, "timed-residency=false") + ","
                                  + BACKENDS[backend], out, batch)
    assert is_pipelined(module)
    assert a_strip_copies(module, blocks(N)) == 1
    n_pad = 16 * blocks(N)  # A read once, B once
    assert res.report["bytes"]["gm_to_l1"] == 2 * (m * n_pad + n_pad * k * tk)


@pytest.mark.parametrize("timed", [True, False])
def test_a_row_strip_without_room_in_l1_streams(timed):
    """A strip of 16 x 33008 f16 (1.01 MiB) over L1: A streams with B, once
    per column tile, and the result is still right."""
    m, k, N = 16, 16, 33008
    module, res = compile_and_run(m, N, 2 * k, lowering(
        m, k, f"timed-residency={str(timed).lower()}") + "," + BACKENDS["db"])
    assert is_pipelined(module) and a_strip_copies(module, blocks(N)) == 0
    assert res.report["bytes"]["gm_to_l1"] == 2 * (2 * m * N + N * 2 * k)


@pytest.mark.parametrize("out", ["f32", "f16"])
def test_a_row_strip_beside_smaller_b_chunks(out):
    """(m + k) x N over L1 for every C tile streaming would take, but the
    strip (128 x 2048 f16, 512 KiB) and two B chunks fit: the time estimate
    keeps the strip, in 128-wide C tiles with 1024-row B chunks (256 KiB
    each), A read once; timed-residency=false streams A with B, once per
    384-wide column tile, and takes longer (67.8k against 77.9k cycles)."""
    M, N, K = 128, 2048, 768
    pipeline = "npu-lower-matmul{schedule=pipelined %s}," + BACKENDS["db"]
    module, res = compile_and_run(M, N, K, pipeline % "", out)
    assert a_strip_copies(module, blocks(N)) == 1
    assert res.report["bytes"]["gm_to_l1"] == 2 * (M * N + N * K)
    b_chunks = {(op.attributes["n_burst"].value, op.attributes["burst_len"].value)
                for op in walk(module.operation) if op.name == "cce.copy_gm_to_l1"
                and "%arg1" in str(op.operands[0].owner.operands[0].get_name())}
    assert b_chunks == {(8, 1024 * 16 * 2 // 32)}  # 8 column blocks of 1024 rows
    _, before = compile_and_run(M, N, K, pipeline % "timed-residency=false", out)
    assert before.report["bytes"]["gm_to_l1"] == 2 * (2 * M * N + N * K)
    assert res.cycles < before.cycles, (res.cycles, before.cycles)


def test_bad_l1_chunk_is_an_error():
    from npu.pipeline import PipelineError

    module = parse_module(nz_matmul_program(64, 96, 64), make_context())
    with pytest.raises(PipelineError, match=r"l1-chunk=40 must be a multiple of 16 dividing N=96"):
        run_pipeline(module, lowering(32, 32, "l1-chunk=40"), TARGET)


def run_default(M: int, N: int, K: int, options: str = ""):
    """Through `npu-lower` with its defaults (cost-model tiles, double buffering)."""
    return compile_and_run(M, N, K, f"npu-lower{{cores=1 {options}}}")


def test_pipelined_schedule_reaches_its_ratio_to_the_bound():
    """The achievement, pinned: (512, 768, 512) fp16 -> fp32 through the
    default `npu-lower` runs within 1.25x the simulator's lower bound (was
    1.6x with the plain nest), moving the cost model's GM bytes: the plain
    nest's tiles with A's two row strips resident (A read once), a third
    less than the plain nest reads."""
    module, res = run_default(512, 768, 512)
    assert is_pipelined(module)
    ratio = res.cycles / res.report["bound_cycles"]
    assert ratio <= 1.25, f"{res.cycles} cycles = {ratio:.3f} x bound {res.report['bound_cycles']}"
    _, plain = run_default(512, 768, 512, "matmul-schedule=simple")
    shape = MatmulShape(512, 768, 512)
    model = choose_tiling(shape, TARGET, pipelined=True, resident_a=True)
    assert model.row_strips
    assert res.report["bytes"]["gm_to_l1"] == model.traffic.read_bytes(shape) == 2 * (
        512 * 768 + 768 * 512 * 2)
    assert plain.report["bytes"]["gm_to_l1"] == 2 * (512 * 768 * 2 + 768 * 512 * 2)
    assert res.report["bytes"]["ub_to_gm"] == plain.report["bytes"]["ub_to_gm"]
    assert res.cycles < 0.8 * plain.cycles


@pytest.mark.slow
@pytest.mark.parametrize("K,limit", [(768, 1.20), (3072, 1.10)])
def test_issue_matmuls_reach_their_ratio(K, limit):
    """bench/pipeline.py's matmuls (precise sync with double buffering)."""
    _, res = run_default(512, 768, K)
    ratio = res.cycles / res.report["bound_cycles"]
    assert ratio <= limit, f"{res.cycles} cycles = {ratio:.3f} x bound {res.report['bound_cycles']}"


@pytest.mark.parametrize("schedule", ["simple", "pipelined"])
def test_f16_write_back_in_several_ub_chunks(schedule):
    """A 256 x 256 C tile in f16 leaves through UB in several chunks (f32 and
    f16 copies of all 16 column blocks exceed UB): each chunk must have its
    own lifetime, or memory planning overflows UB (it did for the nest)."""
    module, _ = compile_and_run(256, 32, 256, f"npu-lower{{cores=1 m=256 k=256 matmul-schedule={schedule}}}",
                                out="f16")
    assert is_pipelined(module) == (schedule == "pipelined")
    assert len([op for op in walk(module.operation) if op.name == "cce.copy_ub_to_gm"]) > 1


def test_npu_lower_forwards_the_schedule_options():
    # 2 C tiles of 32 x 64, l1-chunk=32 of N=96: 6 (tile, chunk) iterations,
    # one A and one B copy each; c-pieces=1: the mads cover the whole tile.
    module, res = compile_and_run(64, 96, 64, "npu-lower{cores=1 m=32 k=64 l1-chunk=32 c-pieces=1}")
    assert is_pipelined(module)
    assert res.report["pipes"]["MTE2"]["instructions"] == 12
    mads = [op for op in walk(module.operation) if op.name == "cce.mad"]
    assert mads and {op.attributes["k"].value for op in mads} == {64}


def test_npu_lower_forwards_resident_a():
    """npu-lower keeps A resident by default (A read once) and streams it per
    column tile with matmul-resident-a=false; both right."""
    M, N, K = 128, 192, 192
    _, on = run_default(M, N, K, "m=128 k=96")
    _, off = run_default(M, N, K, "m=128 k=96 matmul-resident-a=false")
    assert on.report["bytes"]["gm_to_l1"] == 2 * (M * N + N * K)
    assert off.report["bytes"]["gm_to_l1"] == 2 * (2 * M * N + N * K)


def test_npu_lower_forwards_the_plan_options():
    """npu-lower forwards matmul-timed-residency (false: 128x2048x768 streams
    A per 384-wide column tile instead of keeping it in L1) and
    c-piece-rows (2: the C pieces of 128x64 tiles in a 2 x 1 grid, mads of
    64 rows)."""
    M, N, K = 128, 2048, 768
    _, timed = run_default(M, N, K, "c-pieces=2")
    _, before = run_default(M, N, K, "c-pieces=2 matmul-timed-residency=false")
    assert timed.report["bytes"]["gm_to_l1"] == 2 * (M * N + N * K)
    assert before.report["bytes"]["gm_to_l1"] == 2 * (2 * M * N + N * K)
    module, _ = run_default(128, 256, 128, "k=64 c-pieces=2 c-piece-rows=2")
    assert {op.attributes["m"].value for op in walk(module.operation)
            if op.name == "cce.mad"} == {64}


def test_explicit_n_keeps_the_pipelined_schedule():
    """The model's tiles given explicitly (n = 128 fills L0A once) keep the
    pipelined schedule with an L0 sub-step that fits two slots: correct, and
    within the ratio to the bound the model's own choice reaches (the test
    above; with the nest it was 13% slower)."""
    module, res = run_default(512, 768, 512, "m=256 n=128 k=256")
    assert is_pipelined(module)
    ratio = res.cycles / res.report["bound_cycles"]
    assert ratio <= 1.25, f"{res.cycles} cycles = {ratio:.3f} x bound {res.report['bound_cycles']}"


def test_cost_model_picks_a_pipelined_tiling_for_bert_qkv():
    """128x768x2304 (BERT's fused QKV, fp16 out): the default lowering used
    to take k=512, which does not divide K and ran the plain nest (123.6k
    cycles); ranked by time it takes k=384 and pipelines (85.3k)."""
    module, res = compile_and_run(128, 768, 2304, "npu-lower{cores=1}", out="f16")
    assert is_pipelined(module)
    _, nest = compile_and_run(128, 768, 2304, "npu-lower{cores=1 m=128 k=512}", out="f16")
    assert res.cycles < 0.8 * nest.cycles, (res.cycles, nest.cycles)
