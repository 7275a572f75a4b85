"""ConvNeXt's NCHW <-> NHWC transposes split over the cores when the maps'
H * W (196 f32 at 14x14) is not whole 32-byte blocks: cut along one source
dim, its columns (the result's rows) or else its rows (the result's
columns, stored as strided runs of whole blocks), the dims that swap being
groups of dims ([1, 384, 14, 14] -> [1, 14, 14, 384]). Both ran on one
core; ConvNeXt-tiny on 32 cores 1,837,037 -> 958,215 cycles with the
LayerNorm rows flattened (`frontend/onnx_layernorm_rows.py`)."""

from __future__ import annotations

import numpy as np
import pytest

from npu import diagnostics
from npu.ir import make_context, parse_module
from npu.pipeline import run_pipeline
from npu.simulator import simulate
from npu.target import get_target

MANY = ("builtin.module(npu-lower{{cores={n} split-cores-min-bytes=0 split-cores-estimate=false "
        "split-cores-remarks=true}})")


def _program(src: list[int], perm: list[int], elem: str) -> tuple[str, list[int]]:
    dst = [src[p] for p in perm]
    s = f'memref<{"x".join(map(str, src))}x{elem}, "gm">'
    d = f'memref<{"x".join(map(str, dst))}x{elem}, "gm">'
    return (f"""func.func @t(%x: {s}, %y: {d}) {{
  "ascend.transpose"(%x, %y) {{permutation = array<i64: {", ".join(map(str, perm))}>}} : ({s}, {d}) -> ()
  return
}}
""", dst)


def _run(text: str, pipeline: str, x: np.ndarray, dst: list[int]) -> tuple:
    t = get_target("ascend910")
    module = parse_module(text, make_context())
    with diagnostics.collecting() as engine:
        run_pipeline(module, pipeline, t)
    said = [d.message for d in engine.diagnostics if "npu-split-cores:" in d.message]
    return simulate(module, [x, np.zeros(dst, x.dtype)], target=t), said


@pytest.mark.parametrize("src, perm, elem, parts", [
    ([1, 64, 14, 14], [0, 2, 3, 1], "f32", 4),   # NCHW -> NHWC: the source's rows (channels)
    ([1, 14, 14, 64], [0, 3, 1, 2], "f32", 8),   # NHWC -> NCHW: the source's columns (channels)
    ([1, 96, 10, 10], [0, 2, 3, 1], "f16", 6),   # f16: 16-channel runs
    ([1, 32, 8, 8], [0, 2, 3, 1], "f32", 4),     # the source's columns: runs of whole rows of H
    # NCHW -> NC1HWC0 of 3 channel blocks (ConvNeXt's residual map before its depthwise conv):
    # runs of H * W in every block, on 8 cores where the blocks alone give 3
    ([3, 16, 1024], [0, 2, 1], "f16", 8),
    ([3, 128, 20], [0, 2, 1], "f32", 8),           # its rows: 20 f32 columns are no whole blocks
])
def test_an_nhwc_transpose_splits_along_its_channels(src, perm, elem, parts) -> None:
    text, dst = _program(src, perm, elem)
    dtype = np.float32 if elem == "f32" else np.float16
    x = np.random.default_rng(4).standard_normal(src).astype(dtype)
    one, _ = _run(text, "builtin.module(npu-lower{cores=1})", x, dst)
    many, said = _run(text, MANY.format(n=parts), x, dst)
    assert any(f"ascend.transpose {parts}" in s for s in said), said
    assert many.report["block_dim"] == parts and many.hazards == []
    assert np.array_equal(many.outputs[1], x.transpose(perm))
    assert np.array_equal(one.outputs[1], many.outputs[1])
    assert many.cycles < one.cycles


def test_a_transpose_of_rows_under_whole_blocks_takes_every_core_it_can() -> None:
    """GoogLeNet's 7x7 concat into NC1HWC0 ([52, 16, 49] f16 -> [52, 49,
    16]): every source row of 49 f16 is a copy of its own, so its time is
    in those copies; its 163 KB alone gave it 4 cores (least bytes), now 26
    (41,010 cycles on one core, 10,594 on 4, 2,005 on 26)."""
    text, dst = _program([52, 16, 49], [0, 2, 1], "f16")
    x = np.random.default_rng(5).standard_normal((52, 16, 49)).astype(np.float16)
    many, said = _run(text, "builtin.module(npu-lower{cores=26 split-cores-remarks=true})", x, dst)
    assert any("ascend.transpose 26" in s for s in said), said
    assert many.hazards == [] and np.array_equal(many.outputs[1], x.transpose(0, 2, 1))
