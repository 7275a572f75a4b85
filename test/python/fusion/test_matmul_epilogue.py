"""Matmul epilogues (npu-fuse groups a matmul with the elementwise consumers
of C; npu-lower-matmul applies them to each drained C piece) on the
simulator: each epilogue and a chain against the numpy reference and the
unfused lowering, with M and K not multiples of the tile (edge tiles), the
pipelined and the simple schedule, f16 and f32 results. Simulation is
strict (bounds, uninitialised reads, races)."""

from __future__ import annotations

import pytest

from helpers import assert_outputs_close, compile_and_simulate, compile_program, unfused_options
from matmul_patterns import matmul_epilogue
from test_fused_kernels import inputs_for

from npu.costmodel.fusion.epilogue import EPILOGUE_ATTR
from npu.ir import dict_attr_items, walk


def epilogues(text: str) -> list[dict]:
    module = compile_program(text, "npu-fuse")
    return [dict_attr_items(op.attributes[EPILOGUE_ATTR])
            | {"members": [o.name for o in op.regions[0].blocks[0].operations
                           if o.name.startswith("ascend.") and o.name != "ascend.matmul"]}
            for op in walk(module.operation) if EPILOGUE_ATTR in op.attributes]


def fused_and_unfused(text: str, options: str, ins: dict):
    """Simulation results of the fused and the unfused lowering, after
    checking both against the reference and each other (race detector clean)."""
    fused, expected, fres = compile_and_simulate(text, f"npu-lower{{cores=1 {options}}}", ins)
    unfused, _, ures = compile_and_simulate(text, f"npu-lower{{cores=1 fuse=false {unfused_options(options)}}}", ins)
    assert_outputs_close(fused, expected)
    assert_outputs_close(fused, unfused)
    assert fres.hazards == [], fres.hazards
    return fres, ures


def check(text: str, options: str = "", members: int | None = None, faster: bool = True):
    """Fused and unfused lowerings both match the reference and each other,
    the race detector is clean, and (`faster`) the epilogue saves cycles."""
    fres, ures = fused_and_unfused(text, options, inputs_for(text))
    (group,) = epilogues(text)
    if members is not None:
        assert len(group["members"]) == members, group
    assert group["gm_bytes"] < group["unfused_gm_bytes"]
    if faster:
        assert fres.cycles < ures.cycles, (fres.cycles, ures.cycles)
    return fres, ures


@pytest.mark.parametrize("steps,out,members", [
    (("bias",), "f32", 1),
    (("scale",), "f32", 1),
    (("residual",), "f32", 1),
    (("cast",), "f16", 1),
    (("gelu",), "f32", 5),
    (("bias", "scale", "residual", "cast"), "f16", 4),
])
def test_each_epilogue_with_edge_tiles(steps, out, members):
    # M = 48, K = 80 in tiles of 32: an edge tile along both (simple schedule);
    # a reduction of 1024 so that the matmul's own time covers a GELU's
    # vector work (npu-fuse refuses epilogues that would not hide under it).
    # Numerics only: with tiles this small a lone bias add costs more per
    # tile (a GM load queued behind the next tile's A and B) than it saves.
    check(matmul_epilogue(48, 1024, 80, steps, out), "m=32 k=32", members, faster=False)


@pytest.mark.parametrize("steps", [("bias",), ("residual",), ("bias", "gelu")])
def test_epilogue_saves_cycles(steps):
    check(matmul_epilogue(48, 1024, 80, steps, "f32"), "", len(steps) + 4 * ("gelu" in steps))


def test_epilogue_that_would_not_hide_under_the_matmul_is_refused():
    # A short reduction: the GELU's vector work exceeds the matmul's own time.
    assert epilogues(matmul_epilogue(48, 64, 80, ("bias", "gelu"), "f32")) == []
    assert len(epilogues(matmul_epilogue(48, 64, 80, ("bias",), "f32"))) == 1


def test_bias_gelu_cast_pipelined():
    # Tiles dividing the shape: the pipelined schedule drains C in pieces.
    check(matmul_epilogue(64, 2048, 256, ("bias", "gelu", "cast"), "f16"), "", 7)


def test_f16_matmul_result_is_rounded_before_the_epilogue():
    check(matmul_epilogue(32, 1024, 48, ("bias", "gelu"), "f16", c_elem="f16"), "", 6)


