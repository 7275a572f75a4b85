"""npu-lower-gather on the simulator vs numpy's take: rows of whole blocks
(direct DMA per row, chunks round two UB buffers), rows realigned in UB,
any axis, and the faults: an out-of-range id, ids the scalar unit cannot
read, the cycles of cce and hivm agreeing."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import simulate_levels
from npu.pipeline import PipelineError
from npu.simulator.errors import SimulationError
from npu.ir import parse_module
from npu.pipeline import run_pipeline
from npu.target import get_target
from vec_common import NP, compile_source, func, memref, run, shared_context


def program(table, ids, axis, elem):
    a = axis % len(table)
    out = list(table[:a]) + list(ids) + list(table[a + 1:])
    src = func("g", "ascend.gather", [memref(table, elem), memref(ids, "i32"), memref(out, elem)],
               f"axis = {axis} : i64")
    return src, out


def check(table, ids, axis, elem, lowering="npu-lower-gather", seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-100, 100, size=table).astype(NP[elem])
    size = table[axis % len(table)]
    idx = rng.integers(-size, size, size=ids).astype(np.int32)
    idx.flat[0] = size - 1
    src, out = program(table, ids, axis, elem)
    got = run(src, lowering, [x, idx, np.zeros(out, NP[elem])]).outputs[2]
    np.testing.assert_array_equal(got, np.take(x, np.where(idx < 0, idx + size, idx), axis=axis))


@pytest.mark.parametrize("table,ids,axis,elem,rows", [
    ((101, 48), (37,), 0, "f32", 5),        # two buffers, full chunks in a loop, a tail
    ((101, 48), (3, 4), 0, "f16", 0),
    ((4, 9, 16), (2, 3), 1, "f16", 4),      # outer rows: out row o * 6 + k
    ((5, 8), (6,), -2, "i32", 0),
    ((30, 20), (50,), 0, "f32", 8),         # realigned: chunks of 8 rows (whole blocks)
    ((40, 3), (40,), 0, "f16", 16),         # realigned, 16-row steps, a tail
    ((6, 40), (5,), 1, "f32", 0),           # rows of one element
])
def test_gather(table, ids, axis, elem, rows):
    check(table, ids, axis, elem, f"npu-lower-gather{{max-rows={rows}}}" if rows else "npu-lower-gather")


def test_out_of_range_id_stops_at_the_op():
    src, out = program((30, 16), (4,), 0, "f32")
    x = np.zeros((30, 16), np.float32)
    for bad in (30, -31):
        with pytest.raises(SimulationError, match=r"bounds: ascend.gather: an index is outside "
                                                  r"\[-30, 29\]"):
            run(src, "npu-lower-gather", [x, np.array([0, 1, bad, 2], np.int32),
                                          np.zeros(out, np.float32)])


def test_ids_computed_on_the_device_are_refused():
    src = """
func.func @g(%t: memref<30x16xf32, "gm">, %i: memref<8xi32, "gm">, %o: memref<8x16xf32, "gm">) {
  %j = memref.alloc() : memref<8xi32, "gm">
  "ascend.add"(%i, %i, %j) : (memref<8xi32, "gm">, memref<8xi32, "gm">, memref<8xi32, "gm">) -> ()
  "ascend.gather"(%t, %j, %o) {axis = 0 : i64} : (memref<30x16xf32, "gm">, memref<8xi32, "gm">, memref<8x16xf32, "gm">) -> ()
  return
}
"""
    with pytest.raises(PipelineError, match="indices are computed on the device \\(a GM temporary\\)"):
        compile_source(src, "npu-lower-elementwise,npu-lower-gather")


def test_scalar_load_of_bytes_an_instruction_writes():
    """cce level: a memref.load may read only kernel input bytes."""
    src = """
