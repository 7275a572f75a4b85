"""npu-prefetch's conv form (`passes/prefetch/conv.py`): a conv's first
resident weight pieces load in the previous op's idle MTE2 tail (on many
cores, before the chip barrier). The outputs are bit for bit those without
it, strict simulation finds no hazard, and the program is faster.

The model is 48x48: at 32x32 (width 8) the three convs whose first piece
is prefetched gain nothing net once the stem folds with its ReLU on the
drain (20,311 cycles on and off): layer1.0.conv1's piece goes in the
stem's tail, after its last map loads and before their MTE2 -> MTE1 flag
(in the lowered program the flag follows the prefetched copy), so the stem's last band
waits 72 cycles for it, and the later pieces' gains only make that up.
At 48x48 prefetch saves 575 cycles (24,923 -> 24,348)."""

from __future__ import annotations

import numpy as np
import pytest

import npu
from npu.frontend.cnn import resnet

SIZE = 48


@pytest.mark.parametrize("cores", [1, 4])
def test_conv_weights_prefetched_same_bits_no_hazards(cores):
    model = resnet(18, size=SIZE, width=8, classes=10, layers=[1, 1, 1, 1], dtype=np.float16)
    x = np.random.default_rng(0).standard_normal((1, 3, SIZE, SIZE)).astype(np.float16)
    runs = {}
    for convs in (False, True):
        kernel = npu.compile(model, pipeline=f"npu-lower{{prefetch-convs={str(convs).lower()}}}",
                             cores=cores)
        (out,), report = kernel(x, strict=True)
        assert report["hazards"] == []
        runs[convs] = out, int(report["cycles"]), kernel.stages["lowered"]
    (off, off_cycles, off_ir), (on, on_cycles, on_ir) = runs[False], runs[True]
    np.testing.assert_array_equal(on, off)
    assert on_cycles < off_cycles
    # Some conv's resident weights are copied before an op that is not that conv.
    assert on_ir != off_ir
