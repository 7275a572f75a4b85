"""Fused kernels (npu-fuse + npu-lower-fused) on the simulator: each pattern
against the numpy reference of the unfused program and against the unfused
lowering, with odd row counts, several chunks (tail overlap), f16 and f32.
Simulation is strict (bounds, uninitialised reads, races)."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import assert_outputs_close, compile_and_simulate, compile_program
from patterns import gelu, layernorm, softmax

from npu.ir import functions, memref_element, memref_shape, walk
from npu.fusion import FUSED_ATTR

NP = {"f16": np.float16, "f32": np.float32}


def inputs_for(text: str, seed: int = 0) -> list[np.ndarray]:
    module = compile_program(text, "")
    args = functions(module)[0].regions[0].blocks[0].arguments
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(memref_shape(a.type)) * 2).astype(NP[memref_element(a.type)])
            for a in args]


def groups(text: str) -> list[dict]:
    module = compile_program(text, "npu-fuse")
    return [{k: int(str(v).split(" ")[0]) for k, v in
             ((a.name, a.attr) for a in op.attributes[FUSED_ATTR])}
            for op in walk(module.operation) if FUSED_ATTR in op.attributes]


def check(text: str, fused_ops_groups: int = 1, max_chunk: int = 0):
    """Fused and unfused lowerings both match the reference and each other;
    the fused one forms the expected groups and is faster."""
    ins = inputs_for(text)
    opts = f" max-chunk={max_chunk}" if max_chunk else ""
    fused, expected, fres = compile_and_simulate(text, f"npu-lower{{{opts.strip()}}}", ins)
    unfused, _, ures = compile_and_simulate(text, f"npu-lower{{fuse=false{opts}}}", ins)
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
