"""GM arguments padded to whole granules, and uninitialised bytes carried by
data movement (dialects/README.md, "GM arguments occupy whole 32-byte
granules"): padding is in bounds but never initialised; copies, loads and
vnchwconv move the initialised state along; only an instruction computing
with uninitialised lanes (or a result argument left holding them) fails."""

from __future__ import annotations

import numpy as np
import pytest

from npu.simulator import SimulationError, simulate
from npu.target import get_target

from sim_kernels import Kernel, gm, mem

T = get_target()
GRANULE = T.gm_alloc_granule_bytes
BLOCK = T.vector_block_bytes
LANES = T.lanes(2)
PER_GRANULE = GRANULE // 2  # f16 elements of one GM granule
N = PER_GRANULE - 1  # one element short of a granule (15 f16 on every preset)
UB_TINY = mem([PER_GRANULE], "f16", "ub")
RNG = np.random.default_rng(7)


def f16(n: int) -> np.ndarray:
    return RNG.uniform(-2, 2, n).astype(np.float16)


def loc(k: Kernel, tag: str) -> str:
    """`-:line:col` of a tagged op (unnamed input, column of its first character)."""
    line = k.tags[tag]
    text = k.lines[line - 2]
    return f"-:{line}:{len(text) - len(text.lstrip()) + 1}"


def expect_error(k: Kernel, inputs, kind: str, tag: str, message: str) -> None:
    # Timing-only runs track the initialised state just the same.
    for numerics in (True, False):
        with pytest.raises(SimulationError) as info:
            simulate(k.parse(), inputs, numerics=numerics)
        e = info.value
        assert (e.kind, e.where, e.message) == (kind, loc(k, tag), message)
        assert str(e) == f"{loc(k, tag)}: error: {kind}: {message}"


