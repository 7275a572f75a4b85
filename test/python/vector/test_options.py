"""Pass options and targets of the vector lowerings: the chunk follows the
target's UB size and `ub-fraction`, results stay right on every preset, and
bad options are reported, not crashed on."""

from __future__ import annotations

import numpy as np
import pytest

from npu.ir import make_context, ops_named, parse_module
from npu.pipeline import PipelineError, run_pipeline
from npu.target import get_target
from vec_common import func, memref, run

N = 70001  # several chunks on every preset, plus an overlapped tail


def lowered_chunk(pipeline: str, target_name: str) -> int:
    t = memref([N], "f16")
    module = parse_module(func("f", "ascend.add", [t, t, t]), make_context())
    run_pipeline(module, pipeline, get_target(target_name))
    sizes = [op.result.type.shape[0] for op in ops_named(module.operation, "memref.alloc")]
    return max(sizes)


@pytest.mark.parametrize("target_name", ["ascend910", "ascend910b", "ascend310"])
def test_chunk_follows_target(target_name):
    ub = get_target(target_name).capacity("ub")
    # In-place add: two f16 buffers per element in half of UB.
    assert lowered_chunk("npu-lower-elementwise", target_name) == ub // 2 // 4 // 128 * 128
    assert lowered_chunk("npu-lower-elementwise{ub-fraction=0.25}", target_name) == \
        ub // 4 // 4 // 128 * 128


@pytest.mark.parametrize("target_name", ["ascend910b", "ascend310"])
def test_results_on_other_targets(target_name):
    rng = np.random.default_rng(5)
    a, b = (rng.uniform(-4, 4, N).astype(np.float16) for _ in range(2))
    t = memref([N], "f16")
    res = run(func("f", "ascend.mul", [t, t, t]), "npu-lower-elementwise", [a, b, np.zeros_like(a)],
              target=get_target(target_name))
    assert np.array_equal(res.outputs[2], a * b)


@pytest.mark.parametrize("pipeline,message", [
    ("npu-lower-elementwise{ub-fraction=0}", "'ub-fraction' of pass 'npu-lower-elementwise': "
     "expected a value in (0, 1], got '0'"),
    ("npu-lower-elementwise{ub-fraction=x}", "bad value for option 'ub-fraction'"),
    ("npu-lower-transpose{tile=3}", "has no option 'tile'"),
])
def test_bad_options(pipeline, message):
    t = memref([64], "f16")
    module = parse_module(func("f", "ascend.relu", [t, t]), make_context())
    with pytest.raises(PipelineError, match=message.replace("(", r"\(").replace("]", r"\]")):
        run_pipeline(module, pipeline, get_target())
