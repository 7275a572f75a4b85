"""Fused kernels (npu-fuse + npu-lower-fused) on the simulator: each pattern
against the numpy reference of the unfused program and against the unfused
lowering, with odd row counts, several chunks (tail overlap), f16 and f32.
Simulation is strict (bounds, uninitialised reads, races)."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import assert_outputs_close, compile_and_simulate, compile_program, unfused_options
from row_patterns import gelu, layernorm, softmax

from npu.ir import functions, memref_element, memref_shape, walk
from npu.costmodel.fusion.rows import FUSED_ATTR
from npu.simulator.run_inputs import constant_of

NP = {"f16": np.float16, "f32": np.float32}


def inputs_for(text: str, seed: int = 0) -> list[np.ndarray]:
    """Random inputs, except that an `npu.constant` argument gets its data
    (the simulator refuses anything else, as npu-run does)."""
    module = compile_program(text, "")
    func = functions(module)[0]
    rng = np.random.default_rng(seed)
    ins = []
    for a in func.regions[0].blocks[0].arguments:
        data = constant_of(func, a)
        ins.append(data if data is not None else
                   (rng.standard_normal(memref_shape(a.type)) * 2).astype(NP[memref_element(a.type)]))
    return ins


def groups(text: str, fuse: str = "npu-fuse") -> list[dict]:
    module = compile_program(text, fuse)
    return [{k: int(str(v).split(" ")[0]) for k, v in
             ((a.name, a.attr) for a in op.attributes[FUSED_ATTR])}
            for op in walk(module.operation) if FUSED_ATTR in op.attributes]


def check(text: str, fused_ops_groups: int = 1, max_chunk: int = 0, options: str = ""):
    """Fused and unfused lowerings both match the reference and each other;
    the fused one forms the expected groups and is faster."""
    ins = inputs_for(text)
    opts = (f" max-chunk={max_chunk}" if max_chunk else "") + (f" {options}" if options else "")
    fused, expected, fres = compile_and_simulate(text, f"npu-lower{{{opts.strip()}}}", ins)
    unfused, _, ures = compile_and_simulate(text, f"npu-lower{{fuse=false {unfused_options(opts)}}}", ins)
    assert_outputs_close(fused, expected)
    assert_outputs_close(fused, unfused)
    assert fres.hazards == [], fres.hazards  # the race detector (strict mode raises too)
    assert len(groups(text)) == fused_ops_groups
    assert fres.cycles < ures.cycles, (fres.cycles, ures.cycles)
    return fres, ures


@pytest.mark.parametrize("rows_shape,n,elem", [((2, 37), 64, "f32"), ((3, 20), 128, "f16"),
                                               ((5,), 16, "f32"), ((1, 7), 256, "f32")])
def test_softmax(rows_shape, n, elem):
    check(softmax(rows_shape, n, elem))


def test_softmax_many_chunks_with_overlapping_tail():
    # 75 rows in chunks of 16 (max-chunk): four loop chunks and a moved-back tail.
    check(softmax((75,), 64), max_chunk=16 * 64)


@pytest.mark.parametrize("rows,n,elem,residual", [(37, 768, "f32", True), (24, 256, "f16", True),
                                                  (13, 96, "f32", False)])
def test_layernorm(rows, n, elem, residual):
    check(layernorm(rows, n, elem, residual))


@pytest.mark.parametrize("rows,n,elem", [(40, 96, "f32"), (33, 64, "f16")])
def test_gelu(rows, n, elem):
    check(gelu(rows, n, elem))


def test_group_gm_traffic_is_inputs_and_outputs_once():
    (g,) = groups(layernorm(37, 768))
    # x, r, y (37 x 768 f32) and gamma, beta (768 f32) once each.
    assert g["gm_bytes"] == 3 * 37 * 768 * 4 + 2 * 768 * 4
    assert g["unfused_gm_bytes"] > 4 * g["gm_bytes"]


def test_reference_of_the_fused_program_equals_the_unfused():
    """The npu.fused region's semantics (its ops in order) is the program's."""
    from npu.reference import evaluate

    text = layernorm(13, 96)
    ins = inputs_for(text)
    fused = compile_program(text, "npu-fuse")
    plain = compile_program(text, "")
    got = evaluate(functions(fused)[0], [a.copy() for a in ins])
    want = evaluate(functions(plain)[0], [a.copy() for a in ins])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def check_long(text: str, gm_bytes: int, row_operand_bytes: int = 0, share: float = 0.0):
    """A long-row group: one two-pass kernel moving `gm_bytes` (2 reads and
    1 write per element; row operands such as gamma once per chunk of rows
    in pass 2), matching the reference, race-free. `share`: the fused UB
    share (npu-lower ub-fraction), small enough that whole rows do not fit.
    The unfused lowering is compared when it can lower these rows (today it
    cannot: its row broadcasts need a row within the repeat stride)."""
    from npu.pipeline import PipelineError

    ins = inputs_for(text)
    # (rows that fit UB twice would stay resident, one a chunk: not the two-pass kernel)
    lower = f"npu-lower{{ub-fraction={share} fuse-resident=false}}" if share else "npu-lower"
    fused, expected, fres = compile_and_simulate(text, lower, ins)
    assert_outputs_close(fused, expected)
    assert fres.hazards == [], fres.hazards
    (g,) = groups(text, f"npu-fuse{{ub-fraction={share} resident=false}}" if share else "npu-fuse")
    if row_operand_bytes:
        chunks, rest = divmod(g["gm_bytes"] - gm_bytes, row_operand_bytes)
        assert rest == 0 and 1 <= chunks <= g["rows"], (g["gm_bytes"], gm_bytes)
    else:
        assert g["gm_bytes"] == gm_bytes, (g["gm_bytes"], gm_bytes)
    try:
        unfused, _, _ = compile_and_simulate(text, "npu-lower{fuse=false}", ins)
    except PipelineError as e:
        assert "exceed the vector repeat stride" in str(e) or "do not fit" in str(e), e
    else:
        assert_outputs_close(fused, unfused)


# Rows longer than UB: the two-pass kernel over column pieces
# (npu.kernels.online_rows), odd lengths leave a shorter last piece; one
# chunk of rows holds fewer rows than a block. Rows of 3-5k elements fit
# UB (one-pass, test_long_rows.py) but for a small UB share.
@pytest.mark.parametrize("rows_shape,n,elem,share", [((3,), 4008, "f32", 0.1),
                                                     ((20,), 5008, "f16", 0.1),
                                                     ((2,), 100008, "f32", 0.0)])
def test_softmax_long_rows(rows_shape, n, elem, share):
    full = int(np.prod(rows_shape)) * n * (2 if elem == "f16" else 4)
    check_long(softmax(rows_shape, n, elem), gm_bytes=3 * full, share=share)


@pytest.mark.parametrize("rows,n,elem,residual,share", [(5, 4008, "f32", False, 0.1),
                                                        (17, 3008, "f16", True, 0.1),
                                                        (3, 100000, "f32", True, 0.0)])
def test_layernorm_long_rows(rows, n, elem, residual, share):
    es = 2 if elem == "f16" else 4
    reads = 2 if residual else 1
    check_long(layernorm(rows, n, elem, residual),
               gm_bytes=(2 * reads + 1) * rows * n * es, row_operand_bytes=2 * n * es,
               share=share)


def test_layernorm_long_rows_far_from_zero():
    """Data with mean 1000 and spread 1: the variance around the first
    piece's mean loses nothing to cancellation (the sum-of-squares form
    would lose most of f32's digits); checked against float64 numpy."""
    text = layernorm(9, 6016, "f32", residual=False)
    x, g, b, _ = inputs_for(text)
    x = (1000 + x / 2).astype(np.float32)
    fused, _, res = compile_and_simulate(text, "npu-lower", [x, g, b, np.zeros_like(x)])
    x64 = x.astype(np.float64)
    mean = x64.mean(-1, keepdims=True)
    want = (x64 - mean) / np.sqrt(x64.var(-1, keepdims=True) + 1e-5) * g + b
    assert res.hazards == []
    np.testing.assert_allclose(fused[-1], want, rtol=0, atol=2e-3)


@pytest.mark.parametrize("make", [lambda: softmax((3, 7), 2040), lambda: layernorm(19, 1536)])
def test_two_pass_equals_unfused_where_both_lower(make):
    """Rows the unfused lowering handles, fused with a UB share so small
    that whole rows do not fit a chunk: the two-pass kernel matches the
    unfused program and the reference, race-free."""
    text = make()
    fuse = "npu-fuse{ub-fraction=0.05},npu-lower-fused{ub-fraction=0.05}"
    lowered = compile_program(text, fuse)
    assert "cce.vcadd" in str(lowered) and "scf.for" in str(lowered)
    assert "ascend." not in str(lowered)  # one group, all of it two-pass
    ins = inputs_for(text)
    fused, expected, fres = compile_and_simulate(text, f"{fuse},npu-lower{{fuse=false}}", ins)
    unfused, _, _ = compile_and_simulate(text, "npu-lower{fuse=false}", ins)
    assert_outputs_close(fused, expected)
    assert_outputs_close(fused, unfused)
    assert fres.hazards == []
