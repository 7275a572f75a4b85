"""A conv's kernel emitted band by band by its caller (`lower_conv.band_steps`):
what it holds on chip is known before emission (`footprint`) and is what
it allocates; and a conv whose bands' results are also copied UB -> L1
(`map_out`) into the input maps of the next 1x1 conv, whose bands are
emitted between its own and read those maps as they are (`map_ready`): the
next conv, an identity, gives back exactly the first one's result, which
matches the reference interpreter (numpy), with no race."""

from __future__ import annotations

import numpy as np
import pytest
from mlir import ir

from npu import ir as nir
from npu.ir import make_context, parse_module
from npu.passes.lower_conv import LowerConv
from npu.passes.lower_conv.band_steps import BandSteps
from npu.pipeline import run_pipeline
from npu.reference import evaluate
from npu.target import get_target

from helpers import assert_close, at_cce, simulate_levels
from test_conv_estimate_epilogue import residual_conv

SPACES = ("l1", "ub", "l0a", "l0b", "l0c")


def _t(shape, elem="f16") -> str:
    return f'memref<{"x".join(map(str, shape))}x{elem}, "gm">'


def chain(c1: int, co1: int, hw: int, k: int) -> str:
    """A k x k conv with its bias (f16) into %m, then a 1x1 conv of %m (no bias) into %y."""
    x, w, b = _t([1, c1, hw, hw, 16]), _t([c1 * k * k, co1, 16, 16]), _t([co1 * 16])
    m, w2 = _t([1, co1, hw, hw, 16]), _t([co1, co1, 16, 16])
    pad = k // 2

    def conv(operands: str, types: str, kk: int, p: int) -> str:
        return (f'  "ascend.conv2d"({operands}) {{dilations = array<i64: 1, 1>, groups = 1 : i64, '
                f'kernel = array<i64: {kk}, {kk}>, layout = "nc1hwc0", '
                f"pads = array<i64: {p}, {p}, {p}, {p}>, strides = array<i64: 1, 1>}} : "
                f"({types}) -> ()\n")
    return (f"func.func @f(%x: {x}, %w: {w}, %b: {b}, %w2: {w2}, %m: {m}, %y: {m}) {{\n"
            + conv("%x, %w, %b, %m", f"{x}, {w}, {b}, {m}", k, pad)
            + conv("%m, %w2, %y", f"{m}, {w2}, {m}", 1, 0) + "  return\n}\n")


def inputs(c1: int, co1: int, hw: int, k: int) -> list[np.ndarray]:
    """Random map, weights and bias; the consumer's weights the identity."""
    rng = np.random.default_rng(c1 * 100 + k)
    eye = np.zeros((co1, co1, 16, 16), np.float16)
    for j in range(co1):
        eye[j, j] = np.eye(16, dtype=np.float16)
    return [rng.standard_normal((1, c1, hw, hw, 16)).astype(np.float16),
            (rng.standard_normal((c1 * k * k, co1, 16, 16)) * 0.1).astype(np.float16),
            rng.standard_normal(co1 * 16).astype(np.float16), eye,
            np.zeros((1, co1, hw, hw, 16), np.float16), np.zeros((1, co1, hw, hw, 16), np.float16)]


def _convs(module) -> list[ir.Operation]:
    return nir.ops_named(module.operation, "ascend.conv2d")


def _alloc_bytes(ops) -> dict[str, int]:
    """Bytes per on-chip memory of the buffers `ops` allocate."""
    out = {s: 0 for s in SPACES}
    for op in ops:
        v = op.results[0]
        space = nir.memory_space(v)
        if space in out:
            out[space] += int(np.prod(nir.memref_shape(v))) * nir.element_bytes(nir.memref_element(v))
    return out


@pytest.mark.parametrize("c1, co1, hw, k, residual", [
    (2, 2, 28, 3, False), (4, 8, 14, 1, False), (8, 32, 14, 1, False),
    (8, 32, 14, 1, True),  # f32 bias rounded to f16 on the drain, + residual, ReLU
    (16, 16, 14, 3, True)])  # streamed weights
