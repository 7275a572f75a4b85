"""One-pass fused row kernels (npu-lower-fused): results in place, the
variance's squares folded into its sum, casts converted straight into Nz
order, chunks in sets of streamed buffers taken by turns, and the layout
chosen by the chunk pipeline model; each on the simulator against numpy
and the unfused lowering (odd rows, f16 and f32), with every option that
turns a part off; and the model itself on hand-made profiles."""

from __future__ import annotations

import re

import pytest

from helpers import compile_program
from row_patterns import layernorm, nz_operand, softmax
from test_fused_kernels import check, inputs_for

from npu.costmodel.vector.chunk_pipeline import ChunkProfile

OPTIONS = ["", "fuse-steps=false", "fuse-layouts=false", "fuse-slots=1", "fuse-slots=3"]
KERNELS = {
    "add+layernorm 37x768 f32": layernorm(37, 768),  # the result stored from x's buffer
    "layernorm 50x256 f16": layernorm(50, 256, "f16", residual=False),
    "layernorm+Nz 45x768 f32": nz_operand(45, 768, "layernorm"),
    "cast->Nz 100x64": nz_operand(100, 64, "cast"),  # one chunk
    "cast->Nz 70x768": nz_operand(70, 768, "cast"),  # one set of the f16 rows
    "softmax 3x21x192 f32": softmax((3, 21), 192),
    "softmax 2x33x128 f16": softmax((2, 33), 128, "f16"),
}


@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize("name", KERNELS)
def test_row_kernel_matches_reference(name, options):
    check(KERNELS[name], options=options)


@pytest.mark.slow
@pytest.mark.parametrize("rows", [128, 131, 512])
@pytest.mark.parametrize("source", ["layernorm", "cast"])
def test_bert_shaped_row_kernels(rows, source):
    check(nz_operand(rows, 768, source))
    if source == "layernorm":
        check(layernorm(rows, 768))


def lowered(text: str, options: str = "") -> str:
    return str(compile_program(text, f"npu-lower{{cores=1 {options}}}" if options else "npu-lower{cores=1}"))


def test_variance_folds_its_squares():
    """sum((x - mean)^2) is two accumulators of vmul/vmla over the rows of
    d: no pass writing d * d; without the combined steps it is a vmul pass
    and a fold of its result."""
    text = layernorm(16, 768, residual=False)
    out = lowered(text)
    assert out.count('"cce.vmla"') == 10 * out.count('"cce.vrsqrt"')
    # The products read d with the row pitch (96 blocks) on both operands.
    assert re.search(r'"cce.vmla".*src0_rep_stride = 96 : i64, src1_blk_stride = 1 : i64, '
                     r'src1_rep_stride = 96 : i64', out)
    assert '"cce.vmla"' not in lowered(text, "fuse-steps=false")


def test_cast_converts_into_nz_order():
    """A cast whose f16 result only leaves in Nz is one vconv per 64
    columns writing each lane to its column block (block stride: the
    chunk's rows), not a row-major cast and a vmax gather."""
    text = nz_operand(100, 64, "cast")
    out = lowered(text, "emit=cce")
    convs = re.findall(r'"cce.vconv".*dst_blk_stride = (\d+) : i64, dst_rep_stride = 1 : i64', out)
    assert convs and all(int(b) > 1 for b in convs)
    assert '"cce.vmax"' not in out
    assert '"cce.vmax"' in lowered(text, "emit=cce fuse-steps=false")


def test_chunk_loop_takes_its_own_slots():
    """Default: the chunk loop is marked for npu-double-buffer to leave
    alone (the slots are allocated before it, none carries npu.slot);
    fuse-slots=1: the loop body allocates and npu-double-buffer doubles."""
    text = layernorm(128, 768)
    out = lowered(text, "emit=cce")
    assert "npu.double_buffer = false" in out and "npu.slot" not in out
    single = lowered(text, "emit=cce fuse-slots=1")
    assert "npu.slot = 1" in single


