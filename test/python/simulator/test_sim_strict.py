"""Every fault is an error naming the instruction and its location, never a
silent wrong answer. One test per check, with the exact error expected."""

from __future__ import annotations

import numpy as np
import pytest

from npu.simulator import SimulationError, simulate
from npu.target import get_target

from sim_kernels import Kernel, f16, gm, mem

T = get_target()
UB = mem([256], "f16", "ub")


def expect_error(k: Kernel, inputs, kind: str, tag: str, message: str, **kw) -> SimulationError:
    # Every fault is found the same way in a timing-only run.
    for numerics in (False, True):
        with pytest.raises(SimulationError) as info:
            simulate(k.parse(), inputs, numerics=numerics, **kw)
        e = info.value
        line = k.tags[tag]
        assert (e.kind, e.message) == (kind, message)
        assert e.where.split(":")[-2] == str(line), e.where
        assert str(e) == f"{e.where}: error: {kind}: {message}"
    return e


def two_gm() -> Kernel:
    return Kernel([("a", gm([256])), ("b", gm([256]))])


def test_out_of_bounds():
    k = two_gm()
    k.alloc("u", UB)
    # 2 bursts of 8 blocks with a gap of 8 blocks: the second ends at byte 768 > 512.
    k.copy("gm_to_ub", "a", "u", 2, 8, dst_gap=8, tag="copy")
    expect_error(k, [f16(256), f16(256)], "bounds", "copy",
                 "'cce.copy_gm_to_ub' writes ub bytes [0, 768) outside its operand #1's allocation "
                 "[0, 512) (memref<256xf16, \"ub\"> @ -:2:8)")


def test_capacity():
    n = T.capacity("ub") // 2 + 16
    k = two_gm()
    k.alloc("u", UB)
    k.emit(f'%big = memref.alloc() : memref<{n}xf16, "ub">', tag="alloc")
    expect_error(k, [f16(256), f16(256)], "capacity", "alloc",
                 f"'memref.alloc' of memref<{n}xf16, \"ub\"> ({2 * n} bytes at offset 512) overflows "
                 f"ub: bytes [512, {512 + 2 * n}) past its capacity of {T.capacity('ub')} bytes")


def test_planned_offset_not_on_granule():
    k = two_gm()
    k.emit('%u = memref.alloc() {npu.offset = 16 : i64} : memref<256xf16, "ub">', tag="alloc")
    expect_error(k, [f16(256), f16(256)], "alignment", "alloc",
                 "'memref.alloc' of memref<256xf16, \"ub\"> at npu.offset 16 is not aligned to the "
                 f"{T.granule('ub')}-byte granule of ub")


def test_operand_not_on_granule():
    k = two_gm()
    k.alloc("u", UB)
    k.copy("gm_to_ub", "a", "u", 1, 16)
    k.sync("MTE2", "V")
    k.raw('%s = memref.subview %u[8] [128] [1] : memref<256xf16, "ub"> to '
          'memref<128xf16, strided<[1], offset: 8>, "ub">')
    k.types["s"] = 'memref<128xf16, strided<[1], offset: 8>, "ub">'
    k.vector("vadds", "s", "s", repeat=1, mask=128, scalar=1.0, tag="vadds")
    expect_error(k, [f16(256), f16(256)], "alignment", "vadds",
                 "'cce.vadds' operand #1 (memref<128xf16, strided<[1], offset: 8>, \"ub\">) is at ub "
                 f"byte 16, not aligned to {T.granule('ub')} bytes")


def test_l0c_burst_granule():
    k = Kernel([("c", gm([256], "f32"))])
    k.alloc("l0c", mem([256], "f32", "l0c"))
    k.alloc("u", mem([256], "f32", "ub"))
    k.copy("l0c_to_ub", "l0c", "u", 2, 16, src_gap=1, tag="copy")
    with pytest.raises(SimulationError) as info:
        simulate(k.parse(), [np.zeros(256, np.float32)])
    # The dialect verifier accepts burst_len 16 (512 B); the gap breaks the granule.
    assert info.value.kind == "alignment"
    assert info.value.message == (f"'cce.copy_l0c_to_ub' puts bursts 544 bytes apart in l0c, not a "
                                  f"multiple of its {T.granule('l0c')}-byte granule")


def test_uninitialised_read():
    k = two_gm()
    k.alloc("u", UB)
    k.alloc("w", UB)
    k.copy("gm_to_ub", "a", "u", 1, 8)  # only the first half of u is written
    k.sync("MTE2", "V")
    k.vector("vadds", "w", "u", repeat=2, mask=128, scalar=1.0, tag="vadds")
    expect_error(k, [f16(256), f16(256)], "uninitialized", "vadds",
                 "'cce.vadds' reads ub bytes [256, 512) that were never written (256 of them "
                 "uninitialised)")