def test_footprint_is_what_setup_allocates(c1: int, co1: int, hw: int, k: int,
                                           residual: bool) -> None:
    """The bytes `footprint` gives before emission are the bytes `setup`
    then allocates, memory by memory; a band's own map is at most `band_map`."""
    text = residual_conv(c1, co1, hw, k)[0] if residual else chain(c1, co1, hw, k)
    module = parse_module(text, make_context())
    if residual:  # the conv's epilogue group
        run_pipeline(module, "npu-fuse", get_target("ascend910"))
    op = _convs(module)[0]
    kernel, epi, _ = LowerConv(get_target("ascend910")).cube_kernel(op)
    steps = BandSteps(kernel)
    fp = steps.footprint()
    func = nir.functions(module)[0]

    def on_chip() -> list[ir.Operation]:
        return [a for a in nir.ops_named(func, "memref.alloc")
                if nir.memory_space(a.results[0]) in SPACES]
    assert not on_chip()
    with op.location, ir.InsertionPoint(op):
        steps.setup()
        made = on_chip()
        assert _alloc_bytes(made) == {s: fp.setup.get(s, 0) for s in SPACES}
        steps.emit(0)  # the band's own map, after the setup's buffers
    maps = on_chip()[len(made):]
    assert len(maps) == 1 and nir.memory_space(maps[0].results[0]) == "l1"
    assert _alloc_bytes(maps)["l1"] <= fp.band_map
    assert not fp.staged


def lower_chained(module, ub_share: float = 0.5) -> tuple[int, int]:
    """Both convs of `chain` lowered together: producer band i (its result
    also copied into the consumer's map of band i in L1, two in turn), then
    consumer band i reading that map as it is, on the producer's L0A, L0B
    and L0C; returns (bands, band rows). Each kernel gets `ub_share` of UB."""
    producer, consumer = _convs(module)
    lower = LowerConv(get_target("ascend910"), ub_fraction=ub_share)
    first = BandSteps(lower.cube_kernel(producer)[0])
    rows = first.kernel.t.rows
    second = BandSteps(lower.cube_kernel(consumer, rows=rows)[0])  # the producer's bands
    assert second.kernel.t.rows == rows and len(first.steps) == len(second.steps)
    with consumer.location, ir.InsertionPoint(consumer):
        first.setup()
        second.setup(share=first)
        for i, step in enumerate(first.steps):
            assert (step.n, step.ho0, step.band.rows) == (second.steps[i].n, second.steps[i].ho0,
                                                          second.steps[i].band.rows)
            first.emit(i, map_out=second.map_for(i))
            second.emit(i, fm=second.map_for(i), map_ready=True)
        first.finish()
        second.finish()
    for op in (producer, consumer):
        op.erase()
    return len(first.steps), rows


@pytest.mark.parametrize("c1, co1, hw, k", [(2, 2, 56, 3), (4, 4, 56, 1)])
def test_map_out_holds_the_conv_result(c1: int, co1: int, hw: int, k: int) -> None:
    """The producer's result reaches GM as the reference computes it, and
    the identity 1x1 conv of its L1 maps gives it back bit for bit: every
    band's map holds exactly the band's result. No hazard (the consumer's
    img2col waits for the copies, map i+2's copies for band i's img2col)."""
    text = chain(c1, co1, hw, k)
    source = parse_module(text, make_context())
    want = evaluate(nir.functions(source)[0], inputs(c1, co1, hw, k))
    module = parse_module(text, make_context())
    bands, rows = lower_chained(module)
    assert bands >= 3, (bands, rows)  # both maps taken in turn, one taken again
    run_pipeline(module, at_cce("npu-lower{cores=1}"), get_target("ascend910"))
    assert len(nir.ops_named(module.operation, "cce.copy_ub_to_l1")) > 0
    result = simulate_levels(module, inputs(c1, co1, hw, k), get_target("ascend910"), strict=True)
    got = result.outputs
    assert not result.hazards
    assert_close(got[4], want[4], np.float16)
    np.testing.assert_array_equal(got[5], got[4])
