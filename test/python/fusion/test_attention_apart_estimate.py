"""The standalone attention kernel's estimate (`npu.costmodel.attention.cost.tile_cost`
with `path`, `npu.costmodel.attention.serial_steps`), which npu-fuse-attention
reports for its tile and npu-fuse-attention-projection weighs the fused
kernel against (issue 26, "an honest cost model"): a key tile that fits
L0B once but not twice makes each step one chain, and each run of GM
copies costs MTE2 its latency."""

from __future__ import annotations

import pytest

from npu.costmodel.attention import serial_steps
from npu.costmodel.attention.cost import tile_cost
from npu.target import get_target

# BERT-base: 12 heads of 64 (4 column blocks), f16 softmax, Q, K, V read as
# f16 rows, the context written as the next matmul's Nz operand.
HEADS, D1 = 12, 4


def cost(s1: int, qb: int, kb: int, resident: bool, path: bool = True, rows: bool = True):
    t = get_target("ascend910")
    return tile_cost(HEADS, s1, D1, qb, kb, "f16", resident, rows, True, t, path=path)


def test_one_chunk_that_fits_l0b_once_is_serial():
    """208 keys (13 blocks): K^T and V take 59,904 of L0B's 65,536 bytes,
    one chunk but not two steps' worth; 256 keys run in three chunks that
    alternate two buffers. 128 keys (36,864 bytes, twice 73,728) would be
    serial too, but at seq 128 that is one tile a head, whose steps are
    the heads (`head_pipeline`): `tile_cost` gives it no steps' path."""
    t = get_target("ascend910")
    assert serial_steps.serial(13, D1, t)
    assert not serial_steps.serial(16, D1, t)
    assert serial_steps.serial(8, D1, t)
    assert cost(8, 8, 8, False).path == 0


def test_bert208s_steps_are_one_chain():
    """Seq 208 at tile 112 x 208, K and V reloaded per query tile: the
    simulator's kernel takes 130,268 cycles (5,570 a step from one P.V to
    the next) against 74,880 of its busiest pipe; the steps' path is within
    20% of it, and the busy cycles of each pipe do not change."""
    with_path, without = cost(13, 7, 13, False), cost(13, 7, 13, False, path=False)
    assert without.cycles == 74880 and without.path == 0
    assert with_path.vector == without.vector and with_path.cube == without.cube
    assert with_path.path > with_path.mte2 > without.mte2
    assert 0.8 <= 130268 / with_path.cycles <= 1.2


def test_bert197s_steps_are_one_chain():
    """Seq 197 (13 blocks, Q, K and V laid out as fractals by kernels of
    their own, so read as fractals): 104,071 simulated against 65,856 by
    the busiest pipe."""
    c = cost(13, 7, 13, False, rows=False)
    assert cost(13, 7, 13, False, path=False, rows=False).cycles == 65856
    assert 0.8 <= 104071 / c.cycles <= 1.2 < 104071 / 65856


def test_one_tile_a_head_pays_a_gm_latency_a_head():
    """Seq 128, one tile a head: MTE2 loads each head's Q, K and V as one
    run and waits for it to land, 2,654 cycles a head against 2,304 of
    copies (36,337 simulated, 29,652 by the busiest pipe); no steps' path."""
    t = get_target("ascend910")
    c, old = cost(8, 8, 8, False), cost(8, 8, 8, False, path=False)
    assert c.path == 0
    assert c.mte2 == old.mte2 + HEADS * t.path("gm_to_l1").latency
    assert 0.8 <= 36337 / c.cycles <= 1.2 < 36337 / old.cycles


def test_chunked_key_tiles_keep_their_estimate():
    """Seq 256 (tile 64 x 256 in three key chunks, K and V in L1): vector-bound,
    simulated 92,839 against 100,608; the path adds nothing."""
    assert cost(16, 4, 16, True).cycles == cost(16, 4, 16, True, path=False).cycles == 100608


def test_on_chip_attention_has_no_path():
    """The fused projection's attention (Q, K, V made on chip) has its own
    steps' model (`weight_ring`): `path` adds nothing to it."""
    t = get_target("ascend910")
    a = tile_cost(HEADS, 13, D1, 7, 13, "f16", False, True, True, t, on_chip=True, path=True)
    b = tile_cost(HEADS, 13, D1, 7, 13, "f16", False, True, True, t, on_chip=True)
    assert a == b


@pytest.mark.slow
@pytest.mark.parametrize("seq", [197, 208])
def test_bert_attention_apart_against_the_simulator(seq):
    """The standalone attention's estimate (npu-fuse-attention's remark)
    against its simulated cycles (bench/fusion_estimates.py with the
    projection apart), within the issue's 20%: 1.57x and 1.38x by the
    busiest pipe, 1.05x and 0.82x with the steps' path (103,327 and 103,174
    simulated; seq 208 ran 170,221 while its K and V tiles, loaded again
    for each query tile, went through UB); the tile stays 112 x 208
    (ranked by the path, 128 x 112 in two key tiles, simulated 153,088 at
    seq 208)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
    from fusion_estimates import estimates

    rows = estimates(seq, 768, 12, 3072,
                     "npu-lower{cores=1 fuse-remarks=true fuse-attention-projection=false}")
    (row,) = [r for r in rows if r.kind == "attention"]
    assert 0.8 <= row.ratio <= 1.2, (row.predicted, row.simulated)
    assert row.simulated <= 105000, row.simulated


@pytest.mark.slow
def test_apart_is_the_two_kernels_estimates():
    """npu-fuse-attention-projection weighs the fused kernel against the two
    kernels apart by their own estimates: the projection's as npu-fuse
    gives its epilogue group (`kernel_cycles`, with the row-major stores of
    Q, K, V), a GM write and read latency, and the attention's with its
    steps' path as npu-fuse-attention reports it. BERT-base at seq 208:
    232,390 (was 165,436: the projection's cube work 89,856 and the
    attention's busiest pipe 74,880; the two kernels simulate 283,687, of
    which the cast of X before the projection is about 20,000)."""
    import re
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
    from fusion_estimates import compile_with_remarks
    from npu.frontend import bert

    groups = ("builtin.module(npu-hoist-casts,npu-fuse-horizontal,npu-fuse-attention,npu-fuse,"
              "npu-fuse-attention-projection)")
    model = bert.self_attention(208, 768, 12, 64, True, 0, bias_scale=0.5)
    _, remarks = compile_with_remarks(model, "self_attention.onnx", groups)
    text = [d.message for d in remarks]

    def figure(pattern: str) -> int:
        (found,) = [int(m.group(1)) for m in map(re.compile(pattern).search, text) if m]
        return found

    projection = figure(r"^matmul epilogue: .*\(add, cast, row-major store\).*model (\d+) cycles")
    attention = figure(r"^fused attention .*?(\d+) cycles \(vector")
    apart = figure(r"head by head on chip.* against (\d+) apart")
    t = get_target("ascend910")
    boundary = t.path("ub_to_gm").latency + t.path("gm_to_l1").latency
    assert abs(apart - (projection + boundary + attention)) <= 2, (apart, projection, attention)
    assert figure(r"head by head on chip.*estimated (\d+) cycles") < apart
