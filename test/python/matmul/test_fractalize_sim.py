"""npu-lower-fractalize compiled and simulated: ND -> Nz -> ND round trips
compared with the numpy layout (exact: fractalization only moves data)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from mm_common import blocks, memref, nz, simulate_program

NP = {"f16": np.float16, "f32": np.float32}


def roundtrip_program(shape: tuple[int, ...], dt: str) -> str:
    *lead, R, C = shape
    nd = memref(list(shape), dt)
    nzt = memref(list(lead) + [blocks(C), blocks(R), 16, 16], dt)
    return (f"func.func @f(%a: {nd}, %z: {nzt}, %b: {nd}) {{\n"
            f'  "ascend.fractalize"(%a, %z) : ({nd}, {nzt}) -> ()\n'
            f'  "ascend.defractalize"(%z, %b) : ({nzt}, {nd}) -> ()\n'
            f"  return\n}}\n")


def roundtrip(shape: tuple[int, ...], dt: str, algorithm: str = "fill-ub", seed: int = 0,
              double_buffer: bool = False):
    *lead, R, C = shape
    x = np.random.default_rng(seed).standard_normal(shape).astype(NP[dt])
    x.flat[0] = -0.0  # signed zeros must survive
    z0 = np.full(tuple(lead) + (blocks(C), blocks(R), 16, 16), np.nan, NP[dt])
    res = simulate_program(roundtrip_program(shape, dt),
                           f"npu-lower-fractalize{{algorithm={algorithm}}}",
                           [x, z0, np.full(shape, np.nan, NP[dt])], double_buffer=double_buffer)
    want = nz(x)
    # Bitwise: NaN-free data, and the padding must be +0.0 exactly.
    assert res.outputs[1].tobytes() == want.tobytes(), "Nz layout or padding wrong"
    assert res.outputs[2].tobytes() == x.tobytes(), "defractalize did not restore the matrix"
    assert res.outputs[0].tobytes() == x.tobytes(), "the input was modified"
    return res


@pytest.mark.parametrize("algorithm", ["naive", "fill-ub"])
@pytest.mark.parametrize("dt", ["f16", "f32"])
def test_aligned(algorithm, dt):
    roundtrip((64, 48), dt, algorithm)


@pytest.mark.parametrize("dt", ["f16", "f32"])
def test_row_tail_and_column_padding(dt):
    # 37 rows: 2 whole row blocks + 5 rows; 24 columns: f32 rows are whole
    # 32-byte blocks but not whole column blocks, f16 rows are not either.
    roundtrip((37, 24), dt)


@pytest.mark.parametrize("dt", ["f16", "f32"])
def test_rows_of_partial_blocks_near_the_end(dt):
    # 13-element rows: every row read/write is shifted; the last rows come
    # from the tensor's final 32-byte window.
    roundtrip((17, 13), dt)


@settings(max_examples=8, derandomize=True, deadline=None)
@given(R=st.integers(1, 70), C=st.integers(1, 70), dt=st.sampled_from(["f16", "f32"]),
       algorithm=st.sampled_from(["naive", "fill-ub"]), batch=st.sampled_from([0, 2]))
def test_random_shapes(R, C, dt, algorithm, batch):
    e = 2 if dt == "f16" else 4
    # Batches of sub-block matrices with partial-block rows are rejected
    # (fractalize-invalid.mlir); single tiny matrices are supported.
    assume(not (batch and R * C * e < 32 and (C * e) % 32))
    shape = ((batch,) if batch else ()) + (R, C)
    roundtrip(shape, dt, algorithm, seed=R * 1000 + C)


@pytest.mark.parametrize("shape,dt", [((1, 1), "f16"), ((5, 3), "f16"), ((3, 2), "f32")])
def test_tiny_tensor(shape, dt):
    """Under one 32-byte block: the single read/write runs into the padding
    of the argument's last granule (dialects/README.md); a masked x1.0 keeps
    only the tensor's lanes."""
    roundtrip(shape, dt)


