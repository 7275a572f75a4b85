"""`kernel.stages`: the lowered module's text is printed when first read
(not by every compile), and is the text the module had after the compile."""

from __future__ import annotations

import numpy as np

import npu
from npu.frontend import compile as compile_module
from onnx_models import mlp


def test_lowered_stage_printed_on_first_read_only(monkeypatch):
    printed = []
    short = compile_module._short
    monkeypatch.setattr(compile_module, "_short", lambda m: printed.append(m) or short(m))
    kernel = npu.compile(mlp(), target="ascend910")
    assert len(printed) == 2  # linalg and ascend: the compile printed no lowered text
    x = np.random.default_rng(1).standard_normal((6, 40)).astype(np.float32)
    kernel(x, numerics=False)  # running the kernel leaves its module as compiled
    text = kernel.stages["lowered"]
    assert len(printed) == 3 and text == short(kernel.module) and "hivm." in text
    assert kernel.stages["lowered"] is text and len(printed) == 3  # printed once
    assert list(kernel.stages) == ["linalg", "ascend", "lowered"]
    assert dict(kernel.stages)["lowered"] is text and kernel.stages.get("none") is None
