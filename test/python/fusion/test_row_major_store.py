"""Row-major stores from the matmul epilogue (npu-fuse absorbs the
defractalize after a matmul; npu-lower-matmul writes each drained column
block's rows straight to their row-major places) on the simulator: against
the numpy reference and the unfused lowering, with and without a bias
epilogue, M and N not multiples of 16, f16 and f32 C, and the Q/K/V
siblings of npu-fuse-horizontal (one row-major buffer each). Simulation is
strict (bounds, uninitialised reads, races)."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest

from helpers import assert_outputs_close, compile_and_simulate, compile_program, unfused_options
from matmul_patterns import matmul_epilogue
from test_fused_kernels import inputs_for
from test_horizontal import run, siblings

from mlir import ir

from npu.costmodel.fusion.epilogue import EPILOGUE_ATTR
from npu.ir import ops_named, walk


def absorbed(text: str) -> int:
    """Defractalizes inside npu.epilogue groups after npu-fuse."""
    module = compile_program(text, "npu-fuse")
    return sum(len(ops_named(op, "ascend.defractalize"))
               for op in walk(module.operation) if EPILOGUE_ATTR in op.attributes)


def check(text: str, options: str = "", faster: bool = True):
    ins = inputs_for(text)
    fused, expected, fres = compile_and_simulate(text, f"npu-lower{{{options}}}", ins)
    unfused, _, ures = compile_and_simulate(text, f"npu-lower{{fuse=false {unfused_options(options)}}}", ins)
    assert_outputs_close(fused, expected)
    # The same f32 sums in the same order, moved differently: bit for bit.
    for got, same in zip(fused, unfused):
        np.testing.assert_array_equal(got, same)
    assert fres.hazards == [], fres.hazards
    assert absorbed(text) == 1
    if faster:
        assert fres.cycles < ures.cycles, (fres.cycles, ures.cycles)
    return fres, ures


@pytest.mark.parametrize("m, k, steps, c_elem, options", [
    (48, 80, (), "f32", "m=32 k=32"),          # no epilogue ops: the store alone; edge tiles
    (45, 72, ("bias",), "f32", "m=32 k=32"),    # odd M and N (a half column block of f32)
    (45, 80, ("bias",), "f16", ""),            # f16 C, odd M
    (64, 256, ("bias",), "f32", ""),           # tiles dividing the shape: pipelined drains
    (20, 8, ("bias",), "f32", ""),             # rows narrower than the column block (8 of 16)
])
def test_matmul_then_defractalize(m, k, steps, c_elem, options):
    text = matmul_epilogue(m, 256, k, steps, c_elem, c_elem, nd=(m, k))
    check(text, options, faster=False)


def test_row_major_store_saves_cycles():
    check(matmul_epilogue(128, 512, 256, ("bias",), "f32", nd=(128, 256)))


def test_rows_that_are_not_whole_blocks_keep_the_defractalize():
    # 72 f16 = 144 bytes a row: bursts of whole 32-byte blocks cannot write it.
    text = matmul_epilogue(48, 256, 72, ("bias",), "f16", "f16", nd=(48, 72))
    assert absorbed(text) == 0
    ins = inputs_for(text)
    fused, expected, res = compile_and_simulate(text, "npu-lower", ins)
    assert_outputs_close(fused, expected)
    assert res.hazards == []


@pytest.mark.parametrize("m, k, ns, options, stores", [
    # Q/K/V-like, odd M, bias adds after the defractalizes (row-major
    # broadcasts): pieces span siblings; the stores move up to the matmul.
    (45, 64, (48, 48, 48), "", 3),
    # Bias adds before the defractalizes (Nz), the results the function's
    # outputs; tiles of 2 column blocks, a sibling and a half.
    (64, 64, (48, 48, 48), "npu-lower{k=32}", 3),
    # Unequal and odd widths (f32 rows of 40, 24, 56: whole 32-byte blocks).
    (20, 48, (40, 24, 56), "", 3),
    # Rows of 70 and 17 f32 are not whole blocks: the defractalizes stay.
    (33, 32, (70, 17), "", 0),
])
def test_siblings_store_into_their_own_buffers(m, k, ns, options, stores):
    from npu.frontend.compile import import_linalg, linalg_to_ascend_text
    from npu.ir import make_context, parse_module
    from npu.pipeline import run_pipeline
    from npu.target import get_target

    model, feeds = siblings(m, k, ns, constant=True, bias=True, seed=3)
    ctx = make_context()
    linalg, ins, outs, locate = import_linalg(model, ctx, "m.onnx")
    module = parse_module(linalg_to_ascend_text(linalg, ins, outs, locate, "m.onnx"), ctx)
    run_pipeline(module, "npu-fuse-horizontal{remarks=false},npu-fuse{remarks=false}",
                 get_target("ascend910"))
    groups = [op for op in walk(module.operation) if EPILOGUE_ATTR in op.attributes]
    assert sum(len(ops_named(g, "ascend.defractalize")) for g in groups) == stores
    want = onnxruntime.InferenceSession(model.SerializeToString()).run(None, feeds)
    fused = run(model, feeds, options or "npu-lower")
    apart = run(model, feeds, "npu-lower{fuse=false}")
    for got, same, exp in zip(fused, apart, want):
        np.testing.assert_allclose(got, exp, rtol=1e-2, atol=1e-2 * float(np.abs(exp).max()))
        np.testing.assert_array_equal(got, same)


def test_rows_too_wide_for_a_defractalize_strip():
    # 2304 f32 a row: a 16-row strip and its transpose need 288 KiB of UB, so
    # npu-lower-fractalize refuses the defractalize on its own; stored
    # row-major by the matmul's drain it needs no strip at all.
    from npu.pipeline import PipelineError

    text = matmul_epilogue(16, 32, 2304, ("bias",), "f32", nd=(16, 2304))
    assert absorbed(text) == 1
    ins = inputs_for(text)
    got, expected, res = compile_and_simulate(text, "npu-lower", ins)
    assert_outputs_close(got, expected)
    assert res.hazards == []
    with pytest.raises(PipelineError, match="too wide"):
        compile_program(text, "npu-lower{fuse-row-major-stores=false}")


def _batched(batch: int, m: int, k: int, elem: str) -> str:
    """batch_matmul of [batch] (m x 32) x (32 x k) in Nz, C defractalized."""
    m1, k1 = -(-m // 16), -(-k // 16)

    def t(*shape, e):
        return f'memref<{"x".join(map(str, shape))}x{e}, "gm">'
    a, b = t(batch, 2, m1, 16, 16, e="f16"), t(batch, k1, 2, 16, 16, e="f16")
    c, y = t(batch, k1, m1, 16, 16, e=elem), t(batch, m, k, e=elem)
    return (f"func.func @bmm(%a: {a}, %b: {b}, %y: {y}) {{\n"
            f"  %c = memref.alloc() : {c}\n"
            f'  "ascend.batch_matmul"(%a, %b, %c) : ({a}, {b}, {c}) -> ()\n'
            f'  "ascend.defractalize"(%c, %y) : ({c}, {y}) -> ()\n'
            "  return\n}\n")


@pytest.mark.parametrize("batch, m, k, elem", [
    (3, 45, 72, "f32"), (2, 40, 80, "f16"),
    (4, 64, 128, "f32"),  # whole tiles: the pipelined schedule, batch in its flat loop
])
def test_batched_matmul_then_defractalize(batch, m, k, elem):
    # Each batch element's C goes to its own matrix of the row-major result.
    check(_batched(batch, m, k, elem), faster=False)


def test_a_bias_adds_rows_leave_one_burst_a_row_of_the_piece():
    # The bias add's result, only stored row-major, is written row-major in
    # UB (`rows_in_ub`): each row of a drained piece (here 3 column blocks,
    # BERT seq 128's V projection on one of 8 cores) leaves as one burst as
    # wide as the piece, not one burst per block (a GM burst's set-up each),
    # the same bits as the unfused lowering's.
    text = matmul_epilogue(128, 768, 96, ("bias_row",), "f16", "f16", nd=(128, 96))
    module = compile_program(text, "npu-lower{emit=cce}")
    stores = [op for op in walk(module.operation) if op.name == "cce.copy_ub_to_gm"]
    widths = {ir.IntegerAttr(op.attributes["burst_len"]).value for op in stores}
    assert stores and min(widths) > 1, widths  # 1: a 16-element f16 row of one block
    check(text)
