"""Fused attention over flat runs of (head, query row) blocks that cross head
boundaries (`npu.costmodel.attention.flat_runs`, `passes/split_cores/attention.py`,
`passes/lower_attention/flat_runs.py`): the shapes of the runs, bit for bit
the one-core context on runs that end one head and start the next, the
model's choice on BERT's 12 heads, and the barrier after them needed."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fusion"))
from attention_patterns import attention  # noqa: E402
from helpers import compile_and_simulate  # noqa: E402

from npu.costmodel.attention import flat_runs as flat  # noqa: E402
from npu.costmodel.attention.pattern import ATTENTION_ATTR  # noqa: E402
from npu.ir import CORE_PART_ATTR, make_context, parse_module, walk  # noqa: E402
from npu.pipeline import run_pipeline  # noqa: E402
from npu.simulator import SimulationError, simulate  # noqa: E402
from npu.target import get_target  # noqa: E402

from test_attention_runs import _inputs, _program, _split_remark  # noqa: E402


def test_the_shapes_of_bert_seq512_runs_on_32_cores() -> None:
    # 12 heads x 32 blocks over 32 cores: 12 blocks a core; of every 8 cores
    # one ends a head with 8 blocks and one with 4 (starting at blocks 24, 28)
    assert flat.runs_fit(12, 32, 32)
    assert flat.variants(12, 32, 32) == [flat.Variant((8, 4), 24), flat.Variant((4, 8), 28),
                                         flat.Variant((12,), None)]
    assert flat.variants(12, 8, 32) == [flat.Variant((2, 1), 6), flat.Variant((1, 2), 7),
                                        flat.Variant((3,), None)]


@pytest.mark.parametrize("heads,blocks,runs", [(12, 32, 24), (12, 32, 8), (12, 32, 5),
                                               (12, 8, 12)])
def test_runs_a_grid_covers_or_uneven_are_not_flat(heads: int, blocks: int, runs: int) -> None:
    # 24 runs of 16 blocks divide a head (the grid 12x2); 8 runs are longer
    # than a head; 5 do not divide 384 blocks; 12 runs are the heads
    assert not flat.runs_fit(heads, blocks, runs)


def test_bert_seq512_attention_takes_flat_runs_on_32_cores() -> None:
    # the model: 12x2 on 24 cores does 16 query blocks of a head a core; flat
    # runs do 12, two heads' K and V on the cores crossing a boundary
    remark, parts = _split_remark(_program(12, 512), 32)
    assert remark.endswith("attention 32 runs of 192 (head, query) rows across heads")
    assert len(parts) == 1 and parts[0].attributes[CORE_PART_ATTR] is not None
    assert flat.FLAT_RUNS_ATTR in parts[0].attributes


def _forced(cores: int, runs: int) -> str:
    return f"npu-lower{{cores={cores} split-cores-grids=attention:0x{runs}}}"


def test_runs_crossing_heads_equal_one_core_bit_for_bit() -> None:
    # 3 heads x 8 blocks over 8 cores: 3 blocks a core; core 2 does head 0's
    # blocks 6-7 and head 1's block 0, core 5 head 1's block 7 and head 2's 0-1
    text, ins = _program(3, 128), _inputs(3, 128)
    one, _, r1 = compile_and_simulate(text, "npu-lower{cores=1}", ins)
    many, _, rn = compile_and_simulate(text, _forced(8, 8), ins)
    assert rn.hazards == [] and rn.report["block_dim"] == 8
    assert np.array_equal(one[3].view(np.uint16), many[3].view(np.uint16))
    assert rn.cycles < r1.cycles


@pytest.mark.parametrize("ub_fraction", [0.5, 0.1])
def test_segments_of_several_query_tiles_bit_for_bit(ub_fraction: float) -> None:
    # 3 heads x 16 blocks over 8 cores: 6 blocks a core; core 2 ends head 0
    # with 4 blocks and starts head 1 with 2, core 5 ends head 1 with 2 and
    # does 4 of head 2: segments of several query tiles (of 2 blocks, K and
    # V kept in L1 over them; or of 1 block with two key tiles: the online
    # softmax)
    text, ins = _program(3, 256), _inputs(3, 256)
    fuse = f"npu-fuse-attention{{ub-fraction={ub_fraction}}}"
    one, _, r1 = compile_and_simulate(text, f"builtin.module({fuse},npu-lower{{cores=1}})", ins)
    many, _, rn = compile_and_simulate(text, f"builtin.module({fuse},{_forced(8, 8)})",
                                       ins)
    assert rn.hazards == [] and rn.report["block_dim"] == 8
    assert np.array_equal(one[3].view(np.uint16), many[3].view(np.uint16))
    assert rn.cycles < r1.cycles


def test_deleting_the_barrier_after_flat_runs_is_a_race() -> None:
    # The context, written by runs crossing heads, is read by a
    # defractalize cut by rows: every core reads rows other cores wrote.
    text = _program(3, 128).replace(
        '%y: memref<12x8x16x16xf16, "gm">) {', '%y: memref<12x8x16x16xf16, "gm">, '
        '%z: memref<128x192xf16, "gm">) {').replace(
        "  return\n}", '  "ascend.defractalize"(%y, %z) : (memref<12x8x16x16xf16, "gm">, '
        'memref<128x192xf16, "gm">) -> ()\n  return\n}')
    module = parse_module(text, make_context())
    run_pipeline(module, f"builtin.module({_forced(8, 8)})", get_target())
    lowered = module.operation.get_asm(print_generic_op_form=True)
    assert not any(ATTENTION_ATTR in o.attributes for o in walk(module.operation))
    barrier = '"hivm.sync_all"() : () -> ()'
    assert lowered.count(barrier) >= 1
    ins = _inputs(3, 128) + [np.zeros((128, 192), np.float16)]
    ok = simulate(parse_module(lowered, make_context()), ins)
    assert ok.hazards == [] and ok.report["block_dim"] == 8
    for k in range(lowered.count(barrier)):  # each barrier in turn
        at = -1
        for _ in range(k + 1):
            at = lowered.index(barrier, at + 1)
        cut = lowered[:at] + lowered[at + len(barrier):]
        with pytest.raises(SimulationError) as e:
            simulate(parse_module(cut, make_context()), ins)
        assert e.value.kind == "race"