def test_wait_without_set():
    k = two_gm()
    k.alloc("u", UB)
    k.copy("gm_to_ub", "a", "u", 1, 16)
    k.set_flag("MTE2", "V", 1)
    k.wait_flag("MTE2", "V", 1)
    k.wait_flag("MTE2", "V", 1, tag="wait")
    expect_error(k, [f16(256), f16(256)], "flag", "wait",
                 "'cce.wait_flag' (MTE2 -> V, event 1) has no matching set_flag: this is wait #2 on "
                 "that flag but the program sets it 1 time")


def test_deadlock():
    """V waits for MTE3, which waits for V: each set sits behind the other pipe's wait."""
    k = two_gm()
    k.wait_flag("MTE3", "V", 0, tag="wait_v")
    k.set_flag("V", "MTE3", 0)
    k.wait_flag("V", "MTE3", 0, tag="wait_mte3")
    k.set_flag("MTE3", "V", 0)
    e = expect_error(k, [f16(256), f16(256)], "deadlock", "wait_v",
                     f"every pipe with work left is blocked: V waits for flag MTE3 -> V, event 0 at "
                     f"-:{k.tags['wait_v']}:3; MTE3 waits for flag V -> MTE3, event 0 at "
                     f"-:{k.tags['wait_mte3']}:3")
    assert "deadlock" in str(e)


def race_kernel(sync: bool) -> Kernel:
    """GM -> UB on MTE2, then vmuls on V reading it: correct only with the flag."""
    k = two_gm()
    k.alloc("u", UB)
    k.copy("gm_to_ub", "a", "u", 1, 16, tag="copy")
    if sync:
        k.sync("MTE2", "V")
    k.vector("vmuls", "u", "u", repeat=2, mask=128, scalar=2.0, tag="vmuls")
    k.sync("V", "MTE3")
    k.copy("ub_to_gm", "u", "b", 1, 16)
    return k


def test_two_pipe_race_that_passes_numerically():
    a = f16(256)
    # Without strictness the numbers come out right in this run...
    res = simulate(race_kernel(False).parse(), [a, f16(256)], strict=False)
    np.testing.assert_array_equal(res.outputs[1], a * np.float16(2))
    assert [h["kind"] for h in res.hazards] == ["race"]
    assert res.report["hazards"] == res.hazards
    # ... but the program is wrong, and strict mode says so.
    k = race_kernel(False)
    expect_error(k, [a, f16(256)], "race", "vmuls",
                 "'cce.vmuls' on pipe V reads ub bytes [0, 512) written by 'cce.copy_gm_to_ub' on "
                 f"pipe MTE2 at -:{k.tags['copy']}:3; no set_flag/wait_flag chain or barrier orders them")
    # With the flag the same program is clean.
    ok = simulate(race_kernel(True).parse(), [a, f16(256)])
    np.testing.assert_array_equal(ok.outputs[1], a * np.float16(2))
    assert ok.hazards == []


def test_write_after_read_race():
    """MTE2 later overwrites bytes V read, with no flag back from V: in this
    run the reload lands after the read, but nothing orders them."""
    k = two_gm()
    k.alloc("u", UB)
    k.alloc("w", UB)
    k.alloc("x", UB)
    k.copy("gm_to_ub", "a", "u", 1, 16)
    k.sync("MTE2", "V")
    k.copy("gm_to_ub", "b", "x", 1, 16)  # keeps MTE2 busy past the vadds
    k.vector("vadds", "w", "u", repeat=2, mask=128, scalar=1.0, tag="vadds")
    k.copy("gm_to_ub", "b", "u", 1, 16, tag="reload")
    expect_error(k, [f16(256), f16(256)], "race", "reload",
                 "'cce.copy_gm_to_ub' on pipe MTE2 overwrites ub bytes [0, 512) read by 'cce.vadds' "
                 f"on pipe V at -:{k.tags['vadds']}:3; no set_flag/wait_flag chain or barrier orders them")


def v_after_v(barrier: bool) -> Kernel:
    k = two_gm()
    k.alloc("u", UB)
    k.alloc("w", UB)
    k.copy("gm_to_ub", "a", "u", 1, 16)
    k.sync("MTE2", "V")
    k.vector("vadds", "w", "u", repeat=2, mask=128, scalar=1.0, tag="first")
    if barrier:
        k.barrier("V")
    k.vector("vmuls", "u", "w", repeat=2, mask=128, scalar=3.0, tag="second")
    k.sync("V", "MTE3")
    k.copy("ub_to_gm", "u", "b", 1, 16)
    return k


