"""A conv whose straight bands copy the next band's map during the band
before (`StraightBands`) and whose epilogue loads a residual per super tile
(`ConvEpilogue.load_super`): the map copies and the residual of the super
tile they go with are one run of MTE2 copies, so one GM latency holds MTE2
where each paid its own (1x1 64->256 56 with ResNet's Add + ReLU: MTE2 busy
46,885 -> 42,335 cycles; ResNet-50 one core 1,913,344 -> 1,906,125)."""

from __future__ import annotations

from npu import ir as nir
from npu.ir import make_context, parse_module
from npu.pipeline import run_pipeline
from npu.target import get_target

from test_conv_estimate_epilogue import residual_conv


def _cce_names(c1: int, co1: int, hw: int) -> list[str]:
    text, _ = residual_conv(c1, co1, hw, 1)
    module = parse_module(text, make_context())
    run_pipeline(module, "npu-lower{cores=1 emit=cce}", get_target("ascend910"))
    body = nir.functions(module)[0].regions[0].blocks[0]
    return [op.operation.name for op in body.operations if op.operation.name.startswith("cce.")]


def test_next_map_and_residual_share_a_flag():
    names = _cce_names(4, 16, 56)
    assert "scf.for" not in names  # straight bands
    ends = [i for i, n in enumerate(names[:-1])
            if n == "cce.copy_gm_to_l1" and names[i + 1] != "cce.copy_gm_to_l1"]
    # what MTE2 does next (a wait for the residual's set to be stored is no flag)
    after = [next(n for n in names[i + 1:] if n != "cce.wait_flag") for i in ends]
    # every band's map after the first (its copies go with the weights') runs
    # into a residual copy: 13 of the 14 bands of 4 rows
    assert len(after) == 14
    assert after[1:] == ["cce.copy_gm_to_ub"] * 13