def test_fill_ub_strips_are_80_rows_for_768_wide_fp16():
    """The improved algorithm on 512x768 fp16: six 80-row strips (one loop),
    then the 32-row tail; the naive one: 32 strips of 16 rows."""
    from npu.ir import make_context, ops_named, parse_module
    from npu.pipeline import run_pipeline
    from npu.target import get_target

    for algorithm, loop_steps, tail_allocs in (("fill-ub", 5, 24576), ("naive", 1, 12288)):
        ctx = make_context()
        module = parse_module(roundtrip_program((512, 768), "f16"), ctx)
        run_pipeline(module, f"npu-lower-fractalize{{algorithm={algorithm}}}", get_target())
        text = str(module)
        # Strips of 80 rows = 61440 f16 in UB (strip and its transpose).
        if algorithm == "fill-ub":
            assert 'memref<61440xf16, "ub">' in text
            assert text.count("repeat = 240 : i64") == 2  # pass 1 of each direction
        else:
            assert 'memref<12288xf16, "ub">' in text
        assert f'memref<{tail_allocs}xf16, "ub">' in text
        vnchw = ops_named(module, "cce.vnchwconv")
        assert vnchw, "no vnchwconv emitted"
        del loop_steps


@pytest.mark.parametrize("double_buffer", [False, True])
@pytest.mark.parametrize("algorithm", ["naive", "fill-ub", "fill-ub ub-fraction=0.5"])
def test_bert_matrix_through_the_back_end(algorithm, double_buffer):
    """512x768 fp16 (the thesis's case) with memory planning, sync insertion
    and optionally double buffering; strict simulation (races included)."""
    res = roundtrip((512, 768), "f16", algorithm, double_buffer=double_buffer)
    assert not res.hazards


@pytest.mark.parametrize("shape,dt", [((255, 1), "f16"), ((241, 3), "f16")], ids=str)
def test_tall_narrow_strips(shape, dt):
    """241..255 rows of narrow columns: the last strip grows back to all 16
    row blocks, whose vnchwconv repeat strides (16 or 32 blocks per row
    block) pass the 8-bit stride fields; those passes go one repeat each
    (test_fractal_plan.py checks the split plans for f32 too)."""
    roundtrip(shape, dt)


@pytest.mark.parametrize("shape,dt", [((1, 2048), "f16"), ((1, 48), "f32"), ((1, 1000), "f32"),
                                      ((1, 1000), "f16"), ((1, 13), "f16"), ((1, 24), "f32")],
                         ids=str)
def test_one_row(shape, dt, monkeypatch):
    """A one-row matrix (a classifier's pooled features, its logits) moves
    with strided copies, no vnchwconv (`emit_one_row`): the defractalize
    of a row of whole 32-byte blocks reads row 0 of each block alone; the
    fractalize of whole column blocks zeroes its Nz in UB and loads the row
    into those rows. Same bits as the strips, in fewer cycles (the
    defractalize reads 1/16 of the Nz)."""
    import npu.passes.lower_fractalize as lf

    res = roundtrip(shape, dt)
    monkeypatch.setattr(lf, "ONE_ROW", False)
    old = roundtrip(shape, dt)
    if shape in ((1, 2048), (1, 1000)) and (dt, shape) != ("f16", (1, 1000)):
        # (f16 logits, 2,000 bytes, end in a window: those keep the strips)
        assert res.cycles < old.cycles - 500, (res.cycles, old.cycles)


@pytest.mark.parametrize("dt", ["f16", "f32"])
def test_batched_matrices_of_one_strip_ping_pong(dt):
    """Swin's window heads: 6 matrices of 49 x 32, one strip each. The strip
    is in the batch loop's body, so npu-double-buffer overlaps one matrix's
    store with the next one's load (a one-trip loop around it kept them in
    series: 5,367 cycles for the fractalize alone on one core, 3,273 now)."""
    single = roundtrip((6, 49, 32), dt)
    double = roundtrip((6, 49, 32), dt, double_buffer=True)
    assert not double.hazards
    assert double.cycles < 0.8 * single.cycles, (double.cycles, single.cycles)
