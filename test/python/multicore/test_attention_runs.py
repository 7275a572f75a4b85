"""Fused attention over a grid of head parts and runs of query rows
(`npu-split-cores`, `passes/split_cores/attention.py`): bit for bit the
one-core context, faster than heads alone when the heads are fewer than the
cores, the grid the cost model ranks cheapest, and its barrier needed."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fusion"))
from attention_patterns import attention  # noqa: E402
from helpers import compile_and_simulate  # noqa: E402

from npu import diagnostics  # noqa: E402
from npu.costmodel.attention.pattern import ATTENTION_ATTR  # noqa: E402
from npu.ir import CORE_PART_ATTR, make_context, parse_module, walk  # noqa: E402
from npu.pipeline import run_pipeline  # noqa: E402
from npu.simulator import SimulationError, simulate  # noqa: E402
from npu.target import get_target  # noqa: E402


def _program(heads: int, seq: int) -> str:
    """BERT's attention as the frontend emits it: f32 projections [1, S, H, 64]
    in, the f16 Nz context out (the out-projection's A operand)."""
    return attention(heads, seq, 64, projections=True, nz_out=True)


def _inputs(heads: int, seq: int) -> list[np.ndarray]:
    rng = np.random.default_rng(11)
    qkv = [rng.standard_normal((1, seq, heads, 64)).astype(np.float32) for _ in range(3)]
    return qkv + [np.zeros((heads * 4, seq // 16, 16, 16), np.float16)]


def _split_remark(text: str, cores: int) -> tuple[str, list]:
    module = parse_module(text, make_context())
    with diagnostics.collecting() as engine:
        run_pipeline(module, f"builtin.module(npu-fuse-attention,npu-split-cores{{cores={cores} "
                             "remarks=true})", get_target())
    (remark,) = [d.message for d in engine.diagnostics if "npu-split-cores" in d.message]
    # the attention groups that divide their query rows themselves (the
    # head transposes outside a group may carry npu.core_part too)
    parts = [op for op in walk(module.operation)
             if CORE_PART_ATTR in op.attributes and ATTENTION_ATTR in op.attributes]
    return remark, parts


# (heads, seq, cores, grid): S = H * 64 (2 heads of 128 rows: the heads' columns
# and the rows have one size), several query tiles per run (seq 512), BERT's
# 12 heads on 32 cores (24 of them: two runs a head).
@pytest.mark.parametrize("heads,seq,cores,grid", [(2, 128, 8, "2x4"), (2, 512, 8, "2x4"),
                                                  (12, 128, 32, "12x2")])
def test_query_runs_equal_one_core_bit_for_bit(heads: int, seq: int, cores: int,
                                               grid: str) -> None:
    text = _program(heads, seq)
    remark, parts = _split_remark(text, cores)
    assert remark.endswith(f"attention {grid}") and len(parts) == 1
    ins = _inputs(heads, seq)
    one, _, r1 = compile_and_simulate(text, "npu-lower{cores=1}", ins)
    many, _, rn = compile_and_simulate(text, f"npu-lower{{cores={cores}}}", ins)
    assert rn.hazards == [] and rn.report["block_dim"] == np.prod([int(g) for g in grid.split("x")])
    assert np.array_equal(one[3].view(np.uint16), many[3].view(np.uint16))
    assert rn.cycles < r1.cycles


def test_query_runs_beat_heads_alone() -> None:
    # 12 heads on 32 cores: heads alone keep 20 cores idle; two runs a head
    # use 24 (the model ranks 12x2 cheapest: it reads each head's K and V
    # twice, 6x4 four times, 4x8 eight times).
    text, ins = _program(12, 128), _inputs(12, 128)
    heads_alone = compile_and_simulate(text, "npu-lower{cores=12}", ins)[2]
    runs = compile_and_simulate(text, "npu-lower{cores=32}", ins)[2]
    assert heads_alone.report["block_dim"] == 12 and runs.report["block_dim"] == 24
    assert runs.cycles < 0.85 * heads_alone.cycles, (runs.cycles, heads_alone.cycles)


def test_an_odd_seq_splits_over_heads_only() -> None:
    # 200 rows are no whole 16-row blocks: no query runs, the heads split.
    remark, parts = _split_remark(attention(4, 200, 64, projections=True), 8)
    assert remark.endswith("attention 4") and parts == []


def test_deleting_the_barrier_after_the_runs_is_a_race() -> None:
    # The context, written by runs of rows and head columns, is read by a
    # defractalize cut by rows: every core reads rows other cores wrote.
    text = _program(2, 128).replace(
        '%y: memref<8x8x16x16xf16, "gm">) {', '%y: memref<8x8x16x16xf16, "gm">, '
        '%z: memref<128x128xf16, "gm">) {').replace(
        "  return\n}", '  "ascend.defractalize"(%y, %z) : (memref<8x8x16x16xf16, "gm">, '
        'memref<128x128xf16, "gm">) -> ()\n  return\n}')
    module = parse_module(text, make_context())
    run_pipeline(module, "builtin.module(npu-lower{cores=8})", get_target())
    lowered = module.operation.get_asm(print_generic_op_form=True)
    barrier = '"hivm.sync_all"() : () -> ()'
    assert lowered.count(barrier) == 1
    ins = _inputs(2, 128) + [np.zeros((128, 128), np.float16)]
    ok = simulate(parse_module(lowered, make_context()), ins)
    assert ok.hazards == [] and ok.report["block_dim"] == 8
    cut = lowered.replace(barrier, "")
    with pytest.raises(SimulationError) as e:
        simulate(parse_module(cut, make_context()), ins)
    assert e.value.kind == "race"


def _remark_and_outputs(model, ins: dict, cores: int):
    import npu

    with diagnostics.collecting() as engine:
        remarks = "split-cores-remarks=true" if cores > 1 else ""  # (refused on one core)
        kernel = npu.compile(model, cores=cores,
                             pipeline=f"builtin.module(npu-lower{{{remarks}}})")
    split = [d.message for d in engine.diagnostics if "npu-split-cores:" in d.message]
    outs, report = kernel(*[ins[n] for n in kernel.input_names])
    return split, outs, report


@pytest.mark.parametrize("kind", ["key mask", "mask per head"])
def test_masks_of_partial_32_byte_blocks_split_too(kind: str) -> None:
    # seq 100 (HF's padding to the longest): every core realigns the key
    # mask's last values in UB, or the last row of each of its tiles of a
    # mask per head, bit for bit as on one core; both attentions split by
    # their 2 heads (flat runs of query blocks at partial blocks, which gave
    # the mask per head 7 runs of 2 blocks, are the vit branch's now, for
    # Nz operands only).
    from test_attention_key_mask import feeds as mask_feeds, masked_attention
    from test_attention_scores_mask import causal

    if kind == "key mask":
        model, ins = masked_attention(100), mask_feeds(100, -1e9)
    else:
        model, ins = masked_attention(100, mask_shape=[1, 2, 100, 100]), mask_feeds(100, 0.0)
        ins["mask"] = causal(100, -1e9, 2) + np.random.default_rng(2).uniform(
            -1, 1, (1, 2, 100, 100)).astype(np.float32)
    (remark,), many, report = _remark_and_outputs(model, ins, 8)
    assert remark.endswith("attention 2")
    assert report["hazards"] == []
    _, one, _ = _remark_and_outputs(model, ins, 1)
    assert np.array_equal(one[0].view(np.uint32), many[0].view(np.uint32))


@pytest.mark.parametrize("kind", ["key mask", "nan guard", "scores mask", "mask per head"])
def test_masked_and_guarded_attention_split_too(kind: str) -> None:
    # HF BERT's attention: an additive key mask [1, 1, 1, S] and sdpa's NaN
    # guard (its zero a [1, 1, 1, 1] scalar) are read whole by every core;
    # both kept the whole attention on one core before. A causal mask of the
    # scores [1, 1, S, S] too: each core reads its query rows' tiles of it.
    from test_attention_key_mask import feeds as mask_feeds, masked_attention
    from test_attention_nan_guard import feeds as guard_feeds, guarded_attention
    from test_attention_scores_mask import causal

    if kind in ("scores mask", "mask per head"):  # per head: cut with the heads
        heads = 2 if kind == "mask per head" else 1
        model = masked_attention(256, mask_shape=[1, heads, 256, 256])
        ins = mask_feeds(256, 0.0)
        ins["mask"] = causal(256, -1e9, heads) + np.random.default_rng(2).uniform(
            -1, 1, (1, heads, 256, 256)).astype(np.float32)
    else:
        model, ins = ((masked_attention(256), mask_feeds(256, -1e9)) if kind == "key mask"
                      else (guarded_attention(256), guard_feeds(256, "nan_key")))
    (remark,), many, report = _remark_and_outputs(model, ins, 8)
    assert "attention 2x4" in remark and report["hazards"] == []
    _, one, _ = _remark_and_outputs(model, ins, 1)
    assert np.array_equal(one[0].view(np.uint32), many[0].view(np.uint32))
