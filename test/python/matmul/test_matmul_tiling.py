"""The matmul cost model (npu.costmodel.matmul.tiling, .fitting): thesis formulas, fitting limits
derived from the target, tie-breaking and explicit tiles."""

from __future__ import annotations

from dataclasses import replace

import pytest

from npu.costmodel.matmul.fitting import MatmulShape, Tiles, first_overflow, traffic
from npu.costmodel.matmul.tiling import TilingError, choose_tiling
from npu.target import KIB, get_target

BERT = MatmulShape(512, 768, 768)
T910 = get_target("ascend910")


def test_bert_os_optimum_is_the_thesis_one():
    c = choose_tiling(BERT, T910, "os")
    assert c.tiles == Tiles(256, 128, 256)
    assert c.traffic.reads == 2_359_296
    assert c.traffic.c_writes == 512 * 768
    assert c.traffic.write_bytes(BERT) == 512 * 768 * 4


@pytest.mark.parametrize("m,n,k", [(256, 128, 256), (128, 256, 128), (32, 768, 32), (64, 64, 256)])
def test_traffic_matches_the_thesis_formulas(m, n, k):
    M, N, K = BERT.M, BERT.N, BERT.K
    t = Tiles(m, n, k)
    assert traffic("is", BERT, t).reads == M * N + M * N * K // m
    assert traffic("ws", BERT, t).reads == K * N + M * N * K // k
    assert traffic("os", BERT, t).reads == M * N * K * (m + k) // (m * k)
    for s in ("os", "is", "ws"):
        assert traffic(s, BERT, t).c_writes == M * K  # write-back counted once


def test_fitting_limits_on_ascend910_are_the_thesis_ones():
    """mn <= 2^15, nk <= 2^15, mk <= 2^16 for f16 in / f32 out (OS)."""
    assert first_overflow("os", BERT, Tiles(256, 128, 256), T910) is None  # 2^15, 2^15, 2^16
    over = first_overflow("os", BERT, Tiles(256, 144, 128), T910)
    assert over.buffer == "l0a" and over.needed - over.capacity == 256 * 16 * 2
    over = first_overflow("os", BERT, Tiles(128, 128, 272), T910)
    assert over.buffer == "l0b"
    over = first_overflow("os", BERT, Tiles(272, 64, 256), T910)
    assert over.buffer == "l0c" and over.needed == 272 * 256 * 4


def test_every_chosen_tiling_fits_and_is_fractal():
    for shape in (BERT, MatmulShape(512, 768, 3072), MatmulShape(48, 1024, 80), MatmulShape(16, 16, 16)):
        for s in ("os", "is", "ws"):
            c = choose_tiling(shape, T910, s)
            assert first_overflow(s, shape, c.tiles, T910) is None
            for v in (c.tiles.m, c.tiles.n, c.tiles.k):
                assert v % T910.fractal == 0


def test_limits_follow_the_target_description():
    t910b = get_target("ascend910b")  # L0C 128 KiB: mk <= 2^15
    c = choose_tiling(BERT, t910b, "os")
    assert c.tiles.m * c.tiles.k * 4 <= 128 * KIB
    assert c.traffic.reads == 3_538_944
    small = replace(T910, name="tiny", buffer_bytes={**T910.buffer_bytes, "l0a": 8 * KIB})
    c = choose_tiling(BERT, small, "os")
    assert c.tiles.m * c.tiles.n * 2 <= 8 * KIB


def test_equal_traffic_prefers_larger_buffers():
    # n does not change OS traffic: the largest n that fits wins.
    c = choose_tiling(BERT, T910, "os")
    assert choose_tiling(BERT, T910, "os", n=64).traffic == c.traffic
    assert c.tiles.n == 128


def test_auto_is_the_cheapest_strategy():
    for shape in (BERT, MatmulShape(32, 4096, 32), MatmulShape(2048, 64, 64)):
        auto = choose_tiling(shape, T910, "auto")
        each = [choose_tiling(shape, T910, s).traffic.total for s in ("os", "is", "ws")]
        assert auto.traffic.total == min(each)


def test_explicit_tiles_override_and_are_clamped():
    c = choose_tiling(BERT, T910, "os", 128, 256, 128)
    assert c.tiles == Tiles(128, 256, 128) and c.traffic.reads == 4_718_592
    small = MatmulShape(32, 48, 16)
    assert choose_tiling(small, T910, "os", 256, 256, 256).tiles == Tiles(32, 48, 16)


def test_explicit_tile_that_does_not_fit_names_buffer_and_overflow():
    with pytest.raises(TilingError, match=r"does not fit L0A: the A tile 512x128 needs 131072 bytes, "
                                          r"capacity 65536 bytes \(overflow 65536 bytes\)"):
        choose_tiling(BERT, T910, "os", 512, 128, 256)
    with pytest.raises(TilingError, match=r"does not fit L0C: the C row strip 256x768"):
        choose_tiling(BERT, T910, "is", 256, 128, 256)
    with pytest.raises(TilingError, match="multiple of the fractal size"):
        choose_tiling(BERT, T910, "os", m=24)


def test_edge_tiles_are_counted_as_loaded():
    # k = 512 on K = 768: two column strips (one of 256), so A is read twice.
    t = traffic("ws", BERT, Tiles(64, 64, 512))
    assert t.a_reads == 2 * 512 * 768 and t.b_reads == 768 * 768


@pytest.mark.parametrize("strategy", ["os", "auto"])
def test_search_cost_is_bounded_by_the_buffers(strategy, monkeypatch):
    """The search evaluates only the (m, k) pairs that fit (and their
    first misfits), each with a binary search over n: 16x the matrix edge
    costs only the longer binary searches (log N), not 256x the (m, k)
    pairs ((M/16) * (K/16) = 2^24 at 65536^3)."""
    import npu.costmodel.matmul.fitting as fitting

    calls = []
    real = fitting.first_overflow
    monkeypatch.setattr(fitting, "first_overflow", lambda *a: calls.append(1) or real(*a))
    counts, choices = [], []
    for edge in (4096, 65536):
        calls.clear()
        choices.append(choose_tiling(MatmulShape(edge, edge, edge), T910, strategy).tiles)
        counts.append(len(calls))
    assert counts[1] < 1.5 * counts[0] and counts[1] < 25_000, counts
    assert choices[0] == choices[1] == Tiles(256, 128, 256)


def test_pipelined_ranking_prefers_tiles_that_divide():
    """BERT's fused QKV (128x768x2304): by traffic k=512 wins (5 column strips,
    the last a 256-wide edge), but only dividing C tiles stream through the
    pipelined schedule; ranked by estimated time, k=384 (6 strips) wins."""
    qkv = MatmulShape(128, 768, 2304, out_bytes=2)
    assert choose_tiling(qkv, T910, "os").tiles.k == 512
    pick = choose_tiling(qkv, T910, "os", pipelined=True)
    assert (pick.tiles.m, pick.tiles.k) == (128, 384)
    # Where the traffic optimum divides M x K, the ranking does not change it.
    for shape in (BERT, MatmulShape(512, 768, 3072), MatmulShape(128, 768, 3072)):
        assert choose_tiling(shape, T910, "os", pipelined=True) == choose_tiling(shape, T910, "os")


@pytest.mark.parametrize("strategy", ["is", "ws"])
def test_pipelined_flag_leaves_is_and_ws_ranked_by_traffic(strategy):
    shape = MatmulShape(128, 768, 2304)
    assert choose_tiling(shape, T910, strategy, pipelined=True) == choose_tiling(shape, T910, strategy)
