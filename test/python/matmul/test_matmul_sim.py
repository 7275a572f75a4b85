"""npu-lower-matmul compiled and simulated, compared with numpy.

Shapes come from hypothesis with a fixed budget (derandomized, so every run
checks the same cases): square and non-square, smaller than one tile, not
multiples of 16 (padded by the Nz layout, going through fractalize and
defractalize), batches, every strategy, f32 and f16 output, and explicit
small tiles that force several tiles per dimension, edge tiles and
multi-step reductions.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from helpers import assert_close
from mm_common import (BACKEND, blocks, matmul_reference, nd_matmul_program, nz,
                       nz_matmul_program, simulate_program, un_nz)

RNG_SEED = 1234


def random_matrix(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.uniform(-1.0, 1.0, size=shape).astype(np.float16)


def tile_opts(strategy: str, m: int, n: int, k: int) -> str:
    parts = [f"strategy={strategy}"] + [f"{name}={v}" for name, v in (("m", m), ("n", n), ("k", k)) if v]
    return "npu-lower-matmul{" + " ".join(parts) + "}"


def run_nz(M: int, N: int, K: int, lowering: str, out: str = "f32", batch: int = 0,
           seed: int = RNG_SEED, double_buffer: bool = False):
    rng = np.random.default_rng(seed)
    lead = (batch,) if batch else ()
    a = random_matrix(rng, *lead, M, N)
    b = random_matrix(rng, *lead, N, K)
    out_dt = np.float32 if out == "f32" else np.float16
    c0 = np.full(lead + (blocks(K), blocks(M), 16, 16), np.nan, out_dt)
    res = simulate_program(nz_matmul_program(M, N, K, out, batch), lowering, [nz(a), nz(b), c0],
                           double_buffer=double_buffer)
    got = un_nz(res.outputs[2], M, K)
    want = matmul_reference(a, b).astype(out_dt)
    # The padding rows/columns of C are A x B of zero padding: exactly 0.
    padded = res.outputs[2]
    assert np.array_equal(padded, nz(un_nz(padded, M, K))), "Nz padding of C is not zero"
    # Inputs are left intact.
    assert np.array_equal(res.outputs[0], nz(a)) and np.array_equal(res.outputs[1], nz(b))
    return got, want, res


def test_tiny_16x16x16():
    got, want, res = run_nz(16, 16, 16, "npu-lower-matmul")
    assert_close(got, want)
    assert res.report["pipes"]["M"]["instructions"] == 1  # a single mad


@pytest.mark.parametrize("double_buffer", [False, True])
@pytest.mark.parametrize("strategy", ["os", "is", "ws"])
def test_each_strategy_with_several_tiles_and_edges(strategy, double_buffer):
    # 3x3 tiles along M, a 3-step reduction (edge 16), 2 tiles along K (edge 16).
    got, want, _ = run_nz(80, 80, 48, tile_opts(strategy, 32, 32, 32), double_buffer=double_buffer)
    assert_close(got, want)


@pytest.mark.parametrize("strategy", ["is", "ws"])
def test_single_step_reduction_needs_no_strip(strategy):
    # n = N: every C tile is finished by one mad and leaves immediately.
    got, want, _ = run_nz(64, 48, 64, tile_opts(strategy, 32, 48, 32))
    assert_close(got, want)


def test_f16_output_is_converted_in_ub():
    got, want, res = run_nz(48, 64, 80, tile_opts("os", 32, 32, 48), out="f16")
    assert got.dtype == np.float16
    assert_close(got, want)
    assert res.report["pipes"]["V"]["instructions"] > 0  # L0C->UB moves and vconv


def test_auto_picks_a_strategy_and_computes_right():
    got, want, _ = run_nz(96, 32, 160, "npu-lower-matmul{strategy=auto}")
    assert_close(got, want)


@settings(max_examples=12, derandomize=True, deadline=None)
@given(M=st.integers(1, 70), N=st.integers(1, 70), K=st.integers(1, 70),
       strategy=st.sampled_from(["os", "is", "ws"]),
       m=st.sampled_from([0, 16, 32]), n=st.sampled_from([0, 16, 48]), k=st.sampled_from([0, 16, 32]),
       out=st.sampled_from(["f32", "f16"]), double_buffer=st.booleans())
def test_random_shapes_nz(M, N, K, strategy, m, n, k, out, double_buffer):
    got, want, _ = run_nz(M, N, K, tile_opts(strategy, m, n, k), out=out, double_buffer=double_buffer)
    assert_close(got, want)


@settings(max_examples=6, derandomize=True, deadline=None)
@given(batch=st.integers(2, 3), M=st.integers(1, 40), N=st.integers(1, 40), K=st.integers(1, 40),
       strategy=st.sampled_from(["os", "is", "ws"]), double_buffer=st.booleans())
def test_random_batches(batch, M, N, K, strategy, double_buffer):
    got, want, _ = run_nz(M, N, K, tile_opts(strategy, 16, 16, 16), batch=batch,
                          double_buffer=double_buffer)
    assert_close(got, want)


@settings(max_examples=5, derandomize=True, deadline=None)
@given(M=st.integers(1, 50), N=st.integers(1, 50), K=st.integers(1, 50),
       strategy=st.sampled_from(["os", "is", "ws"]))
def test_random_shapes_nd_through_fractalize(M, N, K, strategy):
    """ND operands of any size: fractalize pads, matmul, defractalize trims."""
    rng = np.random.default_rng(RNG_SEED + M * 10000 + N * 100 + K)
    a, b = random_matrix(rng, M, N), random_matrix(rng, N, K)
    inputs = [a, b, np.full((M, K), np.nan, np.float32),
              np.full((blocks(N), blocks(M), 16, 16), np.nan, np.float16),
              np.full((blocks(K), blocks(N), 16, 16), np.nan, np.float16),
              np.full((blocks(K), blocks(M), 16, 16), np.nan, np.float32)]
    res = simulate_program(nd_matmul_program(M, N, K), f"npu-lower-fractalize,{tile_opts(strategy, 16, 16, 16)}",
                           inputs)
    assert_close(res.outputs[2], matmul_reference(a, b))


needs_planning = pytest.mark.skipif(
    BACKEND != "pipeline",
    reason="needs npu-plan-memory: without it every alloc of the 512x768x768 nest gets its own address")


@needs_planning
@pytest.mark.parametrize("double_buffer", [False, True])
def test_bert_shape_default_tiling(double_buffer):
    got, want, res = run_nz(512, 768, 768, "npu-lower-matmul", double_buffer=double_buffer)
    assert_close(got, want)
    assert not res.hazards


@pytest.mark.slow
@needs_planning
@settings(max_examples=40, derandomize=True, deadline=None)
@given(M=st.integers(1, 300), N=st.integers(1, 300), K=st.integers(1, 300),
       strategy=st.sampled_from(["os", "is", "ws", "auto"]))
def test_random_shapes_large(M, N, K, strategy):
    got, want, _ = run_nz(M, N, K, f"npu-lower-matmul{{strategy={strategy}}}")
    assert_close(got, want)


@pytest.mark.parametrize("strategy,tiles", [("os", (32, 32, 48)), ("is", (48, 32, 32)),
                                            ("ws", (32, 48, 32)), ("is", (32, 80, 32))])
def test_simulated_gm_traffic_is_the_models(strategy, tiles):
    """The cost model counts exactly the bytes the generated code moves
    (edge tiles included): GM->L1 reads and UB->GM write-back."""
    from npu.costmodel.matmul.fitting import MatmulShape
    from npu.costmodel.matmul.tiling import choose_tiling
    from npu.target import get_target

    M, N, K = 96, 80, 112
    got, want, res = run_nz(M, N, K, tile_opts(strategy, *tiles))
    assert_close(got, want)
    shape = MatmulShape(M, N, K)
    model = choose_tiling(shape, get_target(), strategy, *tiles).traffic
    assert res.report["bytes"]["gm_to_l1"] == model.read_bytes(shape)
    assert res.report["bytes"]["ub_to_gm"] == model.write_bytes(shape)


@pytest.mark.parametrize("double_buffer", [False, True])
@pytest.mark.parametrize("l1_steps", [2, 3])
def test_os_with_several_reduction_steps_per_l1_copy(l1_steps, double_buffer):
    # N = 112: 7 steps of 16 -> chunks of 2 or 3 steps plus an edge chunk.
    lowering = f"npu-lower-matmul{{m=32 n=16 k=32 l1-steps={l1_steps}}}"
    got, want, res = run_nz(80, 112, 48, lowering, double_buffer=double_buffer)
    assert_close(got, want)
    # Same GM traffic as one step per copy, in fewer, longer transfers.
    _, _, one = run_nz(80, 112, 48, "npu-lower-matmul{m=32 n=16 k=32}")
    assert res.report["bytes"]["gm_to_l1"] == one.report["bytes"]["gm_to_l1"]
    assert res.report["pipes"]["MTE2"]["instructions"] < one.report["pipes"]["MTE2"]["instructions"]


@pytest.mark.parametrize("N,K", [(16, 16), (32, 48)])
def test_tall_matrix_gaps_past_the_copy_field(N, K):
    """M = 36,864 (2,304 row blocks): with m = 2048 the GM gap between the
    column blocks of a C tile (and of an A tile when N > 16) is the rest of
    the column, over the 16-bit gap field; those copies go one burst each."""
    M = 2304 * 16
    got, want, res = run_nz(M, N, K, tile_opts("os", 2048, 0, 0))
    assert_close(got, want)
