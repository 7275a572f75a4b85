"""Multi-core launches: npu-split-cores + the simulator's N cores on one GM.

Every op family compiled for several cores must give the single-core
results bit for bit (each core computes its slice with the same
instructions); GM conflicts between cores are races; launches that cannot
work are refused with a clear message.
"""

from __future__ import annotations

import numpy as np
import pytest

from helpers import random_inputs
from npu.ir import ParseError, make_context, parse_module
from npu.pipeline import PipelineError, run_pipeline
from npu.simulator import SimulationError, simulate
from npu.target import get_target

NZ_A = 'memref<4x8x16x16xf16, "gm">'   # A 128 x 64 (M x K) in Nz: [K1, M1, 16, 16]
NZ_B = 'memref<4x4x16x16xf16, "gm">'   # B 64 x 64: [N1, K1, 16, 16]
NZ_C = 'memref<4x8x16x16xf32, "gm">'   # C 128 x 64: [N1, M1, 16, 16]


def _func(args: list[str], body: str, attrs: str = "") -> str:
    named = ", ".join(f"%a{i}: {t}" for i, t in enumerate(args))
    return f"func.func @k({named}){attrs} {{\n  {body}\n  return\n}}\n"


def _op(name: str, types: list[str], attrs: str = "") -> str:
    return _func(types, f'"{name}"({", ".join(f"%a{i}" for i in range(len(types)))}) {attrs}: '
                 f'({", ".join(types)}) -> ()')


V = 'memref<4096xf16, "gm">'
M2 = 'memref<64x256xf16, "gm">'
M2_32 = 'memref<64x256xf32, "gm">'
ROW = 'memref<256xf16, "gm">'

# name -> (program, cores asked for, cores launched)
CASES = {
    "add-1d": (_op("ascend.add", [V, V, V]), 4, 4),
    "mul-2d": (_op("ascend.mul", [M2, M2, M2]), 8, 8),
    "add-broadcast-row": (_op("ascend.add", [M2, ROW, M2]), 4, 4),
    "exp": (_op("ascend.exp", [M2, M2]), 2, 2),
    "adds": (_op("ascend.adds", [M2, M2], "{scalar = 1.5 : f64} "), 4, 4),
    "cast": (_op("ascend.cast", [M2, M2_32], '{round_mode = "none"} '), 4, 4),
    "reduce-sum": (_op("ascend.reduce_sum", [M2, 'memref<64xf16, "gm">']), 2, 2),
    "transpose-heads": (_op("ascend.transpose", ['memref<4x64x32xf16, "gm">',
                                                 'memref<4x32x64xf16, "gm">'],
                            "{permutation = array<i64: 0, 2, 1>} "), 8, 4),
    "fractalize": (_op("ascend.fractalize", ['memref<128x16xf16, "gm">',
                                             'memref<1x8x16x16xf16, "gm">']), 4, 4),
    "defractalize": (_op("ascend.defractalize", ['memref<1x8x16x16xf32, "gm">',
                                                 'memref<128x16xf32, "gm">']), 2, 2),
    # Heads out of a projection and back ([1, S, H, D] <-> [1, H, S, D]): a cut
    # of either is strided on one side, so the cores take runs of the source's
    # rows (core_part), or runs of its second swapped dim where those do not
    # divide the cores (npu.core_axis): the merge's 12 heads on 8 cores asked
    # as 8 runs of its 128 rows (2,446 cycles; 6 runs of 2 heads: 3,011).
    "transpose-split-heads": (_op("ascend.transpose", ['memref<1x128x12x64xf16, "gm">',
                                                       'memref<1x12x128x64xf16, "gm">'],
                                  "{permutation = array<i64: 0, 2, 1, 3>} "), 32, 32),
    "transpose-merge-heads": (_op("ascend.transpose", ['memref<1x12x128x64xf32, "gm">',
                                                       'memref<1x128x12x64xf32, "gm">'],
                                  "{permutation = array<i64: 0, 2, 1, 3>} "), 8, 8),
    # Wider than a column block: the Nz side of a row cut is strided, so the
    # cores take runs of row blocks through the whole tensors (core_part).
    "fractalize-row-blocks": (_op("ascend.fractalize", ['memref<256x96xf16, "gm">',
                                                        'memref<6x16x16x16xf16, "gm">']), 8, 8),
    "defractalize-row-blocks": (_op("ascend.defractalize", ['memref<6x16x16x16xf32, "gm">',
                                                            'memref<256x96xf32, "gm">']), 4, 4),
    # A Split along the last axis (GPT-2's c_attn into Q, K, V): the rows it
    # takes whole, cut over the cores, each core's slice at the same offsets.
    "slice-columns": (_op("ascend.slice", ['memref<1x128x192xf16, "gm">',
                                           'memref<1x128x64xf16, "gm">'],
                          "{offsets = array<i64: 0, 0, 64>, strides = array<i64: 1, 1, 1>} "),
                      8, 8),
    "insert-slice-columns": (_op("ascend.insert_slice", ['memref<64x32xf32, "gm">',
                                                         'memref<64x96xf32, "gm">'],
                                 "{offsets = array<i64: 0, 32>} "), 4, 4),
    # A grid of N and M blocks: strided slices of A and C.
    "matmul": (_op("ascend.matmul", [NZ_A, NZ_B, NZ_C]), 8, 8),
    "matmul-f16-out": (_op("ascend.matmul", [NZ_A, NZ_B, NZ_C.replace("f32", "f16")]), 8, 8),
    "matmul-m": (_op("ascend.matmul", ['memref<1x8x16x16xf16, "gm">', NZ_B.replace("4x4", "1x1"),
                                       'memref<1x8x16x16xf32, "gm">']), 4, 4),
    "batch-matmul": (_op("ascend.batch_matmul", ['memref<2x4x8x16x16xf16, "gm">',
                                                 'memref<2x4x4x16x16xf16, "gm">',
                                                 'memref<2x4x8x16x16xf32, "gm">']), 2, 2),
}


