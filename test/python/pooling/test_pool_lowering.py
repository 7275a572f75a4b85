"""npu-lower-pool in strict simulation (bounds, uninitialised reads, races;
cce and hivm agree) against the numpy semantics of `ascend.pool2d`
(`npu.dialects.ascend_pool.pool2d_numpy`), with bands forced small so the
top, interior and bottom bands, partial plane groups and run tails all run."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "vector"))
from vec_common import (NP, assert_matches, compile_source, func, memref, run,  # noqa: E402
                        simulate_strict)

from npu.dialects.ascend_pool import Pool2d, pool2d_numpy

CASES = [
    # (input NCHW, kind, kernel, strides, dilations, pads, count_include_pad, max-rows)
    ((2, 20, 16, 16), "max", (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 1, 2),
    ((1, 7, 11, 13), "max", (2, 3), (1, 2), (2, 1), (0, 1, 1, 0), 1, 3),
    ((1, 33, 9, 8), "avg", (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 0, 1),
    ((1, 16, 10, 10), "avg", (2, 2), (2, 2), (1, 1), (0, 0, 0, 0), 1, 0),
    ((3, 5, 6, 9), "sum", (3, 1), (1, 3), (1, 1), (2, 0, 2, 0), 1, 2),
]


def _attrs(p: Pool2d) -> str:
    return ", ".join(f"{k} = {v}" for k, v in p.attrs().items())


@pytest.mark.parametrize("elem", ["f32", "f16"])
@pytest.mark.parametrize("case", CASES, ids=[f"{c[1]}-{'x'.join(map(str, c[0]))}" for c in CASES])
def test_pool_lowering_matches_semantics(case, elem):
    shape, kind, kernel, strides, dilations, pads, cip, rows = case
    p = Pool2d(kind, kernel, strides, dilations, pads, cip)
    out = [shape[0], shape[1], *p.out_size(*shape[2:])]
    source = func("pool", "ascend.pool2d", [memref(shape, elem), memref(out, elem)], _attrs(p))
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(NP[elem])
    lowering = f"npu-lower-pool{{max-rows={rows}}}" if rows else "npu-lower-pool"
    result = run(source, lowering, [x, np.zeros(out, NP[elem])], double_buffer=True)
    want = pool2d_numpy(x, p)
    # max is exact; sums add in the element type where the semantics add in
    # f32 and round once (f16: a few half-ulps of the sum).
    atol = 0 if kind == "max" else (1e-5 if elem == "f32" else 8e-3)
    assert_matches(result.outputs[1], want, rtol=0, atol=atol, what=f"{kind} {elem}")


def test_shape_rule_and_counts():
    p = Pool2d("avg", (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 0)
    assert p.out_size(9, 9) == (5, 5)
    rows, cols = p.counts(9, 9)
    assert list(rows) == [2, 3, 3, 3, 2] and list(cols) == [2, 3, 3, 3, 2]
    assert p.divisor(9, 9)[0, 0] == 4 and p.divisor(9, 9)[2, 2] == 9
    dilated = Pool2d("max", (2, 2), (1, 1), (2, 2), (0, 0, 0, 0))
    assert dilated.span(0) == 3 and dilated.out_size(9, 11) == (7, 9)


def test_max_ignores_padding():
    """-inf pads never win, even where every input value is negative."""
    p = Pool2d("max", (3, 3), (1, 1), (1, 1), (1, 1, 1, 1))
    x = -np.ones((1, 1, 4, 4), np.float32)
    assert (pool2d_numpy(x, p) == -1).all()


@pytest.mark.parametrize("elem", ["f32", "f16"])
@pytest.mark.parametrize("kind,cip", [("max", 1), ("avg", 0), ("avg", 1)])
def test_column_slices(kind, cip, elem):
    """A map too wide for a tile is pooled in column slices through GM
    (forced here with max-cols): the border slices keep the real pads, so
    averages over the input count the same points."""
    shape = (1, 18, 9, 61)
    p = Pool2d(kind, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), cip)
    out = [shape[0], shape[1], *p.out_size(*shape[2:])]
    source = func("pool", "ascend.pool2d", [memref(shape, elem), memref(out, elem)], _attrs(p))
    x = np.random.default_rng(5).standard_normal(shape).astype(NP[elem])
    result = run(source, "npu-lower-pool{max-cols=12},npu-plan-gm", [x, np.zeros(out, NP[elem])])
    atol = 0 if kind == "max" else (1e-5 if elem == "f32" else 8e-3)
    assert_matches(result.outputs[1], pool2d_numpy(x, p), rtol=0, atol=atol, what=f"{kind} {elem}")


CASES_5HD = [
    # (input NC1HWC0, kind, kernel, strides, dilations, pads, count_include_pad, max-rows)
    ((1, 4, 16, 16, 16), "max", (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 1, 0),   # ResNet's stem pool
    ((2, 3, 11, 13, 16), "max", (2, 3), (1, 2), (2, 1), (0, 1, 1, 0), 1, 2),
    ((1, 2, 9, 8, 16), "avg", (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 0, 1),
    ((1, 1, 3, 3, 16), "avg", (2, 2), (1, 1), (1, 1), (0, 0, 0, 0), 1, 0),     # under a block per plane
]


@pytest.mark.parametrize("elem", ["f16", "f32"])
@pytest.mark.parametrize("case", CASES_5HD, ids=[f"{c[1]}-{'x'.join(map(str, c[0]))}" for c in CASES_5HD])
def test_pool_5hd_matches_semantics(case, elem):
    """`layout = "nc1hwc0"`: each C1 group's band is loaded as it lies (its
    pixels are whole blocks already, two of them in f32) and pooled with no
    vnchwconv."""
    from npu.dialects.ascend_pool import pool2d_5hd_numpy

    shape, kind, kernel, strides, dilations, pads, cip, rows = case
    p = Pool2d(kind, kernel, strides, dilations, pads, cip)
    out = [shape[0], shape[1], *p.out_size(*shape[2:4]), 16]
    source = func("pool", "ascend.pool2d", [memref(shape, elem), memref(out, elem)],
                  _attrs(p) + ', layout = "nc1hwc0"')
    dtype = np.float16 if elem == "f16" else np.float32
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(dtype)
    lowering = f"npu-lower-pool{{max-rows={rows}}}" if rows else "npu-lower-pool"
    module, serialize = compile_source(source, lowering, None, True)
    assert "cce.vnchwconv" not in str(module) and "cce.copy_gm_to_ub" in str(module)
    result = simulate_strict(module, [x, np.zeros(out, dtype)], serialize, None, None)
    atol = 0 if kind == "max" else 8e-3 if elem == "f16" else 2e-6
    assert_matches(result.outputs[1], pool2d_5hd_numpy(x, p), rtol=0, atol=atol, what=f"{kind} 5hd")


def test_stem_pool_takes_the_direct_form():
    """ResNet's stem pool (NC1HWC0 64 x 112 x 112, 3x3/2 pad 1) in all of
    ascend910's UB: each kernel point straight from the loaded image, with no
    image of rows pooled across, buys bands of 14 output rows where the
    separable form has 10: 4 bands a C1 group, not 6, each a load that
    holds MTE2 for a GM latency (bench/pool.py: 37,257 -> 35,229 cycles)."""
    from npu.passes.lower_pool.plan import PoolGeometry
    from npu.target import get_target

    target = get_target("ascend910")
    p = Pool2d("max", (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 0)
    geo = PoolGeometry(p, 64, 112, 112, 56, 56, 2, 16, pixel_major=True)
    budget, rate = target.capacity("ub"), target.path("gm_to_ub").bytes_per_cycle
    assert geo.choose_band(budget) == 10
    form, ob = geo.choose_form(budget, rate)
    assert form.direct and ob == 14 and len(form.bands(ob)) == 4
    # the last band keeps its place: no rows pooled and stored twice
    assert [b.out_rows for b in geo.bands(10)] == [10] * 5 + [6]


CASES_DIRECT = [
    # (input NC1HWC0, kind, ub-fraction, direct form's bands (first row, rows))
    ((1, 2, 40, 40, 16), "max", 0.1, [(0, 3), (3, 3), (6, 3), (9, 3), (12, 3), (15, 3), (18, 2)]),
    ((1, 2, 33, 29, 16), "max", 0.08, [(0, 4), (4, 4), (8, 4), (12, 4), (16, 1)]),
    ((1, 2, 33, 29, 16), "avg", 0.08, [(0, 4), (4, 4), (8, 4), (12, 4), (16, 1)]),
]


@pytest.mark.parametrize("case", CASES_DIRECT, ids=[f"{c[1]}-{'x'.join(map(str, c[0]))}" for c in CASES_DIRECT])
def test_pool_5hd_direct_form_matches_semantics(case):
    """The direct form (`PoolGeometry.choose_form`) with a short last band,
    inside the map (40) and over the bottom padding (33), and avg's counts on
    it: the numpy semantics, max exactly."""
    from npu.dialects.ascend_pool import pool2d_5hd_numpy
    from npu.passes.lower_pool.plan import PoolGeometry
    from npu.target import get_target

    shape, kind, fraction, bands = case
    p = Pool2d(kind, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 0)
    out = [shape[0], shape[1], *p.out_size(*shape[2:4]), 16]
    target = get_target()
    geo = PoolGeometry(p, shape[1] * 16, *shape[2:4], *out[2:4], 2, 16, pixel_major=True)
    form, ob = geo.choose_form(int(target.capacity("ub") * fraction),
                               target.path("gm_to_ub").bytes_per_cycle)
    assert form.direct and [(b.o0, b.out_rows) for b in form.bands(ob)] == bands
    source = func("pool", "ascend.pool2d", [memref(shape, "f16"), memref(out, "f16")],
                  _attrs(p) + ', layout = "nc1hwc0"')
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float16)
    module, serialize = compile_source(source, f"npu-lower-pool{{ub-fraction={fraction}}}", None, True)
    assert str(module).count("cce.copy_gm_to_ub") >= 2  # banded, not one tile
    result = simulate_strict(module, [x, np.zeros(out, np.float16)], serialize, None, None)
    assert_matches(result.outputs[1], pool2d_5hd_numpy(x, p), rtol=0,
                   atol=0 if kind == "max" else 8e-3, what=f"{kind} direct 5hd")


def test_stem_pool_band_buffers_alike():
    """Every band of an NC1HWC0 pool loads into a buffer of the largest
    band's size: the first band (4 groups, 28 rows with the top pad) and the
    interior loop (12 tiles of 29 rows) then take the same ping-pong places,
    and the loop's first load waits for V to free its slot, not for the last
    store of the first band's loop (npu-plan-memory had put the interior's
    larger buffers over the first loop's output tiles). ResNet's stem pool:
    35,229 -> 34,485 cycles (bench/pool.py); 33,318 since the interior
    loop's load into B waits for the first loop's last set of B in its
    first iteration, not before the loop (npu-insert-sync's loop chains)."""
    from npu.ir import make_context, parse_module
    from npu.pipeline import run_pipeline
    from npu.simulator import simulate
    from npu.target import get_target

    target = get_target("ascend910")
    x5, y5 = [1, 4, 112, 112, 16], [1, 4, 56, 56, 16]
    p = Pool2d("max", (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 0)
    source = func("pool", "ascend.pool2d", [memref(x5, "f16"), memref(y5, "f16")],
                  _attrs(p) + ', layout = "nc1hwc0"')
    lowered = parse_module(source, make_context())
    run_pipeline(lowered, "npu-lower-pool", target)
    loads = [line for line in str(lowered).splitlines() if "cce.copy_gm_to_ub" in line]
    assert len(loads) >= 2
    sizes = {size for line in str(lowered).splitlines() if "memref.alloc" in line and '"ub"' in line
             for size in [line.split("memref<")[1].split("x")[0]] if int(size) > 29 * 112 * 16 - 2000}
    assert sizes == {str(29 * 112 * 16)}, sizes
    module = parse_module(source, make_context())
    run_pipeline(module, "npu-lower{cores=1}", target)
    res = simulate(module, [np.zeros(x5, np.float16), np.zeros(y5, np.float16)], target=target,
                   numerics=False)
    assert res.cycles <= 33318
