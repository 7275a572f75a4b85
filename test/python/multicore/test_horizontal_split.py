"""Q, K and V as one matmul on several cores (`passes/split_cores/qkv.py`):
npu-fuse-horizontal joins them where each core computing its columns of
every sibling from one read of its rows of A models faster than the
siblings apart, and npu-split-cores cuts each sibling's columns (the
weights and bias laid out again, part by part). On 4 and 8 cores it pays
and is chosen; on 32 the siblings keep their shares of the cores."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest

import npu
from npu import diagnostics
from npu.ir import is_memref, make_context, parse_module
from npu.simulator import SimulationError, simulate

from test_shared_cores import ROWS, WIDTH, _projections

X = np.random.default_rng(5).standard_normal((ROWS, WIDTH)).astype(np.float32)


def _compile(cores: int, horizontal: bool = True):
    with diagnostics.collecting() as engine:
        kernel = npu.compile(_projections(), cores=cores, pipeline=(
            f"builtin.module(npu-lower{{fuse-horizontal={str(horizontal).lower()} "
            "split-cores-remarks=true})"))
    (split,) = [d.message for d in engine.diagnostics if d.message.startswith("npu-split-cores:")]
    return kernel, split


def _fusion_remarks(cores: int) -> list[str]:
    """npu-fuse-horizontal's remarks on the projections for `cores` cores
    (`npu.compile` keeps only npu-split-cores' and npu-lower's)."""
    from npu.frontend.compile import import_linalg, linalg_to_ascend_text
    from npu.pipeline import run_pipeline
    from npu.target import get_target

    ctx = make_context()
    linalg, ins, outs, locate = import_linalg(_projections(), ctx, "m.onnx")
    module = parse_module(linalg_to_ascend_text(linalg, ins, outs, locate, "m.onnx"), ctx)
    with diagnostics.collecting() as engine:
        run_pipeline(module, f"npu-lower{{cores={cores} fuse-remarks=true}}",
                     get_target("ascend910"))
    return [d.message for d in engine.diagnostics
            if d.message.startswith("npu-fuse-horizontal: matmuls")]


def _want() -> list[np.ndarray]:
    return onnxruntime.InferenceSession(_projections().SerializeToString()).run(None, {"x": X})


def test_on_4_cores_each_core_computes_its_columns_of_q_k_and_v() -> None:
    (formed,) = _fusion_remarks(4)
    assert "are one matmul 128x768x2304" in formed, formed
    assert "on 4 cores each its columns of every sibling: 4x1 models" in formed, formed
    fused, split = _compile(4)
    assert ("matmul epilogue of 3 siblings (each core its columns of every one) 4x1" in split
            and "on cores" not in split), split
    ys, report = fused(X)
    assert report["hazards"] == [] and report["block_dim"] == 4
    # each core all 128 rows and 12 of every sibling's 48 column blocks:
    # the one-core matmul's sums, bit for bit
    ones, _ = npu.compile(_projections(), cores=1)(X)
    for y, one, want in zip(ys, ones, _want()):
        assert np.array_equal(y.view(np.uint8), one.view(np.uint8))
        np.testing.assert_allclose(y, want, rtol=2e-2, atol=2e-2)
    # measured 30,877 against 39,387 cycles apart (one after another on
    # the 4 cores: each reads all of A three times); 32,461 before
    # npu-prefetch loaded its first weights in the tail of A's cast, across
    # the barrier between them
    apart, split_apart = _compile(4, horizontal=False)
    assert "siblings" not in split_apart, split_apart
    _, report_apart = apart(X)
    assert report["cycles"] < 0.9 * report_apart["cycles"], (report["cycles"],
                                                            report_apart["cycles"])


def test_on_8_cores_column_parts_of_every_sibling() -> None:
    fused, split = _compile(8)
    assert "every one) 8x1" in split, split
    ys, report = fused(X)
    apart, _ = _compile(8, horizontal=False)
    ys_apart, report_apart = apart(X)
    assert report["hazards"] == []
    for y, y_apart, want in zip(ys, ys_apart, _want()):
        np.testing.assert_allclose(y, want, rtol=2e-2, atol=2e-2)
        # another grid: the f32 sums may associate otherwise, to f32 rounding
        np.testing.assert_allclose(y, y_apart, rtol=1e-5, atol=1e-5)
    # measured 23,908 against 25,895 cycles (Q and K on 3 cores, V on 2)
    assert report["cycles"] < report_apart["cycles"], (report["cycles"], report_apart["cycles"])


def test_on_32_cores_the_siblings_keep_their_shares() -> None:
    # 16x2 models 9,011 cycles a core (its 32 cores' bytes over the chip's
    # bus) against V's 8x1 at 5,760: the simulator agrees (14,229 fused
    # against 12,761 apart)
    (apart,) = _fusion_remarks(32)
    assert "stay apart on 32 cores: 16x2 models" in apart, apart
    _, split = _compile(32)
    assert split.count("on cores") == 3 and "siblings" not in split, split


def test_the_barrier_after_the_fused_projections_is_needed() -> None:
    kernel, _ = _compile(4)
    program = kernel.module.operation.get_asm(print_generic_op_form=True)
    barrier = '"hivm.sync_all"() : () -> ()'
    # the first barrier orders q before its transpose, which reads every
    # core's columns: without it the cores race
    cut_at = program.index(barrier)
    cut = program[:cut_at] + program[cut_at + len(barrier):]
    func = kernel.module.body.operations[0]
    extra = [a for a in list(func.regions[0].blocks[0].arguments)[len(kernel.interface.roles):]
             if is_memref(a.type)]
    ins = kernel.interface.arguments([X], extra)
    with pytest.raises(SimulationError) as e:
        simulate(parse_module(cut, make_context()), ins, numerics=False)
    assert e.value.kind == "race"