def test_epilogue_removes_c_round_trip_from_gm():
    (group,) = epilogues(matmul_epilogue(48, 1024, 80, ("bias", "gelu", "cast"), "f16"))
    c = 48 * 80
    # Fused: the bias tile is read and the f16 result written, once each.
    assert group["gm_bytes"] == c * 4 + c * 2
    # Unfused (f32 elements): C written (1), add (3), muls, erf, adds, muls
    # (2 each), mul (3), then the cast reads 4 bytes and writes 2.
    assert group["unfused_gm_bytes"] == c * 4 * (1 + 3 + 4 * 2 + 3 + 1) + c * 2


def test_reference_of_the_epilogue_group_equals_the_program():
    import numpy as np

    from npu.ir import functions
    from npu.reference import evaluate

    text = matmul_epilogue(32, 1024, 48, ("bias", "gelu", "cast"), "f16")
    ins = inputs_for(text)
    # (the modules are kept: a function does not keep its module alive)
    fused, plain = compile_program(text, "npu-fuse"), compile_program(text, "")
    got = evaluate(functions(fused)[0], [a.copy() for a in ins])
    want = evaluate(functions(plain)[0], [a.copy() for a in ins])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def constant_inputs(text: str) -> list:
    """`inputs_for`, with each `npu.constant` argument's own data."""
    from helpers import compile_program

    from npu.ir import arg_attrs, constant_data, functions, memref_element, memref_shape

    ins = inputs_for(text)
    module = compile_program(text, "")  # kept: the function does not keep it alive
    func = functions(module)[0]
    for k, arg in enumerate(func.regions[0].blocks[0].arguments):
        attr = arg_attrs(func, k).get("npu.constant")
        if attr is not None:
            ins[k] = constant_data(attr, memref_shape(arg.type), memref_element(arg.type))
    return ins


def check_constant(text: str, options: str = ""):
    return fused_and_unfused(text, options, constant_inputs(text))


@pytest.mark.parametrize("m,n,k,steps,c_elem,options", [
    (48, 1024, 80, ("bias_row",), "f32", "m=32 k=32"),         # edge tiles, simple schedule
    (64, 2048, 256, ("bias_row", "gelu"), "f32", ""),           # pipelined, GELU after the add
    (32, 1024, 48, ("bias_row", "scale"), "f16", ""),           # f16 C: rows of one block
])
def test_broadcast_bias_rows_are_read_once(m, n, k, steps, c_elem, options):
    text = matmul_epilogue(m, n, k, steps, "f32" if c_elem == "f32" else "f16", c_elem=c_elem)
    fres, ures = check_constant(text, options)
    es = 4 if c_elem == "f32" else 2
    # GM -> UB carries one row of the bias per column block of C, nothing else.
    assert fres.report["bytes"]["gm_to_ub"] == k * es, fres.report["bytes"]
    assert fres.cycles < ures.cycles, (fres.cycles, ures.cycles)


def test_constant_whose_rows_differ_is_read_per_tile():
    text = matmul_epilogue(48, 1024, 80, ("bias_table",), "f32")
    fres, _ = check_constant(text, "m=32 k=32")
    assert fres.report["bytes"]["gm_to_ub"] == 48 * 80 * 4, fres.report["bytes"]


def test_gelu_joins_a_short_reduction_when_the_drain_loads_nothing():
    # The refused case above, with the bias a broadcast host constant: the
    # drains load nothing from GM, so the GELU's vector work runs in them.
    text = matmul_epilogue(48, 64, 80, ("bias_row", "gelu"), "f32")
    (group,) = epilogues(text)
    assert len(group["members"]) == 6, group
    fres, ures = check_constant(text)
    assert fres.cycles < ures.cycles, (fres.cycles, ures.cycles)


def staged_moves(text: str, options: str) -> int:
    """scf.ifs of the lowered matmul that hold nothing but one L0C -> UB move."""
    module = compile_program(text, f"npu-lower{{cores=1 {options}}}")
    return sum(1 for op in walk(module.operation) if op.name == "scf.if"
               and [o.name for o in op.regions[0].blocks[0].operations
                    if o.name.startswith("cce.")] == ["cce.copy_l0c_to_ub"])


def assert_bit_identical(texts, pipeline: str, ins) -> None:
    """Each of `texts` matches the reference, races nowhere, and all give
    the same bytes (schedules that differ only in order)."""
    outs = []
    for text in texts:
        got, expected, res = compile_and_simulate(text, pipeline, ins)
        assert_outputs_close(got, expected)
        assert res.hazards == [], res.hazards
        outs.append(got)
    for a, b in zip(*outs):
        assert a.tobytes() == b.tobytes()