def test_vector_read_after_vector_write_needs_barrier():
    a = f16(256)
    k = v_after_v(False)
    expect_error(k, [a, f16(256)], "race", "second",
                 "'cce.vmuls' on pipe V reads ub bytes [512, 1024) written by 'cce.vadds' on pipe V at "
                 f"-:{k.tags['first']}:3; no pipe_barrier(V) between them (the vector pipeline does "
                 "not order them)")
    res = simulate(v_after_v(True).parse(), [a, f16(256)])
    np.testing.assert_array_equal(res.outputs[1], (a + np.float16(1)) * np.float16(3))


def test_race_on_disjoint_halves_is_not_reported():
    """MTE2 fills one half while V works on the other: no common byte, no race."""
    k = two_gm()
    k.alloc("u", UB)
    k.raw('%lo = memref.subview %u[0] [128] [1] : memref<256xf16, "ub"> to memref<128xf16, "ub">')
    k.raw('%hi = memref.subview %u[128] [128] [1] : memref<256xf16, "ub"> to '
          'memref<128xf16, strided<[1], offset: 128>, "ub">')
    k.types["lo"] = 'memref<128xf16, "ub">'
    k.types["hi"] = 'memref<128xf16, strided<[1], offset: 128>, "ub">'
    k.copy("gm_to_ub", "a", "lo", 1, 8)
    k.sync("MTE2", "V")
    k.copy("gm_to_ub", "a", "hi", 1, 8)  # unordered with the vmuls below, but disjoint
    k.vector("vmuls", "lo", "lo", repeat=1, mask=128, scalar=2.0)
    k.sync("MTE2", "MTE3")
    k.sync("V", "MTE3")
    k.copy("ub_to_gm", "u", "b", 1, 16)
    a = f16(256)
    res = simulate(k.parse(), [a, f16(256)])
    np.testing.assert_array_equal(res.outputs[1], np.concatenate([a[:128] * np.float16(2), a[:128]]))


def test_unsupported_op_is_an_error():
    k = two_gm()
    k.raw('%x = arith.constant 1.0 : f16', tag="c")
    k.raw('%y = arith.negf %x : f16', tag="neg")
    with pytest.raises(SimulationError) as info:
        simulate(k.parse(), [f16(256), f16(256)])
    assert info.value.kind == "unsupported"
    assert info.value.message == "the simulator cannot execute 'arith.negf'"
    assert info.value.where.endswith(f":{k.tags['neg']}:8")


def test_wrong_inputs():
    k = two_gm()
    with pytest.raises(SimulationError) as info:
        simulate(k.parse(), [f16(256)])
    assert info.value.message == "'kernel' takes 2 memref arguments, got 1 input arrays"
    with pytest.raises(SimulationError) as info:
        simulate(k.parse(), [f16(256), np.zeros(256, np.float32)])
    assert info.value.message == "input #1 is float32[256]; argument #1 needs float16[256]"


def test_input_of_a_constant_argument_must_be_its_data():
    # The compiler may rely on an npu.constant's values (a bias read once for
    # all rows): running the program on other data would be a different program.
    k = Kernel([("a", gm([256])),
                ("w", gm([256]) + " {npu.constant = dense<1.5> : tensor<256xf16>}")])
    weights = np.full(256, 1.5, np.float16)
    simulate(k.parse(), [f16(256), weights])
    weights[7] = 2.0
    with pytest.raises(SimulationError) as info:
        simulate(k.parse(), [f16(256), weights])
    assert info.value.message == ("input #1 differs from the data of argument #1, an npu.constant "
                                  "the program was compiled for")


def vdup_then_store(between) -> Kernel:
    k = two_gm()
    k.alloc("u", UB)
    k.vector("vdup", "u", repeat=2, mask=128, scalar=7.0, tag="vdup")
    between(k)
    k.copy("ub_to_gm", "u", "b", 1, 16, tag="store")
    return k


@pytest.mark.parametrize("how", ["barrier_all", "scalar_waits"])
def test_scalar_unit_orders_pipes(how):
    """pipe_barrier(ALL), or a flag the scalar unit waits for, orders V before MTE3."""
    def between(k: Kernel) -> None:
        if how == "barrier_all":
            k.barrier("ALL")
        else:
            k.sync("V", "S")
    k = vdup_then_store(between)
    res = simulate(k.parse(), [f16(256), f16(256)])
    assert np.all(res.outputs[1] == 7)
    entries = [instr.name for instr, _, _ in res.trace_entries]
    vdup, store = entries.index("cce.vdup"), entries.index("cce.copy_ub_to_gm")
    tl = res.timeline
    gap = T.flag_latency if how == "scalar_waits" else 0
    # The store is dispatched only after the vector op finished (+ the flag's latency).
    assert tl.start[store] >= tl.end[vdup] + gap
    assert tl.start[store] == tl.end[vdup] + gap + T.scalar_issue_cycles