def _diagnostics() -> str:
    from npu import diagnostics

    return "\n".join(d.format() for d in diagnostics.current().diagnostics)


def _run(text: str, pipeline: str, inputs, **kw):
    module = parse_module(text, make_context())
    run_pipeline(module, pipeline, get_target())
    return simulate(module, inputs, **kw)


@pytest.mark.parametrize("name", sorted(CASES))
def test_multicore_equals_single_core_bit_for_bit(name: str) -> None:
    text, cores, launched = CASES[name]
    inputs = random_inputs(text, seed=3)
    one = _run(text, "builtin.module(npu-lower{cores=1})", inputs)
    many = _run(text, f"builtin.module(npu-split-cores{{cores={cores} min-bytes=0}},npu-lower)",
                inputs)
    assert many.report["block_dim"] == launched
    assert len(many.report["cores"]) == launched
    for a, b in zip(one.outputs, many.outputs):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8))
    assert many.cycles < one.cycles  # the work really is shared out


def test_cores_one_is_todays_program() -> None:
    text = CASES["add-1d"][0]
    a, b = parse_module(text, make_context()), parse_module(text, make_context())
    run_pipeline(a, "builtin.module(npu-lower)", get_target())
    run_pipeline(b, "builtin.module(npu-lower{cores=1})", get_target())
    assert str(a) == str(b)


RACY = (
    'func.func @racy(%a: memref<2048xf16, "gm">, %c: memref<2048xf16, "gm">, '
    '%blk: index {npu.block_idx}) attributes {npu.block_dim = 2 : i64} {\n'
    '  "ascend.exp"(%a, %c) : (memref<2048xf16, "gm">, memref<2048xf16, "gm">) -> ()\n'
    "  return\n}\n")


def test_two_cores_writing_the_same_gm_race() -> None:
    module = parse_module(RACY, make_context())
    run_pipeline(module, "builtin.module(npu-lower)", get_target())
    inputs = [np.ones(2048, np.float16), np.zeros(2048, np.float16)]
    with pytest.raises(SimulationError) as e:
        simulate(module, inputs)
    assert e.value.kind == "race"
    assert "core 1 writes" in str(e.value) and "core 0" in str(e.value)
    res = simulate(module, inputs, strict=False)
    assert [h["kind"] for h in res.hazards] == ["race"]


def test_a_core_reading_what_another_wrote_races() -> None:
    # Core b writes half b of %c, then reads all of %c: it reads the other core's half.
    text = (
        'func.func @rw(%a: memref<4096xf16, "gm">, %c: memref<4096xf16, "gm">, '
        '%d: memref<4096xf16, "gm">, %blk: index {npu.block_idx}) '
        "attributes {npu.block_dim = 2 : i64} {\n"
        "  %n = arith.constant 2048 : index\n"
        "  %o = arith.muli %blk, %n : index\n"
        '  %sa = memref.subview %a[%o] [2048] [1] : memref<4096xf16, "gm"> to '
        'memref<2048xf16, strided<[1], offset: ?>, "gm">\n'
        '  %sc = memref.subview %c[%o] [2048] [1] : memref<4096xf16, "gm"> to '
        'memref<2048xf16, strided<[1], offset: ?>, "gm">\n'
        '  %sd = memref.subview %d[%o] [2048] [1] : memref<4096xf16, "gm"> to '
        'memref<2048xf16, strided<[1], offset: ?>, "gm">\n'
        '  "ascend.exp"(%sa, %sc) : (memref<2048xf16, strided<[1], offset: ?>, "gm">, '
        'memref<2048xf16, strided<[1], offset: ?>, "gm">) -> ()\n'
        '  "ascend.add"(%c, %c, %d) : (memref<4096xf16, "gm">, memref<4096xf16, "gm">, '
        'memref<4096xf16, "gm">) -> ()\n'
        "  return\n}\n")
    module = parse_module(text, make_context())
    run_pipeline(module, "builtin.module(npu-lower)", get_target())
    inputs = [np.ones(4096, np.float16)] * 2 + [np.zeros(4096, np.float16)]
    with pytest.raises(SimulationError, match="no ordering between the cores"):
        simulate(module, inputs)