def test_staged_drain_releases_l0c_before_the_epilogue_bit_identically():
    # 4 C tiles of 64x64 in the pipelined schedule: with staged-drain each
    # piece moves to UB under its own scf.if (the next tile's mads wait only
    # for that move); the epilogue then reads it, with the same numerics.
    base = matmul_epilogue(64, 2048, 256, ("bias", "gelu", "cast"), "f16")
    staged, plain = (base.replace('"ascend.matmul"(%a, %b, %t1)',
                                  f'"ascend.matmul"(%a, %b, %t1) {{npu.options = '
                                  f'{{"staged-drain" = {n} : i64}}}}') for n in (1, 0))
    assert staged_moves(staged, "k=64") > 0
    assert staged_moves(plain, "k=64") == 0
    assert_bit_identical((staged, plain), "npu-lower{cores=1 k=64}", inputs_for(base))


def test_f16_drain_is_staged_when_its_vector_work_exceeds_half_the_cubes():
    # 4 C tiles of 64x64, bias + GELU + cast to f16 (2048 cycles of vector
    # work): over a reduction of 768 the cube's 3072 cycles are less than
    # twice that, and the drain is staged; over 2048 (8192 cycles) it is not.
    heavy = matmul_epilogue(64, 768, 256, ("bias_row", "gelu", "cast"), "f16")
    light = matmul_epilogue(64, 2048, 256, ("bias_row", "gelu", "cast"), "f16")
    assert staged_moves(heavy, "k=64") > 0
    assert staged_moves(light, "k=64") == 0
    plain = heavy.replace('"ascend.matmul"(%a, %b, %t1)',
                          '"ascend.matmul"(%a, %b, %t1) {npu.options = '
                          '{"staged-drain" = 0 : i64}}')
    assert_bit_identical((heavy, plain), "npu-lower{cores=1 k=64}", inputs_for(heavy))


def test_bias_computed_by_an_op_is_an_ordinary_operand():
    # The broadcast-row test (`row_broadcast`) looks at function arguments
    # only; a bias that an earlier op writes (an alloc's result) once made it
    # raise instead of answering no (found by the npu-opt fuzzer).
    t = 'memref<5x3x16x16xf32, "gm">'
    text = f"""func.func @computed_bias(%a: memref<4x3x16x16xf16, "gm">, %b: memref<5x4x16x16xf16, "gm">,
                               %bias0: {t}, %y: {t}) {{
  %bias = memref.alloc() : {t}
  "ascend.relu"(%bias0, %bias) : ({t}, {t}) -> ()
  %c = memref.alloc() : {t}
  "ascend.matmul"(%a, %b, %c) : (memref<4x3x16x16xf16, "gm">, memref<5x4x16x16xf16, "gm">, {t}) -> ()
  "ascend.add"(%c, %bias, %y) : ({t}, {t}, {t}) -> ()
  return
}}"""
    check(text, members=1, faster=False)


def body_order(text: str, options: str) -> str:
    """The pipelined loop body's top-level mads (m: ops holding one) and
    drain scf.ifs (d: those holding an L0C -> UB move), in program order."""
    module = compile_program(text, f"npu-lower{{cores=1 {options}}}")
    loop = next(op for op in walk(module.operation) if op.name == "scf.for")
    order = ""
    for op in loop.regions[0].blocks[0].operations:
        inner = [o.name for o in walk(op)]
        if "cce.mad" in inner:
            order += "m"
        elif op.name == "scf.if" and "cce.copy_l0c_to_ub" in inner:
            order += "d"
    return order


