"""Functional semantics of the simulated control flow (scf, arith, views),
pipe ordering (serialized runs, double buffering with flags) and copies
(bursts and gaps), compared with numpy."""

from __future__ import annotations

import numpy as np
import pytest

from npu.simulator import simulate
from npu.target import get_target

from sim_kernels import Kernel, f16, gm, mem

T = get_target()
BLOCK = T.vector_block_bytes


def test_scf_control_flow_and_views():
    """scf.for with iter_args, scf.if, arith, subview/collapse/expand/reinterpret_cast."""
    n = 1024
    k = Kernel([("x", gm([8, 128])), ("y", gm([8, 128]))])
    k.alloc("u", mem([8, 128], "f16", "ub"))
    k.alloc("v", mem([8, 128], "f16", "ub"))
    k.copy("gm_to_ub", "x", "u", 1, n * 2 // BLOCK)
    k.sync("MTE2", "V")
    for c in (0, 1, 2, 8):
        k.const(f"c{c}", c)
    k.raw("%r = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %c0) -> (index) {")
    k.indent += 1
    k.raw("%odd = arith.remui %i, %c2 : index")
    k.raw("%isodd = arith.cmpi ne, %odd, %c0 : index")
    k.raw('%row = memref.subview %u[%i, 0] [1, 128] [1, 1] : memref<8x128xf16, "ub"> to '
          'memref<128xf16, strided<[1], offset: ?>, "ub">')
    k.raw('%orow = memref.subview %v[%i, 0] [1, 128] [1, 1] : memref<8x128xf16, "ub"> to '
          'memref<1x128xf16, strided<[128, 1], offset: ?>, "ub">')
    k.raw('%oflat = memref.collapse_shape %orow [[0, 1]] : memref<1x128xf16, strided<[128, 1], offset: ?>, "ub"> '
          'into memref<128xf16, strided<[1], offset: ?>, "ub">')
    k.types["row"] = 'memref<128xf16, strided<[1], offset: ?>, "ub">'
    k.types["oflat"] = 'memref<128xf16, strided<[1], offset: ?>, "ub">'
    k.raw("scf.if %isodd {")
    k.indent += 1
    k.vector("vmuls", "oflat", "row", repeat=1, mask=128, scalar=2.0)
    k.indent -= 1
    k.raw("} else {")
    k.indent += 1
    k.vector("vadds", "oflat", "row", repeat=1, mask=128, scalar=1.0)
    k.indent -= 1
    k.raw("}")
    k.raw("%next = arith.addi %acc, %i : index")
    k.raw("scf.yield %next : index")
    k.indent -= 1
    k.raw("}")
    # r = 0+1+...+7 = 28: use it as an offset (in elements) via reinterpret_cast; writes
    # element 28..28+15 of row 0 of y with -1 (vdup), after the loop.
    k.raw('%tail = memref.reinterpret_cast %v to offset: [%r], sizes: [16], strides: [1] : '
          'memref<8x128xf16, "ub"> to memref<16xf16, strided<[1], offset: ?>, "ub">')
    k.types["tail"] = 'memref<16xf16, strided<[1], offset: ?>, "ub">'
    k.barrier("V")
    # 28 elements = 56 bytes is not 32-byte aligned: shift by 4 elements to 32 (64 bytes).
    k.raw("%c4 = arith.constant 4 : index")
    k.raw('%tail2 = memref.subview %tail[%c4] [8] [1] : memref<16xf16, strided<[1], offset: ?>, "ub"> to '
          'memref<8xf16, strided<[1], offset: ?>, "ub">')
    k.types["tail2"] = 'memref<8xf16, strided<[1], offset: ?>, "ub">'
    k.raw('%e = memref.expand_shape %tail2 [[0, 1]] output_shape [2, 4] : memref<8xf16, strided<[1], offset: ?>, '
          '"ub"> into memref<2x4xf16, strided<[4, 1], offset: ?>, "ub">')
    k.types["e"] = 'memref<2x4xf16, strided<[4, 1], offset: ?>, "ub">'
    k.vector("vdup", "e", repeat=1, mask=16, scalar=-1.0)
    k.sync("V", "MTE3")
    k.copy("ub_to_gm", "v", "y", 1, n * 2 // BLOCK)
    x = f16(8, 128)
    res = simulate(k.parse(), [x, np.zeros_like(x)])
    expect = np.where((np.arange(8) % 2 == 1)[:, None], x * np.float16(2), x + np.float16(1))
    expect.reshape(-1)[32:48] = -1
    np.testing.assert_array_equal(res.outputs[1], expect)


def test_serialize_runs_code_without_sync():
    k = Kernel([("a", gm([256])), ("b", gm([256]))])
    k.alloc("u", mem([256], "f16", "ub"))
    k.copy("gm_to_ub", "a", "u", 1, 16)
    k.vector("vadds", "u", "u", repeat=2, mask=128, scalar=3.0)
    k.vector("vmuls", "u", "u", repeat=2, mask=128, scalar=2.0)
    k.copy("ub_to_gm", "u", "b", 1, 16)
    a = f16(256)
    res = simulate(k.parse(), [a, np.zeros_like(a)], serialize=True)
    np.testing.assert_array_equal(res.outputs[1], (a + np.float16(3)) * np.float16(2))
    costs = [instr.occupancy + instr.latency for instr, _, _ in res.trace_entries]
    # Serialized: instruction i starts when i-1 ends (dispatches are long done).
    assert res.cycles == T.scalar_issue_cycles + sum(costs)


def double_buffered_kernel(tiles: int, back_flags: bool = True) -> Kernel:
    """Ping-pong over two UB buffers: MTE2 loads tile i+1 while V scales tile i
    and MTE3 stores tile i-1. Events 0/1 name the buffer."""
    tile = 128
    n = tiles * tile
    k = Kernel([("x", gm([n])), ("y", gm([n]))])
    k.alloc("buf", mem([2, tile], "f16", "ub"))
    for c in (0, 2, tile):
        k.const(f"c{c}", c)
    k.const("cn", tiles)
    sub_t = f'memref<{tile}xf16, strided<[1], offset: ?>, "gm">'
    ub_t = f'memref<{tile}xf16, strided<[1], offset: {{}}>, "ub">'
    for b in (0, 1):
        k.raw(f'%u{b} = memref.subview %buf[{b}, 0] [1, {tile}] [1, 1] : memref<2x{tile}xf16, "ub"> to '
              + ub_t.format(b * tile))
        k.types[f"u{b}"] = ub_t.format(b * tile)
        if back_flags:
            k.set_flag("MTE3", "MTE2", b)
    k.raw("scf.for %i = %c0 to %cn step %c2 {")
    k.indent += 1
    for b in (0, 1):
        if b:
            k.raw("%one = arith.constant 1 : index")
        k.raw(f"%t{b} = arith.addi %i, {'%one' if b else '%c0'} : index")
        k.raw(f"%o{b} = arith.muli %t{b}, %c{tile} : index")
        for name, arg in (("xs", "x"), ("ys", "y")):
            k.raw(f'%{name}{b} = memref.subview %{arg}[%o{b}] [{tile}] [1] : memref<{n}xf16, "gm"> to {sub_t}')
            k.types[f"{name}{b}"] = sub_t
        if back_flags:
            k.wait_flag("MTE3", "MTE2", b)
        k.copy("gm_to_ub", f"xs{b}", f"u{b}", 1, tile * 2 // BLOCK, tag=f"load{b}")
        k.sync("MTE2", "V", b)
        k.vector("vmuls", f"u{b}", f"u{b}", repeat=1, mask=tile, scalar=3.0, tag=f"vmuls{b}")
        k.sync("V", "MTE3", b)
        k.copy("ub_to_gm", f"u{b}", f"ys{b}", 1, tile * 2 // BLOCK, tag=f"store{b}")
        if back_flags:
            k.set_flag("MTE3", "MTE2", b)
    k.indent -= 1
    k.raw("}")
    if back_flags:
        for b in (0, 1):
            k.wait_flag("MTE3", "MTE2", b)
    return k


def test_double_buffering_overlaps_and_is_race_free():
    tiles = 8
    x = f16(tiles * 128)
    res = simulate(double_buffered_kernel(tiles).parse(), [x, np.zeros_like(x)])
    np.testing.assert_array_equal(res.outputs[1], x * np.float16(3))
    assert res.hazards == [] and res.report["warnings"] == []
    serial = simulate(double_buffered_kernel(tiles).parse(), [x, np.zeros_like(x)], serialize=True)
    np.testing.assert_array_equal(serial.outputs[1], res.outputs[1])
    # MTE2 loads and MTE3 stores of different tiles overlap.
    assert res.cycles < serial.cycles
    load = T.path("gm_to_ub")
    store = T.path("ub_to_gm")
    per_tile_store = store.latency + -(-256 // store.bytes_per_cycle)
    per_tile_load = load.latency + -(-256 // load.bytes_per_cycle)
    assert res.cycles < tiles * (per_tile_load + per_tile_store)


def test_double_buffering_without_buffer_free_flags_races():
    from npu.simulator import SimulationError
    k = double_buffered_kernel(8, back_flags=False)
    with pytest.raises(SimulationError) as info:
        simulate(k.parse(), [f16(1024), f16(1024)])
    e = info.value
    assert e.kind == "race"
    # The reload of buffer 0 (next tile) overwrites bytes the previous tile's vmuls wrote
    # (and its store reads): nothing orders MTE2 after V and MTE3 for that buffer.
    assert e.where.split(":")[-2] == str(k.tags["load0"])
    assert e.message == ("'cce.copy_gm_to_ub' on pipe MTE2 overwrites ub bytes [0, 256) written by "
                         f"'cce.vmuls' on pipe V at -:{k.tags['vmuls0']}:5; no set_flag/"
                         "wait_flag chain or barrier orders them")


def test_copies_honour_bursts_and_gaps():
    """GM -> UB with a source gap, UB -> UB (V) with a destination gap, UB -> L1 -> ...
    checked against the README's burst formula written out in numpy."""
    n = 1024  # fp16 elements = 64 blocks
    k = Kernel([("x", gm([n])), ("y", gm([n]))])
    k.alloc("u", mem([n], "f16", "ub"))
    k.alloc("w", mem([n], "f16", "ub"))
    k.alloc("l1", mem([n], "f16", "l1"))
    k.copy("gm_to_ub", "x", "u", 4, 3, src_gap=5)          # 4 bursts of 3 blocks, src stride 8
    k.sync("MTE2", "V")
    k.vector("vdup", "w", repeat=8, mask=128, scalar=0.0)
    k.barrier("V")
    k.copy("ub_to_ub", "u", "w", 4, 3, dst_gap=1)          # dst stride 4 blocks
    k.sync("V", "MTE3")
    k.copy("ub_to_l1", "w", "l1", 2, 8, src_gap=0, dst_gap=8)
    k.copy("ub_to_gm", "w", "y", 1, 64)
    x = f16(n)
    res = simulate(k.parse(), [x, np.zeros_like(x)])

    def blocks(arr):
        return arr.reshape(-1, 16)  # one 32-byte block = 16 fp16
    u = np.zeros((64, 16), np.float16)
    for b in range(4):
        u[b * 3:b * 3 + 3] = blocks(x)[b * 8:b * 8 + 3]
    w = np.zeros((64, 16), np.float16)
    for b in range(4):
        w[b * 4:b * 4 + 3] = u[b * 3:b * 3 + 3]
    np.testing.assert_array_equal(res.outputs[1], w.ravel())
    assert res.report["bytes"]["ub_to_l1"] == 2 * 8 * BLOCK
    assert res.report["bytes"]["ub_to_ub"] == 4 * 3 * BLOCK