def tiny_add(mask: int, store_blocks: int = 1) -> Kernel:
    """c = a + b on N-element f16 tensors, each moved as one whole granule."""
    k = Kernel([("a", gm([N])), ("b", gm([N])), ("c", gm([N]))])
    for name in ("u", "v", "w"):
        k.alloc(name, UB_TINY)
    k.copy("gm_to_ub", "a", "u", 1, GRANULE // BLOCK, tag="load_a")
    k.copy("gm_to_ub", "b", "v", 1, GRANULE // BLOCK, tag="load_b")
    k.sync("MTE2", "V")
    k.vector("vadd", "w", "u", "v", repeat=1, mask=mask, tag="vadd")
    k.sync("V", "MTE3")
    k.copy("ub_to_gm", "w", "c", 1, store_blocks, tag="store")
    return k


def test_tiny_tensor_through_its_padded_granule():
    a, b = f16(N), f16(N)
    res = simulate(tiny_add(mask=N).parse(), [a, b, np.zeros(N, np.float16)])
    assert [o.shape for o in res.outputs] == [(N,)] * 3  # the padding is not returned
    np.testing.assert_array_equal(res.outputs[2], a + b)
    np.testing.assert_array_equal(res.outputs[0], a)
    assert res.hazards == []


def test_computing_with_a_padding_lane_is_uninitialised():
    k = tiny_add(mask=N + 1)
    expect_error(k, [f16(N), f16(N), np.zeros(N, np.float16)], "uninitialized", "vadd",
                 f"'cce.vadd' reads ub bytes [{2 * N}, {GRANULE}) that hold uninitialised data "
                 f"(2 of them), moved there by 'cce.copy_gm_to_ub' on pipe MTE2 at "
                 f"{loc(k, 'load_a')} from bytes that were never written")


def test_copy_past_the_padded_granule_is_out_of_bounds():
    k = Kernel([("a", gm([N])), ("c", gm([N]))])
    k.alloc("u", mem([2 * PER_GRANULE], "f16", "ub"))
    k.copy("gm_to_ub", "a", "u", 1, 2 * GRANULE // BLOCK, tag="load")
    expect_error(k, [f16(N), np.zeros(N, np.float16)], "bounds", "load",
                 f"'cce.copy_gm_to_ub' reads gm:arg0 bytes [0, {2 * GRANULE}) outside its operand "
                 f"#0's allocation [0, {GRANULE}) (argument #0: {2 * N} bytes padded to {GRANULE})")


def test_store_past_the_padded_granule_is_out_of_bounds():
    k = Kernel([("c", gm([N]))])
    k.alloc("w", mem([2 * PER_GRANULE], "f16", "ub"))
    k.vector("vdup", "w", repeat=1, mask=2 * PER_GRANULE, scalar=1.0)
    k.sync("V", "MTE3")
    k.copy("ub_to_gm", "w", "c", 1, 2 * GRANULE // BLOCK, tag="store")
    expect_error(k, [np.zeros(N, np.float16)], "bounds", "store",
                 f"'cce.copy_ub_to_gm' writes gm:arg0 bytes [0, {2 * GRANULE}) outside its "
                 f"operand #1's allocation [0, {GRANULE}) (argument #0: {2 * N} bytes padded to "
                 f"{GRANULE})")


def sub_copy(n: int, start: int, granules: int, tag: str = "load") -> Kernel:
    """Copy `granules` granules of `a` (n f16) starting at element `start`."""
    k = Kernel([("a", gm([n])), ("c", gm([n]))])
    k.alloc("u", mem([granules * PER_GRANULE], "f16", "ub"))
    length = n - start
    sub_t = f'memref<{length}xf16, strided<[1], offset: {start}>, "gm">'
    k.raw(f"%s = memref.subview %a[{start}] [{length}] [1] : {gm([n])} to {sub_t}")
    k.types["s"] = sub_t
    k.copy("gm_to_ub", "s", "u", 1, granules * GRANULE // BLOCK, tag=tag)
    return k


def test_transfer_starting_inside_the_argument_may_not_pass_its_last_granule():
    """Only the last granule's padding is in bounds."""
    n = PER_GRANULE + 3  # two granules, the second one mostly padding
    start = PER_GRANULE // 2
    expect_error(sub_copy(n, start, 2), [f16(n), np.zeros(n, np.float16)], "bounds", "load",
                 f"'cce.copy_gm_to_ub' reads gm:arg0 bytes [{2 * start}, {2 * start + 2 * GRANULE}) "
                 f"outside its operand #0's allocation [0, {2 * GRANULE}) (argument #0: {2 * n} "
                 f"bytes padded to {2 * GRANULE})")
    # Starting mid-argument and ending in the last granule's padding is fine.
    for begin in (start, PER_GRANULE):
        res = simulate(sub_copy(n, begin, 1).parse(), [f16(n), np.zeros(n, np.float16)])
        assert res.hazards == []


def test_argument_of_whole_granules_has_no_padding():
    k = Kernel([("a", gm([PER_GRANULE]))])
    k.alloc("u", mem([2 * PER_GRANULE], "f16", "ub"))
    k.copy("gm_to_ub", "a", "u", 1, 2 * GRANULE // BLOCK, tag="load")
    expect_error(k, [f16(PER_GRANULE)], "bounds", "load",
                 f"'cce.copy_gm_to_ub' reads gm:arg0 bytes [0, {2 * GRANULE}) outside its operand "
                 f"#0's allocation [0, {GRANULE}) (argument #0)")


def test_result_left_holding_uninitialised_elements_is_an_error():
    """Padding may receive garbage, the argument's own elements may not: only
    8 lanes are computed but the whole granule is stored."""
    k = tiny_add(mask=8)
    expect_error(k, [f16(N), f16(N), np.zeros(N, np.float16)], "uninitialized", "store",
                 f"'cce.copy_ub_to_gm' on pipe MTE3 leaves uninitialised data in argument #2: "
                 f"gm:arg2 bytes [16, {2 * N}) ({2 * N - 16} of them) were moved from bytes that "
                 f"were never written")


def half_initialised_then_moved(read_offset: int) -> Kernel:
    """u's first half comes from GM; ub_to_ub moves all of u (half of it never
    written) to w; a vector op then reads one half of w."""
    n = 2 * LANES
    ub = mem([n], "f16", "ub")
    k = Kernel([("a", gm([n])), ("c", gm([n]))])
    k.alloc("u", ub)
    k.alloc("w", ub)
    k.alloc("x", ub)
    half_blocks = LANES * 2 // BLOCK
    k.copy("gm_to_ub", "a", "u", 1, half_blocks)
    k.sync("MTE2", "V")
    k.copy("ub_to_ub", "u", "w", 1, 2 * half_blocks, tag="move")
    k.barrier("V")
    view = f'memref<{LANES}xf16, strided<[1], offset: {read_offset}>, "ub">'
    k.raw(f"%h = memref.subview %w[{read_offset}] [{LANES}] [1] : {ub} to {view}")
    k.types["h"] = view
    k.vector("vadds", "x", "h", repeat=1, mask=LANES, scalar=1.0, tag="vadds")
    k.sync("V", "MTE3")
    k.copy("ub_to_gm", "x", "c", 1, half_blocks)
    return k


def test_movement_carries_initialised_bytes():
    a = f16(2 * LANES)
    res = simulate(half_initialised_then_moved(0).parse(), [a, np.zeros_like(a)])
    np.testing.assert_array_equal(res.outputs[1][:LANES], a[:LANES] + np.float16(1))


def test_movement_carries_uninitialised_bytes_to_the_computing_op():
    k = half_initialised_then_moved(LANES)
    a = f16(2 * LANES)
    expect_error(k, [a, np.zeros_like(a)], "uninitialized", "vadds",
                 f"'cce.vadds' reads ub bytes [{3 * LANES * 2}, {4 * LANES * 2}) that hold "
                 f"uninitialised data ({LANES * 2} of them), moved there by 'cce.copy_ub_to_ub' on "
                 f"pipe V at {loc(k, 'move')} from bytes that were never written")


def vnchwconv_of_one_row(mask: int) -> Kernel:
    """Only source row 0 of a 16x16 f16 tile is initialised: after the
    transpose every destination row has exactly its element 0 initialised."""
    rows = T.fractal
    k = Kernel([("a", gm([rows])), ("c", gm([rows, rows]))])
    k.alloc("s", mem([rows, rows], "f16", "ub"))
    k.alloc("d", mem([rows, rows], "f16", "ub"))
    k.alloc("x", mem([rows, rows], "f16", "ub"))
    k.copy("gm_to_ub", "a", "s", 1, rows * 2 // BLOCK)
    k.sync("MTE2", "V")
    k.op("vnchwconv", "d", "s", repeat=1, src_rep_stride=0, dst_rep_stride=0,
         src_offsets=list(range(rows)), dst_offsets=list(range(rows)), tag="vnchwconv")
    k.barrier("V")
    # One repeat per destination row (repeat stride one block), `mask` lanes each.
    k.vector("vadds", "x", "d", repeat=rows, mask=mask, rep=1, scalar=0.0, tag="vadds")
    return k


def test_vnchwconv_permutes_the_initialised_state():
    rows = T.fractal
    res = simulate(vnchwconv_of_one_row(1).parse(), [f16(rows), np.zeros((rows, rows), np.float16)])
    assert res.hazards == []
    k = vnchwconv_of_one_row(2)
    expect_error(k, [f16(rows), np.zeros((rows, rows), np.float16)], "uninitialized", "vadds",
                 f"'cce.vadds' reads ub bytes [{rows * rows * 2 + 2}, {2 * rows * rows * 2 - BLOCK + 4}) "
                 f"that hold uninitialised data ({rows * 2} of them), moved there by "
                 f"'cce.vnchwconv' on pipe V at {loc(k, 'vnchwconv')} from bytes that were never "
                 f"written")


def test_garbage_moved_over_a_clean_read_is_seen_again():
    """A read once found initialised is cached; moving uninitialised bytes
    over it must invalidate that: the second iteration's vadds fails."""
    n = LANES
    ub = mem([n], "f16", "ub")
    k = Kernel([("a", gm([n]))])
    for name in ("w", "x", "g"):
        k.alloc(name, ub)
    k.copy("gm_to_ub", "a", "w", 1, n * 2 // BLOCK)
    k.sync("MTE2", "V")
    k.const("c0", 0)
    k.const("c1", 1)
    k.const("c2", 2)
    k.raw("scf.for %i = %c0 to %c2 step %c1 {")
    k.indent += 1
    k.barrier("V")
    k.vector("vadds", "x", "w", repeat=1, mask=LANES, scalar=1.0, tag="vadds")
    k.copy("ub_to_ub", "g", "w", 1, n * 2 // BLOCK, tag="move")  # g was never written
    k.indent -= 1
    k.raw("}")
    expect_error(k, [f16(n)], "uninitialized", "vadds",
                 f"'cce.vadds' reads ub bytes [0, {n * 2}) that hold uninitialised data "
                 f"({n * 2} of them), moved there by 'cce.copy_ub_to_ub' on pipe V at "
                 f"{loc(k, 'move')} from bytes that were never written")


def test_non_strict_run_reports_and_continues():
    res = simulate(tiny_add(mask=N + 1).parse(), [f16(N), f16(N), np.zeros(N, np.float16)],
                   strict=False)
    assert [h["kind"] for h in res.hazards] == ["uninitialized"]
