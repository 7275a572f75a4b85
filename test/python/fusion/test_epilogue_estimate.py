"""The matmul epilogue's cost model is honest (issue 26): the kernel time
npu-fuse decides an epilogue on (its remark's "model N cycles": the
pipelined schedule's estimate of the matmul with that drain,
`npu.costmodel.matmul.tiling.kernel_cycles`) is within 20% of the simulated
cycles. Its former figure, the larger of the cube's and the A/B traffic's
time, left out the fill, the per-chunk GM latency and the drain's tail:
BERT seq 256's out_proj took 1.44x it (bench/fusion_estimates.py)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from helpers import assert_outputs_close, compile_and_simulate
from matmul_patterns import matmul_epilogue
from test_fused_kernels import inputs_for

from npu import diagnostics


def model_cycles() -> int:
    (figure,) = [int(m.group(1)) for d in diagnostics.current().diagnostics
                 if (m := re.search(r"^matmul epilogue: .*model (\d+) cycles", d.message))]
    return figure


@pytest.mark.parametrize("m,n,k,steps,out,nd", [
    (128, 768, 768, ("bias_row",), "f32", (128, 768)),     # out_proj: bias, row-major f32 store
    (256, 768, 768, ("bias_row",), "f32", (256, 768)),
    (128, 768, 3072, ("bias_row", "gelu", "cast"), "f16", None),  # ffn_in: bias + GELU in f16
])
def test_epilogue_model_within_20_percent(m, n, k, steps, out, nd):
    text = matmul_epilogue(m, n, k, steps, out, nd=nd)
    ins = inputs_for(text)
    with diagnostics.collecting() as engine:
        got, want, res = compile_and_simulate(text, "npu-lower{cores=1 fuse-remarks=true}", ins)
        predicted = model_cycles()
    assert_outputs_close(got, want)
    assert 0.8 * predicted <= res.cycles <= 1.2 * predicted, (res.cycles, predicted)
    np.testing.assert_array_equal(res.hazards, [])
