"""Subviews with one dynamic offset (`decode_views._subview_one`, the tile
of a loop): the source's part of the address is kept per source, and one
view object per distinct offset, so a source that changes while the
offsets repeat (a tile of a row of an outer loop) must get new views."""

from __future__ import annotations

import numpy as np

from npu.simulator import simulate
from npu.simulator.core import find_entry
from npu.simulator.program import Decoder
from npu.target import get_target

from sim_kernels import Kernel, f16, gm, mem

T = get_target()
ROW_T = 'memref<128xf16, strided<[1], offset: ?>, "ub">'
PIECE_T = 'memref<64xf16, strided<[1], offset: ?>, "ub">'


def _kernel() -> Kernel:
    """y = x + 1 on 4 rows, each row as two 64-element pieces: the inner
    subview's offsets repeat (0, 64) for every row."""
    k = Kernel([("x", gm([4, 128])), ("y", gm([4, 128]))])
    k.alloc("u", mem([4, 128], "f16", "ub"))
    k.alloc("v", mem([4, 128], "f16", "ub"))
    k.copy("gm_to_ub", "x", "u", 1, 4 * 128 * 2 // T.vector_block_bytes)
    k.sync("MTE2", "V")
    for c in (0, 1, 2, 4, 64):
        k.const(f"c{c}", c)
    k.raw("scf.for %j = %c0 to %c4 step %c1 {")
    k.indent += 1
    k.raw(f'%row = memref.subview %u[%j, 0] [1, 128] [1, 1] : memref<4x128xf16, "ub"> to {ROW_T}')
    k.raw(f'%orow = memref.subview %v[%j, 0] [1, 128] [1, 1] : memref<4x128xf16, "ub"> to {ROW_T}')
    k.raw("scf.for %i = %c0 to %c2 step %c1 {")
    k.indent += 1
    k.raw("%o = arith.muli %i, %c64 : index")
    k.raw(f"%piece = memref.subview %row[%o] [64] [1] : {ROW_T} to {PIECE_T}")
    k.raw(f"%opiece = memref.subview %orow[%o] [64] [1] : {ROW_T} to {PIECE_T}")
    k.types["piece"] = k.types["opiece"] = PIECE_T
    k.vector("vadds", "opiece", "piece", repeat=1, mask=64, scalar=1.0)
    k.indent -= 1
    k.raw("}")
    k.indent -= 1
    k.raw("}")
    k.sync("V", "MTE3")
    k.copy("ub_to_gm", "v", "y", 1, 4 * 128 * 2 // T.vector_block_bytes)
    return k


def test_tile_views_follow_their_source():
    x = f16(4, 128)
    res = simulate(_kernel().parse(), [x, np.zeros_like(x)])
    np.testing.assert_array_equal(res.outputs[1], x + np.float16(1))


def test_tile_views_addresses_and_identity():
    """Each dispatch's views sit at the row's offset plus the piece's, in
    every walk (the second starts with the last row's pieces remembered)."""
    module = _kernel().parse()  # kept alive while its function is decoded
    program = Decoder(T).decode(find_entry(module, None))
    program.walker = False  # the Python walk
    program.walk()
    first = [views for _, views, _ in program.trace if len(views) == 2 and views[0].shape == (64,)]
    assert [(d.offset, s.offset) for d, s in first] == \
        [(j * 128 + i * 64,) * 2 for j in range(4) for i in range(2)]
    assert all(d.strides == (1,) and type(d).__name__ == "View" for d, _ in first)
    program.trace.clear()
    program.walk()
    again = [views for _, views, _ in program.trace if len(views) == 2 and views[0].shape == (64,)]
    assert again == first