def test_disjoint_slices_do_not_race() -> None:
    text = CASES["add-1d"][0]
    res = _run(text, "builtin.module(npu-split-cores{cores=4 min-bytes=0},npu-lower)",
               random_inputs(text))
    assert res.hazards == [] and res.report["block_dim"] == 4


def test_launch_size_must_match_the_split() -> None:
    text = CASES["add-1d"][0]
    module = parse_module(text, make_context())
    run_pipeline(module, "builtin.module(npu-split-cores{cores=4 min-bytes=0},npu-lower)",
                 get_target())
    with pytest.raises(SimulationError, match="split for 4 cores .* cannot run on 2"):
        simulate(module, random_inputs(text), cores=2)


def test_block_dim_beyond_the_target_is_refused() -> None:
    text = RACY.replace("npu.block_dim = 2", "npu.block_dim = 3")
    module = parse_module(text, make_context())
    run_pipeline(module, "builtin.module(npu-lower)", get_target("ascend310"))
    with pytest.raises(SimulationError, match="launched on 3 cores .* ascend310 has 2"):
        simulate(module, [np.ones(2048, np.float16)] * 2, target=get_target("ascend310"))


def test_block_dim_without_block_index_is_refused() -> None:
    text = RACY.replace(", %blk: index {npu.block_idx}", "")
    with pytest.raises(ParseError) as e:
        parse_module(text, make_context())
    assert "needs an 'npu.block_idx' argument" in str(e.value) + _diagnostics()


def test_split_beyond_the_targets_cores_is_an_error() -> None:
    module = parse_module(CASES["add-1d"][0], make_context())
    with pytest.raises(PipelineError, match="cores=4 but ascend310 has 2 cores"):
        run_pipeline(module, "builtin.module(npu-split-cores{cores=4})", get_target("ascend310"))


def test_work_too_small_for_the_cores_launches_fewer() -> None:
    # 4096 f16 = 8 KiB of output: less than one GM transfer's latency worth
    # (350 cycles x 64 B) per core on more than one core.
    module = parse_module(CASES["add-1d"][0], make_context())
    run_pipeline(module, "builtin.module(npu-split-cores{cores=8})", get_target())
    assert "npu.block_dim" not in module.body.operations[0].attributes


def test_ops_over_the_same_slices_need_no_barrier() -> None:
    # exp writes %a1 in 4 slices and add reads them back slice for slice: each
    # core reads only what it wrote itself.
    text = _func([V, V, V], '"ascend.exp"(%a0, %a1) : (' + V + ", " + V + ') -> ()\n'
                 '  "ascend.add"(%a1, %a1, %a2) : (' + f"{V}, {V}, {V}" + ") -> ()")
    module = parse_module(text, make_context())
    run_pipeline(module, "builtin.module(npu-split-cores{cores=4 min-bytes=0})", get_target())
    assert "npu.block_dim = 4" in str(module) and "cce.sync_all" not in str(module)


def test_uneven_heads_launch_the_largest_even_split() -> None:
    text = _op("ascend.transpose", ['memref<12x64x32xf16, "gm">', 'memref<12x32x64xf16, "gm">'],
               "{permutation = array<i64: 0, 2, 1>} ")
    module = parse_module(text, make_context())
    run_pipeline(module, "builtin.module(npu-split-cores{cores=8 min-bytes=0})", get_target())
    attrs = module.body.operations[0].attributes
    assert int(str(attrs["npu.block_dim"]).split(":")[0]) == 6


def test_per_core_report_and_chip_total() -> None:
    text = CASES["matmul"][0]
    res = _run(text, "builtin.module(npu-split-cores{cores=4 min-bytes=0},npu-lower)",
               random_inputs(text))
    rep = res.report
    assert rep["cycles"] == max(c["cycles"] for c in rep["cores"]) == res.cycles
    assert rep["instructions"] == sum(c["instructions"] for c in rep["cores"])
    assert rep["memory_system"]["gm_read_bytes"] > 0
    assert "core" in res.text_report() and "chip GM bus" in res.text_report()
