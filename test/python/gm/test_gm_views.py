"""Every lowering with operands that are GM temporaries and views of them:
`memref.alloc` + `expand_shape`/`collapse_shape` (npu-lower with
plan-gm=false) and `memref.view`s of the planned workspace plus reshapes of
those (npu-lower); and on reshapes of function arguments. Simulated strictly (bounds, uninitialised reads, races)
and compared with the numpy reference of the unplanned program."""

from __future__ import annotations

import numpy as np
import pytest

from npu.ir import NUMPY_DTYPES as NP

from gm_programs import through_argument_views, through_temporaries
from helpers import assert_outputs_close, compile_and_simulate, random_inputs

CASES = {
    "matmul": ("ascend.matmul", [((2, 4, 16, 16), "f16"), ((3, 2, 16, 16), "f16")],
               ((3, 4, 16, 16), "f32"), ""),
    "batch_matmul": ("ascend.batch_matmul", [((2, 1, 2, 16, 16), "f16"), ((2, 2, 1, 16, 16), "f16")],
                     ((2, 2, 2, 16, 16), "f16"), ""),
    "fractalize": ("ascend.fractalize", [((40, 24), "f16")], ((2, 3, 16, 16), "f16"), ""),
    "defractalize": ("ascend.defractalize", [((2, 3, 16, 16), "f32")], ((40, 24), "f32"), ""),
    "add_broadcast": ("ascend.add", [((6, 40), "f32"), ((40,), "f32")], ((6, 40), "f32"), ""),
    "mul": ("ascend.mul", [((3, 5, 7), "f16"), ((3, 5, 7), "f16")], ((3, 5, 7), "f16"), ""),
    "muls": ("ascend.muls", [((9, 33), "f16")], ((9, 33), "f16"), "scalar = 1.5 : f64"),
    "exp": ("ascend.exp", [((4, 100), "f32")], ((4, 100), "f32"), ""),
    "cast": ("ascend.cast", [((8, 70), "f32")], ((8, 70), "f16"), 'round_mode = "rint"'),
    "clamp": ("ascend.clamp", [((5, 64), "f16")], ((5, 64), "f16"),
              "min = -0.25 : f64, max = 0.5 : f64"),
    "transpose_vnchwconv": ("ascend.transpose", [((2, 32, 48), "f16")], ((2, 48, 32), "f16"),
                            "permutation = array<i64: 0, 2, 1>"),
    "transpose_blocks": ("ascend.transpose", [((2, 3, 4, 16), "f32")], ((2, 4, 3, 16), "f32"),
                         "permutation = array<i64: 0, 2, 1, 3>"),
    "reduce_sum": ("ascend.reduce_sum", [((6, 96), "f32")], ((6,), "f32"), ""),
    "reduce_max": ("ascend.reduce_max", [((3, 4, 50), "f16")], ((3, 4), "f16"), ""),
}


@pytest.mark.parametrize("reshaped_inputs", [False, True], ids=["reshaped-out", "reshaped-in"])
@pytest.mark.parametrize("planned", [False, True], ids=["allocs", "workspace"])
@pytest.mark.parametrize("case", list(CASES))
def test_lowering_with_viewed_operands(case, planned, reshaped_inputs):
    op, ins, out, attrs = CASES[case]
    source = through_temporaries(op, ins, out, attrs, reshaped_inputs=reshaped_inputs)
    inputs = random_inputs(source, seed=len(case))
    pipeline = "npu-lower" if planned else "npu-lower{plan-gm=false}"
    got, expected, result = compile_and_simulate(source, pipeline, inputs)
    assert_outputs_close(got, expected)
    assert not np.isnan(expected[-1].astype(np.float64)).any()  # the output was written
    gm = result.report["gm"]
    if planned:
        # All temporaries in one workspace; the op's inputs and output are
        # live together, so they cannot share bytes.
        live = sum(np.prod(shape) * np.dtype(NP[elem]).itemsize for shape, elem in ins + [out])
        assert gm["alloc_bytes"] == 0 and gm["workspace_bytes"] >= live
    else:
        assert gm["workspace_bytes"] == 0 and gm["alloc_bytes"] > 0


@pytest.mark.parametrize("case", list(CASES))
def test_lowering_on_reshaped_arguments(case):
    op, ins, out, attrs = CASES[case]
    source = through_argument_views(op, ins, out, attrs)
    inputs = random_inputs(source, seed=len(case))
    got, expected, result = compile_and_simulate(source, "npu-lower", inputs)
    assert_outputs_close(got, expected)
    assert not np.isnan(expected[-1].astype(np.float64)).any()
    assert result.report["gm"] == {"workspace_bytes": 0, "alloc_bytes": 0}