def test_without_scalar_ordering_it_is_a_race():
    k = vdup_then_store(lambda k: None)
    expect_error(k, [f16(256), f16(256)], "race", "store",
                 "'cce.copy_ub_to_gm' on pipe MTE3 reads ub bytes [0, 512) written by 'cce.vdup' on "
                 f"pipe V at -:{k.tags['vdup']}:3; no set_flag/wait_flag chain or barrier orders them")


def test_flag_from_scalar_unit():
    """set_flag(S -> MTE2) is a valid (if trivial) order; counts are per event id."""
    k = two_gm()
    k.alloc("u", UB)
    k.set_flag("S", "MTE2", 5)
    k.set_flag("S", "MTE2", 5)
    k.wait_flag("S", "MTE2", 5)
    k.copy("gm_to_ub", "a", "u", 1, 16)
    k.wait_flag("S", "MTE2", 5)
    res = simulate(k.parse(), [f16(256), f16(256)])
    assert res.report["warnings"] == []
    k2 = two_gm()
    k2.set_flag("S", "MTE2", 5, tag="set")
    res = simulate(k2.parse(), [f16(256), f16(256)])
    assert res.report["warnings"][0]["message"] == "'cce.set_flag' (S -> MTE2, event 5) is never waited for"


def test_event_id_out_of_range():
    k = two_gm()
    k.set_flag("MTE2", "V", T.events_per_pipe_pair, tag="set")
    # The dialect verifier already rejects it when parsing.
    from npu.ir import ParseError
    with pytest.raises(ParseError):
        k.parse()


def test_deadlock_through_barrier_all():
    """V waits for a flag MTE2 only sets after pipe_barrier(ALL), which waits for V."""
    k = two_gm()
    k.wait_flag("MTE2", "V", 2, tag="wait")
    k.barrier("ALL", tag="barrier")
    k.set_flag("MTE2", "V", 2)
    expect_error(k, [f16(256), f16(256)], "deadlock", "wait",
                 f"every pipe with work left is blocked: V waits for flag MTE2 -> V, event 2 at "
                 f"-:{k.tags['wait']}:3; S waits at pipe_barrier(ALL) at -:{k.tags['barrier']}:3")


def test_a_constant_argument_is_never_written():
    # Its data is the program's (the read-only array a compiled model holds is
    # shared with the run, not copied): a write to it is a fault of the program.
    k = Kernel([("a", gm([256])),
                ("w", gm([256]) + " {npu.constant = dense<1.5> : tensor<256xf16>}")])
    k.alloc("u", UB)
    k.copy("gm_to_ub", "a", "u", 1, 16)
    k.emit('"cce.copy_ub_to_gm"(%u, %w) {n_burst = 1 : i64, burst_len = 16 : i64, '
           'src_gap = 0 : i64, dst_gap = 0 : i64} : '
           '(memref<256xf16, "ub">, memref<256xf16, "gm">) -> ()', tag="store")
    weights = np.full(256, 1.5, np.float16)
    weights.flags.writeable = False
    for w in (weights, weights.copy()):
        expect_error(k, [f16(256), w], "invalid", "store",
                     "'cce.copy_ub_to_gm' operand #1 writes argument #1, an "
                     "npu.constant (data compiled into the program)")
    assert (weights == 1.5).all()
    # Read only, it is the run's memory itself; a writable array is copied.
    k = Kernel([("a", gm([256])),
                ("w", gm([256]) + " {npu.constant = dense<1.5> : tensor<256xf16>}")])
    k.alloc("u", UB)
    k.emit('"cce.copy_gm_to_ub"(%w, %u) {n_burst = 1 : i64, burst_len = 16 : i64, '
           'src_gap = 0 : i64, dst_gap = 0 : i64} : '
           '(memref<256xf16, "gm">, memref<256xf16, "ub">) -> ()')
    k.copy("ub_to_gm", "u", "a", 1, 16)
    for w, shared in ((weights, True), (weights.copy(), False)):
        res = simulate(k.parse(), [f16(256), w], serialize=True)
        assert (res.outputs[0] == 1.5).all()
        assert np.shares_memory(res.outputs[1], w) == shared
