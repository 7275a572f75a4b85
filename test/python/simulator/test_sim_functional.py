"""Functional semantics of the simulated instructions, compared with numpy."""

from __future__ import annotations

import numpy as np
import pytest

from npu.simulator import simulate
from npu.target import get_target

from sim_kernels import Kernel, from_nz, gm, mem, nz

T = get_target()
RNG = np.random.default_rng(1234)
BLOCK = T.vector_block_bytes


def f16(*shape) -> np.ndarray:
    return RNG.uniform(-2, 2, shape).astype(np.float16)


def roundtrip_kernel(n: int, op: str = "vadd") -> Kernel:
    k = Kernel([("a", gm([n])), ("b", gm([n])), ("c", gm([n]))])
    ub = mem([n], "f16", "ub")
    for name in ("ua", "ub_", "uc"):
        k.alloc(name, ub)
    blocks = n * 2 // BLOCK
    k.copy("gm_to_ub", "a", "ua", 1, blocks)
    k.copy("gm_to_ub", "b", "ub_", 1, blocks)
    k.sync("MTE2", "V")
    k.vector(op, "uc", "ua", "ub_", repeat=n // T.lanes(2), mask=T.lanes(2))
    k.sync("V", "MTE3")
    k.copy("ub_to_gm", "uc", "c", 1, blocks)
    return k


@pytest.mark.parametrize("op,fn", [("vadd", np.add), ("vsub", np.subtract), ("vmul", np.multiply),
                                   ("vmax", np.maximum), ("vmin", np.minimum), ("vdiv", np.divide)])
def test_gm_ub_vector_gm_roundtrip(op, fn):
    n = 512
    a, b = f16(n), f16(n)
    if op == "vdiv":
        b = np.where(np.abs(b) < 0.1, np.float16(0.5), b)
    res = simulate(roundtrip_kernel(n, op).parse(), [a, b, np.zeros(n, np.float16)])
    np.testing.assert_array_equal(res.outputs[2], fn(a, b))
    np.testing.assert_array_equal(res.outputs[0], a)  # inputs untouched
    assert res.hazards == []


def test_vector_mask_and_strides():
    """Lanes follow addr + r*rep*32 + (e*s//32)*blk*32 + (e*s)%32; masked lanes untouched."""
    n = 2048
    k = Kernel([("x", gm([n])), ("y", gm([n]))])
    ub = mem([n], "f16", "ub")
    k.alloc("ux", ub)
    k.alloc("uy", ub)
    blocks = n * 2 // BLOCK
    k.copy("gm_to_ub", "x", "ux", 1, blocks)
    k.copy("gm_to_ub", "y", "uy", 1, blocks)
    k.sync("MTE2", "V")
    # dst = src0 + src1, src0 every other block, src1 repeat stride 4 (overlapping repeats read),
    # dst block stride 2, repeat stride 20; 3 repeats, 100 active lanes.
    k.vector("vadd", "uy", "ux", "ux", repeat=3, mask=100, dst_blk_stride=2, dst_rep_stride=20,
             src0_blk_stride=2, src0_rep_stride=16, src1_blk_stride=1, src1_rep_stride=4)
    k.sync("V", "MTE3")
    k.copy("ub_to_gm", "uy", "y", 1, blocks)
    x, y = f16(n), f16(n)
    res = simulate(k.parse(), [x, y])

    def lanes(blk, rep):
        out = []
        for r in range(3):
            for e in range(100):
                byte = r * rep * 32 + (e * 2 // 32) * blk * 32 + (e * 2) % 32
                out.append(byte // 2)
        return np.array(out)
    expect = y.copy()
    expect[lanes(2, 20)] = x[lanes(2, 16)] + x[lanes(1, 4)]
    np.testing.assert_array_equal(res.outputs[1], expect)


def test_unary_scalar_dup_and_reductions():
    n = 256
    k = Kernel([("x", gm([n])), ("y", gm([n])), ("r", gm([16]))])
    ub = mem([n], "f16", "ub")
    for name in ("ux", "u1", "u2", "u3"):
        k.alloc(name, ub)
    k.alloc("ur", mem([16], "f16", "ub"))
    k.copy("gm_to_ub", "x", "ux", 1, n * 2 // BLOCK)
    k.sync("MTE2", "V")
    k.vector("vexp", "u1", "ux", repeat=2, mask=128)
    k.vector("vmuls", "u2", "ux", repeat=2, mask=128, scalar=0.5)
    k.barrier("V")
    k.vector("vadd", "u3", "u1", "u2", repeat=2, mask=128)
    k.vector("vdup", "ur", repeat=1, mask=16, scalar=0.0)
    k.barrier("V")
    k.op("vcadd", "ur", "u3", repeat=2, mask=128, src_blk_stride=1, src_rep_stride=8, dst_rep_stride=1)
    k.op("vcmax", "ur", "ux", repeat=2, mask=128, src_blk_stride=1, src_rep_stride=8, dst_rep_stride=4,
         tag="vcmax")
    k.sync("V", "MTE3")
    k.copy("ub_to_gm", "u3", "y", 1, n * 2 // BLOCK)
    k.copy("ub_to_gm", "ur", "r", 1, 1)
    x = f16(n)
    res = simulate(k.parse(), [x, np.zeros(n, np.float16), np.zeros(16, np.float16)])
    e = np.exp(x.astype(np.float32)).astype(np.float16)
    h = x * np.float16(0.5)
    y = e + h
    np.testing.assert_array_equal(res.outputs[1], y)
    r = res.outputs[2]
    sums = y.astype(np.float32).reshape(2, 128).sum(1).astype(np.float16)
    # vcmax writes elements 0 and 4 after vcadd wrote 0 and 1 (V-after-V writes are ordered).
    assert r[1] == sums[1]
    assert r[0] == x[:128].max() and r[4] == x[128:].max()
    assert np.all(r[[2, 3] + list(range(5, 16))] == 0)


@pytest.mark.parametrize("mode", ["rint", "floor", "ceil", "trunc", "round", "none"])
def test_vconv_rounding(mode):
    n = 64
    k = Kernel([("x", gm([n], "f32")), ("h", gm([n], "f16")), ("i", gm([n], "i32"))])
    k.alloc("ux", mem([n], "f32", "ub"))
    k.alloc("uh", mem([n], "f16", "ub"))
    k.alloc("ui", mem([n], "i32", "ub"))
    k.copy("gm_to_ub", "x", "ux", 1, n * 4 // BLOCK)
    k.sync("MTE2", "V")
    k.vector("vconv", "uh", "ux", repeat=1, mask=64, dst_rep_stride=4, round_mode=mode)
    k.vector("vconv", "ui", "ux", repeat=1, mask=64, round_mode=mode)
    k.sync("V", "MTE3")
    k.copy("ub_to_gm", "uh", "h", 1, n * 2 // BLOCK)
    k.copy("ub_to_gm", "ui", "i", 1, n * 4 // BLOCK)
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49, -0.51, 3.7, -3.7] + [0.0] * 54, np.float32)
    x[10:20] = np.float32(1.0) + np.float32(2.0 ** -11)  # exactly between two fp16 values
    x[20:30] = -(np.float32(1.0) + np.float32(3 * 2.0 ** -12))
    x[30:] = RNG.uniform(-100, 100, 34).astype(np.float32)
    res = simulate(k.parse(), [x, np.zeros(n, np.float16), np.zeros(n, np.int32)])
    xd = x.astype(np.float64)
    ref_int = {"rint": np.rint, "none": np.rint, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
               "round": lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5)}[mode](xd)
    np.testing.assert_array_equal(res.outputs[2], ref_int.astype(np.int32))
    # fp16: the result is one of the two neighbours, chosen by the mode.
    h = res.outputs[1].astype(np.float64)
    near = x.astype(np.float16).astype(np.float64)
    if mode in ("rint", "none"):
        np.testing.assert_array_equal(h, near)
    elif mode == "floor":
        assert np.all(h <= xd) and np.all(np.nextafter(h.astype(np.float16), np.float16(np.inf)) > xd)
    elif mode == "ceil":
        assert np.all(h >= xd) and np.all(np.nextafter(h.astype(np.float16), np.float16(-np.inf)) < xd)
    elif mode == "trunc":
        assert np.all(np.abs(h) <= np.abs(xd))
    else:
        assert h[10] == 1.0 + 2.0 ** -10  # tie away from zero
        assert np.all(np.abs(h - xd) <= np.abs(near - xd))


def test_vnchwconv_transposes_16x16_tiles():
    """Two fp16 16x16 tiles per instruction (repeat 2), row j of S^T to dst row j."""
    k = Kernel([("x", gm([2, 16, 16])), ("y", gm([2, 16, 16]))])
    t = mem([2, 16, 16], "f16", "ub")
    k.alloc("ux", t)
    k.alloc("uy", t)
    k.copy("gm_to_ub", "x", "ux", 1, 32)
    k.sync("MTE2", "V")
    k.op("vnchwconv", "uy", "ux", repeat=2, src_rep_stride=16, dst_rep_stride=16,
         src_offsets=list(range(16)), dst_offsets=list(range(16)))
    k.sync("V", "MTE3")
    k.copy("ub_to_gm", "uy", "y", 1, 32)
    x = f16(2, 16, 16)
    res = simulate(k.parse(), [x, np.zeros_like(x)])
    np.testing.assert_array_equal(res.outputs[1], x.transpose(0, 2, 1))


def test_vnchwconv_fp32_halves():
    """fp32: row t of S^T goes in two 8-element halves to dst rows 2t and 2t+1."""
    k = Kernel([("x", gm([16, 8], "f32")), ("y", gm([16, 8], "f32"))])
    t = mem([16, 8], "f32", "ub")
    k.alloc("ux", t)
    k.alloc("uy", t)
    k.copy("gm_to_ub", "x", "ux", 1, 16)
    k.sync("MTE2", "V")
    # Scatter the output rows in reverse order to check dst_offsets are honoured.
    k.op("vnchwconv", "uy", "ux", repeat=1, src_rep_stride=0, dst_rep_stride=0,
         src_offsets=list(range(16)), dst_offsets=list(range(15, -1, -1)))
    k.sync("V", "MTE3")
    k.copy("ub_to_gm", "uy", "y", 1, 16)
    x = RNG.standard_normal((16, 8)).astype(np.float32)
    res = simulate(k.parse(), [x, np.zeros_like(x)])
    expect = np.zeros((16, 8), np.float32)
    for tt in range(8):
        expect[15 - 2 * tt] = x[0:8, tt]
        expect[15 - (2 * tt + 1)] = x[8:16, tt]
    np.testing.assert_array_equal(res.outputs[1], expect)


def mad_kernel(M: int, N: int, K: int, nt: int, dtype: str = "f16") -> Kernel:
    """C (MxK) = A (MxN) x B (NxK), A/B/C in Nz in GM; reduction tiled by nt.

    Per n-tile: GM -> L1 (Nz slices), L1 -> L0A (Zz, per row block, in an scf.for),
    L1 -> L0B (Zn: block reorder + transpose), mad accumulating in L0C; then
    L0C -> UB -> GM.
    """
    acc = "i32" if dtype == "i8" else "f32"
    e = 16
    ne = 32 if dtype == "i8" else 16
    M1, N1, K1, nt1 = M // e, N // ne, K // e, nt // ne
    esz = 1 if dtype == "i8" else 2
    frac = e * ne * esz
    a_t, b_t, c_t = gm([N1, M1, e, ne], dtype), gm([K1, N1, ne, e], dtype), gm([K1, M1, e, e], acc)
    if dtype == "i8":
        b_t = gm([K1, N1, e, ne], dtype)
    k = Kernel([("a", a_t), ("b", b_t), ("c", c_t)])
    k.alloc("l1a", mem([nt1 * M1 * frac // esz], dtype, "l1"))
    k.alloc("l1b", mem([K1 * nt1 * frac // esz], dtype, "l1"))
    k.alloc("l0a", mem([M1 * nt1 * frac // esz], dtype, "l0a"))
    k.alloc("l0b", mem([nt1 * K1 * frac // esz], dtype, "l0b"))
    k.alloc("l0c", mem([K1 * M1 * e * e], acc, "l0c"))
    k.alloc("uc", mem([K1 * M1 * e * e], acc, "ub"))
    k.const("c0", 0)
    k.const("c1", 1)
    k.const("cM1", M1)
    blk = frac // BLOCK
    for t in range(N // nt):
        # A Nz slice: column blocks t*nt1 .. +nt1 are contiguous in GM.
        a_off = t * nt1 * M1 * frac // esz
        k.raw(f"%a{t} = memref.subview %a[{t * nt1}, 0, 0, 0] [{nt1}, {M1}, {e}, {ne}] [1, 1, 1, 1] : "
              f"{a_t} to memref<{nt1}x{M1}x{e}x{ne}x{dtype}, strided<[{M1 * e * ne}, {e * ne}, {ne}, 1], "
              f"offset: {a_off}>, \"gm\">")
        k.types[f"a{t}"] = (f"memref<{nt1}x{M1}x{e}x{ne}x{dtype}, strided<[{M1 * e * ne}, {e * ne}, {ne}, 1], "
                            f"offset: {a_off}>, \"gm\">")
        if t:
            k.sync("MTE1", "MTE2", 1)
        k.copy("gm_to_l1", f"a{t}", "l1a", 1, nt1 * M1 * blk)
        # B Nz rows t*nt1.. of every column block l: K1 bursts of nt1 fractals.
        b_off = t * nt1 * frac // esz
        b_shape = f"{K1}x{N1}x{e if dtype == 'i8' else ne}x{ne if dtype == 'i8' else e}"
        k.raw(f"%b{t} = memref.subview %b[0, {t * nt1}, 0, 0] [{K1}, {nt1}, {e if dtype == 'i8' else ne}, "
              f"{ne if dtype == 'i8' else e}] [1, 1, 1, 1] : {b_t} to memref<{K1}x{nt1}x"
              f"{e if dtype == 'i8' else ne}x{ne if dtype == 'i8' else e}x{dtype}, strided<[{N1 * e * ne}, {e * ne}, "
              f"{ne if dtype == 'i8' else e}, 1], offset: {b_off}>, \"gm\">")
        k.types[f"b{t}"] = (f"memref<{K1}x{nt1}x{e if dtype == 'i8' else ne}x{ne if dtype == 'i8' else e}x{dtype}, "
                            f"strided<[{N1 * e * ne}, {e * ne}, {ne if dtype == 'i8' else e}, 1], "
                            f"offset: {b_off}>, \"gm\">")
        del b_shape
        k.copy("gm_to_l1", f"b{t}", "l1b", K1, nt1 * blk, src_gap=(N1 - nt1) * blk, dst_gap=0)
        k.sync("MTE2", "MTE1")
        if t:
            k.sync("M", "MTE1", 2)
        # L0A Zz: row block i gathers blocks (i, j) from Nz index j*M1 + i.
        k.raw("scf.for %i = %c0 to %cM1 step %c1 {")
        k.indent += 1
        src_t = mem([nt1 * M1 * frac // esz], dtype, "l1")
        k.raw(f"%so = arith.muli %i, %cs_{t} : index")
        k.raw(f"%do = arith.muli %i, %cd_{t} : index")
        k.raw(f"%sv = memref.subview %l1a[%so] [{frac // esz}] [1] : {src_t} to "
              f"memref<{frac // esz}x{dtype}, strided<[1], offset: ?>, \"l1\">")
        dst_t = mem([M1 * nt1 * frac // esz], dtype, "l0a")
        k.raw(f"%dv = memref.subview %l0a[%do] [{frac // esz}] [1] : {dst_t} to "
              f"memref<{frac // esz}x{dtype}, strided<[1], offset: ?>, \"l0a\">")
        k.types["sv"] = f"memref<{frac // esz}x{dtype}, strided<[1], offset: ?>, \"l1\">"
        k.types["dv"] = f"memref<{frac // esz}x{dtype}, strided<[1], offset: ?>, \"l0a\">"
        k.op("load_l1_to_l0a", "sv", "dv", repeat=nt1, src_stride=M1, dst_stride=1, transpose=False)
        k.indent -= 1
        k.raw("}")
        # Insert the constants the loop uses before it (text order matters only for dominance).
        loop_at = len(k.lines) - 7
        k.lines.insert(loop_at, f"  %cs_{t} = arith.constant {frac // esz} : index")
        k.lines.insert(loop_at, f"  %cd_{t} = arith.constant {nt1 * frac // esz} : index")
        # L0B Zn: block (j, l) from Nz index l*nt1 + j (in L1), transposed for fp16.
        for j in range(nt1):
            k.raw(f"%lb{t}_{j} = memref.subview %l1b[{j * frac // esz}] [{frac // esz}] [1] : "
                  f"{mem([K1 * nt1 * frac // esz], dtype, 'l1')} to memref<{frac // esz}x{dtype}, strided<[1], "
                  f"offset: {j * frac // esz}>, \"l1\">")
            k.types[f"lb{t}_{j}"] = (f"memref<{frac // esz}x{dtype}, strided<[1], offset: {j * frac // esz}>, \"l1\">")
            k.raw(f"%ob{t}_{j} = memref.subview %l0b[{j * K1 * frac // esz}] [{frac // esz}] [1] : "
                  f"{mem([nt1 * K1 * frac // esz], dtype, 'l0b')} to memref<{frac // esz}x{dtype}, strided<[1], "
                  f"offset: {j * K1 * frac // esz}>, \"l0b\">")
            k.types[f"ob{t}_{j}"] = (f"memref<{frac // esz}x{dtype}, strided<[1], offset: {j * K1 * frac // esz}>, "
                                     f"\"l0b\">")
            k.op("load_l1_to_l0b", f"lb{t}_{j}", f"ob{t}_{j}", repeat=K1, src_stride=nt1, dst_stride=1,
                 transpose=dtype != "i8")
        k.sync("MTE1", "M")
        k.op("mad", "l0a", "l0b", "l0c", m=M, n=nt, k=K, accumulate=t > 0, tag=f"mad{t}")
        if t + 1 < N // nt:
            k.set_flag("M", "MTE1", 2)
            k.set_flag("MTE1", "MTE2", 1)
    k.sync("M", "V")
    k.copy("l0c_to_ub", "l0c", "uc", 1, K1 * M1 * e * e * 4 // BLOCK)
    k.sync("V", "MTE3")
    k.copy("ub_to_gm", "uc", "c", 1, K1 * M1 * e * e * 4 // BLOCK)
    return k


def test_tiled_mad_fp16_matches_numpy():
    M, N, K = 48, 64, 32
    a, b = f16(M, N), f16(N, K)
    k = mad_kernel(M, N, K, nt=32)
    res = simulate(k.parse(), [nz(a), nz(b), np.zeros((K // 16, M // 16, 16, 16), np.float32)])
    c = from_nz(res.outputs[2])
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-4)
    assert res.hazards == []
    assert res.report["bytes"]["l1_to_l0a"] == M * N * 2
    assert res.report["bytes"]["l1_to_l0b"] == N * K * 2


def _nz_i8(x: np.ndarray, re: int, ce: int) -> np.ndarray:
    r, c = x.shape
    return x.reshape(r // re, re, c // ce, ce).transpose(2, 0, 1, 3).copy()


def test_mad_int8_accumulates_in_int32():
    M, N, K = 32, 64, 16
    a = RNG.integers(-128, 128, (M, N)).astype(np.int8)
    b = RNG.integers(-128, 128, (N, K)).astype(np.int8)
    k = mad_kernel(M, N, K, nt=32, dtype="i8")
    # A in Nz with 16x32 blocks; B with 32x16 blocks stored so that a plain block
    # reorder (no transpose) gives Zn: inside each block, column-major.
    a_nz = _nz_i8(a, 16, 32)
    b_blocks = b.reshape(N // 32, 32, K // 16, 16).transpose(2, 0, 3, 1).copy()  # [K1, N1, 16(q), 32(p)]
    res = simulate(k.parse(), [a_nz, b_blocks, np.zeros((K // 16, M // 16, 16, 16), np.int32)])
    c = from_nz(res.outputs[2])
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32))


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


@pytest.mark.parametrize("seed", range(6))
def test_random_vector_lanes(seed):
    """Random repeat/mask/strides for binary ops, against a lane-by-lane model."""
    rng = np.random.default_rng(seed)
    dtype, esize = [("f16", 2), ("f32", 4)][seed % 2]
    lanes = T.lanes(esize)
    n = 4096 // esize * 4  # 16 KiB per buffer
    npt = {"f16": np.float16, "f32": np.float32}[dtype]
    repeat = int(rng.integers(1, 5))
    mask = int(rng.integers(1, lanes + 1))
    strides = {f"{o}_{s}": int(rng.integers(0 if s == "rep_stride" else 1, 9 if s == "blk_stride" else 24))
               for o in ("dst", "src0", "src1") for s in ("blk_stride", "rep_stride")}
    k = Kernel([("x", gm([n], dtype)), ("y", gm([n], dtype))])
    k.alloc("ux", mem([n], dtype, "ub"))
    k.alloc("uy", mem([n], dtype, "ub"))
    k.copy("gm_to_ub", "x", "ux", 1, n * esize // BLOCK)
    k.copy("gm_to_ub", "y", "uy", 1, n * esize // BLOCK)
    k.sync("MTE2", "V")
    k.vector("vmax", "uy", "ux", "uy", repeat=repeat, mask=mask, **strides)
    k.sync("V", "MTE3")
    k.copy("ub_to_gm", "uy", "y", 1, n * esize // BLOCK)
    x, y = rng.standard_normal(n).astype(npt), rng.standard_normal(n).astype(npt)
    res = simulate(k.parse(), [x, y])

    def lane(op, r, e):
        byte = (r * strides[f"{op}_rep_stride"] * 32 + (e * esize // 32) * strides[f"{op}_blk_stride"] * 32
                + (e * esize) % 32)
        return byte // esize
    expect = y.copy()
    reads = {(r, e): (x[lane("src0", r, e)], y[lane("src1", r, e)]) for r in range(repeat) for e in range(mask)}
    for (r, e), (a, b) in reads.items():  # all reads happen before the writes of one instruction
        expect[lane("dst", r, e)] = max(a, b)
    np.testing.assert_array_equal(res.outputs[1], expect)


def test_transposed_load_into_strided_fractals():
    """Two transposed L1 -> L0B loads interleave their fractals (dst_stride 2);
    a mad with the identity in L0A copies L0B's Zn blocks out to L0C."""
    e = 16
    frac = e * e
    k = Kernel([("a", gm([frac])), ("x", gm([4 * frac])), ("c", gm([4, 1, e, e], "f32"))])
    k.alloc("l1a", mem([frac], "f16", "l1"))
    k.alloc("l1b", mem([4 * frac], "f16", "l1"))
    k.alloc("l0a", mem([frac], "f16", "l0a"))
    k.alloc("l0b", mem([4 * frac], "f16", "l0b"))
    k.alloc("l0c", mem([4 * frac], "f32", "l0c"))
    k.alloc("uc", mem([4 * frac], "f32", "ub"))
    k.copy("gm_to_l1", "a", "l1a", 1, frac * 2 // BLOCK)
    k.copy("gm_to_l1", "x", "l1b", 1, 4 * frac * 2 // BLOCK)
    k.sync("MTE2", "MTE1")
    k.op("load_l1_to_l0a", "l1a", "l0a", repeat=1, src_stride=1, dst_stride=1, transpose=False)
    for half in range(2):
        src_t = f'memref<{2 * frac}xf16, strided<[1], offset: {half * 2 * frac}>, "l1">'
        dst_t = f'memref<{3 * frac}xf16, strided<[1], offset: {half * frac}>, "l0b">'
        k.raw(f"%s{half} = memref.subview %l1b[{half * 2 * frac}] [{2 * frac}] [1] : "
              f"{k.types['l1b']} to {src_t}")
        k.raw(f"%d{half} = memref.subview %l0b[{half * frac}] [{3 * frac}] [1] : "
              f"{k.types['l0b']} to {dst_t}")
        k.types[f"s{half}"], k.types[f"d{half}"] = src_t, dst_t
        k.op("load_l1_to_l0b", f"s{half}", f"d{half}", repeat=2, src_stride=1, dst_stride=2,
             transpose=True)
    k.sync("MTE1", "M")
    k.op("mad", "l0a", "l0b", "l0c", m=e, n=e, k=4 * e, accumulate=False)
    k.sync("M", "V")
    k.copy("l0c_to_ub", "l0c", "uc", 1, 4 * frac * 4 // BLOCK)
    k.sync("V", "MTE3")
    k.copy("ub_to_gm", "uc", "c", 1, 4 * frac * 4 // BLOCK)
    x = np.random.default_rng(3).uniform(-4, 4, (4, e, e)).astype(np.float16)
    res = simulate(k.parse(), [np.eye(e, dtype=np.float16).ravel(), x.ravel(),
                               np.zeros((4, 1, e, e), np.float32)])
    # L0B slots hold X0^T, X2^T, X1^T, X3^T; read as Zn, column block l of B is X[order[l]].
    order = [0, 2, 1, 3]
    np.testing.assert_array_equal(res.outputs[2][:, 0], x[order].astype(np.float32))
