"""Shared scaffolding of the many-core conv tests (`test_conv_rows`,
`test_conv_aligned`, `test_mobilenet_aligned`): an ascend program's random
inputs, its cce program on N cores, a run of it, and the check that a
many-core run equals one core and the numpy reference."""

from __future__ import annotations

import numpy as np

from npu.ir import NUMPY_DTYPES, is_memref, make_context, memref_element, memref_shape, parse_module
from npu.pipeline import run_pipeline
from npu.reference import evaluate
from npu.simulator import simulate
from npu.target import get_target


def random_inputs(text: str, seed: int, map_scale: float, diagonal: int | None = None) -> list[np.ndarray]:
    """Uniform in [-1, 1] for every memref argument, 4-D ones divided by
    `map_scale`; argument `diagonal` (a block-diagonal weight) zero outside
    each 16x16 block's diagonal."""
    module = parse_module(text, make_context())  # held: the function lives as long as its module
    func = module.body.operations[0]
    rng = np.random.default_rng(seed)
    out = []
    for a in func.regions[0].blocks[0].arguments:
        if is_memref(a.type):
            shape = memref_shape(a.type)
            out.append((rng.uniform(-1, 1, shape) / (map_scale if len(shape) == 4 else 1)).astype(
                NUMPY_DTYPES[memref_element(a.type)]))
    if diagonal is not None:
        out[diagonal] = out[diagonal] * np.eye(16, dtype=np.float16)
    return out


def compiled(text: str, cores: int, options: str = "") -> str:
    """The generic-form cce program of `text` lowered for `cores` cores."""
    module = parse_module(text, make_context())
    run_pipeline(module, f"builtin.module(npu-lower{{cores={cores}{options} emit=cce}})", get_target())
    return module.operation.get_asm(print_generic_op_form=True)


def run(program: str, inputs: list[np.ndarray]):
    return simulate(parse_module(program, make_context()), inputs, target=get_target())


def check_like_one_core(many, one, text: str, inputs: list[np.ndarray], block_dim: int) -> None:
    """The many-core run on `block_dim` cores, with no race, within an f16
    ulp of one core (each core's convs are tiled for its own rows, so f32
    sums may associate otherwise), near numpy, and faster."""
    assert many.hazards == [] and many.report["block_dim"] == block_dim
    np.testing.assert_allclose(many.outputs[-1], one.outputs[-1], rtol=1e-3, atol=1e-3)
    module = parse_module(text, make_context())
    want = evaluate(module.body.operations[0], inputs)[-1]
    np.testing.assert_allclose(many.outputs[-1], want, rtol=3e-3, atol=3e-3)
    assert many.cycles < one.cycles