def test_in_place_results_need_no_extra_barriers():
    """A col operand broadcast over a buffer written in place is applied a
    row per instruction: consecutive instructions touch different rows, so
    the subtraction of the mean is one run with no pipe_barrier(V) inside."""
    out = lowered(layernorm(16, 768, residual=False), "emit=cce")
    body = out[out.find('"cce.vsub"'):]
    subs = body[:body.find('"cce.vmul"')]
    assert subs.count('"cce.vsub"') >= 8
    assert '"cce.pipe_barrier"' not in subs[:subs.rfind('"cce.vsub"')]


def test_bert_layernorm_stores_from_its_loaded_buffer():
    """128 rows of residual + layernorm (BERT's ln2): the model keeps the
    result in the residual sum's buffer (stored from where x was loaded)
    at 16 rows a chunk, over 8 or 11 rows with the result in a buffer of
    its own; the kernel is faster than with every streamed buffer doubled
    at as many rows as fit (fuse-layouts=false)."""
    from helpers import compile_and_simulate

    text = layernorm(128, 768)
    ins = inputs_for(text)
    _, _, res = compile_and_simulate(text, "npu-lower{cores=1}", ins)
    _, _, plain = compile_and_simulate(text, "npu-lower{cores=1 fuse-layouts=false}", ins)
    assert res.hazards == [] and res.cycles < plain.cycles, (res.cycles, plain.cycles)


# -- the pipeline model -------------------------------------------------------

def profile(v: float, store: float = 300.0) -> ChunkProfile:
    """Loads of r then x (500 cycles each), one step of `v` cycles writing
    y into x's buffer (key "x") and an Nz copy ("nz"), their stores."""
    return ChunkProfile(350, loads=[("r", 500.0), ("x", 500.0)],
                        steps=[({"r", "x"}, {"x", "nz"}, v)],
                        stores=[("x", store, 0), ("nz", 100.0, 0)])


def test_model_period_is_the_loads_plus_latency_when_they_bound():
    p = profile(800.0)
    assert p.period({"r": 2, "x": 2, "nz": 2}, {"r", "x"}) == 1350.0


def test_model_store_over_a_loaded_buffer_waits_for_the_store():
    """x's next load into the same set waits until its store landed:
    v + stores + latency after the chunk's vector work started, less x's
    load offset, over (sets - 1) periods."""
    p = profile(1200.0)
    landed = 1200 + 300 + 100 + 350
    assert p.period({"r": 2, "x": 2, "nz": 2}, {"r", "x"}) == landed - 500
    assert p.period({"r": 3, "x": 3, "nz": 3}, {"r", "x"}) == 1350.0
    assert p.period({"r": 2, "x": 1, "nz": 2}, {"r", "x"}) == float("inf")


def test_model_one_set_of_a_stored_buffer():
    """One set of the Nz buffer: the next chunk writes it when its vector
    work starts, so the period covers its store landing."""
    p = profile(800.0)
    landed = 800 + 300 + 100 + 350
    assert p.period({"r": 2, "x": 2, "nz": 1}, {"r", "x"}) == max(1350.0, landed)


def test_model_total_and_scaling():
    p = profile(800.0)
    sets = {"r": 2, "x": 2, "nz": 2}
    assert p.total(4, sets, {"r", "x"}) == 1350 + 3 * 1350 + (800 + 400 + 350)
    half = p.scaled(0.5)
    assert half.vector() == 400.0 and half.period(sets, {"r", "x"}) == 500 + 350


def test_model_runs_of_stores_each_pay_the_latency():
    p = ChunkProfile(350, loads=[("a", 100.0)], steps=[(set(), {"y"}, 10.0), (set(), {"z"}, 10.0)],
                     stores=[("y", 100.0, 0), ("z", 100.0, 1)])
    landed, busy, runs = p.landings()
    assert runs == 2 and busy == 200 + 2 * 350
    together = ChunkProfile(350, loads=[("a", 100.0)], steps=[(set(), {"y", "z"}, 10.0)],
                            stores=[("y", 100.0, 0), ("z", 100.0, 0)])
    assert together.landings()[2] == 1