func.func @k(%a: memref<8xi32, "gm">) {
  %c0 = arith.constant 0 : index
  %ub = memref.alloc() : memref<8xi32, "ub">
  "cce.copy_gm_to_ub"(%a, %ub) {n_burst = 1 : i64, burst_len = 1 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<8xi32, "gm">, memref<8xi32, "ub">) -> ()
  "cce.copy_ub_to_gm"(%ub, %a) {n_burst = 1 : i64, burst_len = 1 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<8xi32, "ub">, memref<8xi32, "gm">) -> ()
  %v = memref.load %a[%c0] : memref<8xi32, "gm">
  %i = arith.index_cast %v : i32 to index
  %s = memref.subview %a[%i] [1] [1] : memref<8xi32, "gm"> to memref<1xi32, strided<[1], offset: ?>, "gm">
  return
}
"""
    module = parse_module(src, shared_context())
    run_pipeline(module, "npu-insert-sync", get_target())
    with pytest.raises(SimulationError, match="scalar loads may only read kernel inputs"):
        simulate_levels(module, [np.arange(8, dtype=np.int32)], strict=True)


def test_cce_and_hivm_take_the_same_cycles():
    src, out = program((101, 48), (40,), 0, "f32")
    module, serialize = compile_source(src, "npu-lower-gather{max-rows=8}")
    x = np.random.default_rng(1).standard_normal((101, 48)).astype(np.float32)
    idx = np.arange(-20, 20, dtype=np.int32)
    res = simulate_levels(module, [x, idx, np.zeros(out, np.float32)], force_hivm=True,
                          strict=True, serialize=serialize)
    np.testing.assert_array_equal(res.outputs[2], np.take(x, np.where(idx < 0, idx + 101, idx), 0))


@pytest.mark.parametrize("data,ids,axis,elem", [
    ((4, 6), (3, 5), 1, "f32"),
    ((4, 6), (7, 6), 0, "f16"),      # the axis longer than the data's
    ((2, 3, 5), (2, 2, 5), -2, "i32"),
])
def test_gather_elements(data, ids, axis, elem):
    rng = np.random.default_rng(3)
    x = rng.uniform(-100, 100, size=data).astype(NP[elem])
    size = data[axis % len(data)]
    idx = rng.integers(-size, size, size=ids).astype(np.int32)
    src = func("g", "ascend.gather_elements", [memref(data, elem), memref(ids, "i32"),
                                               memref(ids, elem)], f"axis = {axis} : i64")
    got = run(src, "npu-lower-gather", [x, idx, np.zeros(ids, NP[elem])]).outputs[2]
    where = list(np.indices(ids, sparse=True))
    where[axis % len(data)] = np.where(idx < 0, idx + size, idx)
    np.testing.assert_array_equal(got, x[tuple(where)])


def test_split_over_cores():
    """npu-split-cores gives each core a slice of the ids and their output
    rows (the table whole); 4 cores take under half the time of one."""
    src, out = program((1000, 256), (128,), 0, "f32")
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1000, 256)).astype(np.float32)
    idx = rng.integers(-1000, 1000, 128).astype(np.int32)
    want = np.take(x, np.where(idx < 0, idx + 1000, idx), 0)
    one = run(src, "npu-lower-gather", [x, idx, np.zeros(out, np.float32)])
    four = run(src, "npu-split-cores{cores=4},npu-lower-gather", [x, idx, np.zeros(out, np.float32)])
    np.testing.assert_array_equal(four.outputs[2], want)
    assert four.cycles * 2 < one.cycles


def test_table_computed_by_an_earlier_op():
    """The table is a GM temporary an earlier kernel writes: the row copies'
    data-dependent reads are taken as reading the whole table, so the sync
    orders them after its stores (the strict run checks for races)."""
    src = """
func.func @g(%t: memref<30x16xf32, "gm">, %i: memref<8xi32, "gm">, %o: memref<8x16xf32, "gm">) {
  %d = memref.alloc() : memref<30x16xf32, "gm">
  "ascend.add"(%t, %t, %d) : (memref<30x16xf32, "gm">, memref<30x16xf32, "gm">, memref<30x16xf32, "gm">) -> ()
  "ascend.gather"(%d, %i, %o) {axis = 0 : i64} : (memref<30x16xf32, "gm">, memref<8xi32, "gm">, memref<8x16xf32, "gm">) -> ()
  return
}
"""
    x = np.random.default_rng(2).standard_normal((30, 16)).astype(np.float32)
    idx = np.array([0, 29, -1, 3, 3, -30, 7, 12], np.int32)
    res = run(src, "npu-lower-elementwise,npu-lower-gather", [x, idx, np.zeros((8, 16), np.float32)])
    np.testing.assert_array_equal(res.outputs[2], np.take(2 * x, np.where(idx < 0, idx + 30, idx), 0))
    # Through npu-lower: the temporary is planned into the GM workspace (a
    # memref.view), the table's reads narrowed to the view's bytes.
    from helpers import compile_and_simulate

    got, want, _ = compile_and_simulate(src, "npu-lower", [x, idx, np.zeros((8, 16), np.float32)])
    np.testing.assert_array_equal(got[2], want[2])


def test_row_copies_read_the_whole_table_for_the_access_analysis():
    """A row's GM offset depends on a loaded id: the access analysis (what
    sync insertion, planning and double buffering use) takes the copy as
    reading the whole table, never a guessed row."""
    from npu.analysis.access import function_accesses
    from npu.ir import functions, walk

    src, _ = program((30, 16), (4,), 0, "f32")
    module = parse_module(src, shared_context())
    run_pipeline(module, "npu-lower-gather", get_target())
    func = functions(module)[0]
    _, accesses = function_accesses(func, get_target())
    loads = [a for a in accesses if a.op.name == "cce.copy_gm_to_ub"]
    assert loads and all(len(a.reads) == 1 for a in loads)
    whole = loads[0].reads[0]
    assert not whole.start.terms and whole.start.const == 0 and whole.length == 30 * 16 * 4
    assert len(list(walk(func, lambda o: o.name == "memref.load"))) == 1
