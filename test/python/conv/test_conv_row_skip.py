"""A conv whose stride passes over input rows (stride_h > the kernel's
extent, no padding rows: ResNet's 1x1 stride-2 downsamples) copies only
the rows its windows read, one burst per output row, packed in L1
(`ConvShape.row_skip`, `kernel.py`), and its cost model counts those
bytes. Checked against numpy at the cce and hivm levels, with the GM bytes
the conv reads into L1."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import assert_close, compile_and_simulate
from test_conv_schedule import conv

from npu.costmodel.conv.tiling import ConvShape, _l1_band_bytes


@pytest.mark.parametrize("c1,hw,co1,stride,cores", [(4, 20, 4, 2, 1), (2, 13, 2, 3, 1),
                                                    (4, 16, 4, 2, 4)])
def test_strided_1x1_reads_only_its_rows(c1, hw, co1, stride, cores):
    """Old code: every row between the first and the last a band reads
    (2*Ho - 1 rows at stride 2); now Ho rows."""
    text, args = conv(c1, hw, co1, 1, stride, 0, seed=3)
    got, want, result = compile_and_simulate(text, f"npu-lower{{cores={cores}}}", args)
    assert_close(got[-1], want[-1], np.float16)
    assert not result.hazards
    ho = (hw - 1) // stride + 1
    weights = c1 * co1 * 512
    read = result.report["bytes"]["gm_to_l1"] - weights * cores
    assert read <= c1 * ho * hw * 32, (read, c1 * ho * hw * 32)


def test_cost_model_counts_the_rows_read():
    """A band of 4 output rows at stride 2 reads 4 input rows, not 7."""
    s = ConvShape(c1=16, h=56, w=56, co1=32, kh=1, kw=1, ho=28, wo=28, stride_h=2,
                  dilation_h=1, pad_top=0, row_skip=True)
    assert _l1_band_bytes(s, 4) == 16 * 4 * 56 * 32
    assert s.read_rows == 28