def test_drains_after_the_mads_keep_the_numerics():
    # 4 C tiles of 64x128 in 4 pieces: by default the pieces' drains follow
    # all of the chunk's mads (side by side, so npu-plan-memory keeps
    # consecutive pieces' UB apart); drain-order=per-piece puts each right
    # after its piece's mads. Same products, same accumulation order: the
    # outputs are bit-identical, and the race detector stays clean.
    base = matmul_epilogue(64, 1024, 512, ("scale",), "f32")
    after, per_piece = (base.replace('"ascend.matmul"(%a, %b, %t1)',
                                     f'"ascend.matmul"(%a, %b, %t1) {{npu.options = '
                                     f'{{"drain-order" = "{v}"}}}}')
                        for v in ("after-mads", "per-piece"))
    # npu-double-buffer unrolls the loop by two; each half has 4 pieces of
    # 2 sub-steps (A's row strip is resident in L1: B chunks of half the
    # reduction).
    assert body_order(after, "k=128") == ("m" * 8 + "d" * 4) * 2
    assert body_order(per_piece, "k=128") == ("m" * 2 + "d") * 8
    assert_bit_identical((after, per_piece), "npu-lower{cores=1 k=128}", inputs_for(base))


def mads_and_slot_releases(text: str, options: str) -> tuple[int, int]:
    """The pipelined loop body's top-level mads (an scf.if holding the first
    chunk's overwriting mad and the accumulating one counts once) and its
    M -> MTE1 set_flags (L0A / L0B slots released to the next loads)."""
    module = compile_program(text, f"npu-lower{{cores=1 {options}}}")
    loop = next(op for op in walk(module.operation) if op.name == "scf.for"
                and any(o.name == "cce.mad" for o in walk(op)))
    mads = releases = 0
    for op in loop.regions[0].blocks[0].operations:
        if op.name == "cce.mad" or (op.name == "scf.if"
                                    and any(o.name == "cce.mad" for o in walk(op))):
            mads += 1
        elif op.name == "cce.set_flag" and str(op.attributes["src"]) == '"M"' \
                and str(op.attributes["dst"]) == '"MTE1"':
            releases += 1
    return mads, releases


def test_cube_bound_pieces_share_the_l0a_sub_tile():
    # 256x1024x512 + scale in 4 C tiles of 256x128 (4 pieces): the cube
    # (32k cycles) outruns B's streaming and the drain is light, so a set
    # per mad (each waits for the mad's completion latency, stalling M)
    # would make M the critical pipe: two pieces share each A sub-tile and
    # one flag releases the slots after both mads. Numerics and races as
    # ever. With M = 64 the weights' streaming is the critical pipe (B is
    # read per row of 64, the cube has a quarter of the work): one flag per
    # mad, as M has the slack. (Pieces in column slabs, c-piece-rows=1: by
    # default the pieces of this tall tile form a 2 x 2 grid instead, whose
    # mads are twice as large, one release each.)
    text = matmul_epilogue(256, 1024, 512, ("scale",), "f32")
    # (npu-double-buffer unrolls the loop by two: 2 x 4 pieces x 2 sub-steps.)
    assert mads_and_slot_releases(text, "k=128 c-piece-rows=1") == (16, 8)
    assert mads_and_slot_releases(text, "k=128") == (8, 8)
    mads, releases = mads_and_slot_releases(
        matmul_epilogue(64, 1024, 512, ("scale",), "f32"), "k=128 c-piece-rows=1")
    assert mads == releases
    check(text, "k=128 c-piece-rows=1", members=1, faster=False)


@pytest.mark.parametrize("m,n,k,steps,out,nd", [
    (96, 1024, 128, ("bias_row", "gelu", "cast"), "f16", None),  # f16, a broadcast row
    (90, 1024, 128, ("bias", "gelu", "cast"), "f16", None),      # odd M
    (60, 256, 128, ("bias",), "f32", (60, 120)),                 # odd M and N, row-major
    (96, 512, 128, ("residual",), "f32", None),                  # an operand loaded per piece
])
def test_epilogue_on_c_pieces_in_a_grid(m, n, k, steps, out, nd):
    """C pieces in a 2 x 2 grid (`c-piece-rows=2`): the epilogue of each
    piece loads, computes and stores at its row and column offsets, the
    padding rows of an odd M in the bottom pieces only."""
    text = matmul_epilogue(m, n, k, steps, out, nd=nd)
    m_tile = 16 * -(-m // 16)
    options = f"m={m_tile} k={k // 2} c-pieces=4 c-piece-rows=2"
    module = compile_program(text, f"npu-lower{{cores=1 {options} emit=cce}}")
    mads = {(op.attributes["m"].value, op.attributes["k"].value)
            for op in walk(module.operation) if op.name == "cce.mad"}
    assert mads == {(m_tile // 2, 16 * -(-k // 16) // 4)}, mads  # the pipelined schedule's 2 x 2 pieces
    fused_and_unfused(text, options, constant_inputs(text))
