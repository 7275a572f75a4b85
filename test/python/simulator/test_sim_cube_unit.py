"""Functional semantics of the simulated cube unit (L1 -> L0A / L0B loads
and mad, fp16 and int8), compared with numpy."""

from __future__ import annotations

import numpy as np
import pytest

from npu.simulator import simulate
from npu.target import get_target

from sim_kernels import RNG, Kernel, f16, from_nz, gm, mem, nz

T = get_target()
BLOCK = T.vector_block_bytes


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


def _awkward_f16(rows: int, cols: int, seed: int, extremes: bool) -> np.ndarray:
    """fp16 values in [-2, 2] with no magnitude below 2^-4 and signed zeros;
    with `extremes`, subnormals and magnitudes in [128, 256) mixed in. A
    product of an extreme and a plain value then has its bits between 2^-38
    and 2^9, a 32-term sum below 2^14: the float64 sum is exact in any
    order (52 bits), while a float32 sum rounds."""
    rng = np.random.default_rng(seed)
    values = rng.uniform(-2, 2, (rows, cols))
    values[np.abs(values) < 1 / 16] = 1 / 16
    bits = values.astype(np.float16).view(np.uint16)
    pick = rng.random((rows, cols))
    bits[(pick >= 0.05) & (pick < 0.08)] = 0x8000  # -0.0
    if extremes:
        tiny, big = pick < 0.05, (pick >= 0.08) & (pick < 0.1)
        bits[tiny] = rng.integers(1, 1 << 10, bits.shape)[tiny] | 0x8000 * (pick[tiny] < 0.02)
        bits[big] = rng.integers(0x5800, 0x5c00, bits.shape)[big] | 0x8000 * (pick[big] < 0.09)
    return bits.view(np.float16)


def test_tiled_mad_fp16_is_bit_exact():
    """Each mad rounds the exact (float64) sum of its fp16 products to fp32
    once, and accumulating adds that to C in fp32: the bits, not a tolerance,
    against that rule computed here tile by tile."""
    M, N, K, nt = 48, 64, 48, 32
    a, b = _awkward_f16(M, N, 5, True), _awkward_f16(N, K, 6, False)
    k = mad_kernel(M, N, K, nt=nt)
    res = simulate(k.parse(), [nz(a), nz(b), np.zeros((K // 16, M // 16, 16, 16), np.float32)])
    ref = np.zeros((M, K), np.float32)
    for t in range(N // nt):
        part = (a[:, t * nt:(t + 1) * nt].astype(np.float64)
                @ b[t * nt:(t + 1) * nt].astype(np.float64)).astype(np.float32)
        ref = part if t == 0 else ref + part
    np.testing.assert_array_equal(from_nz(res.outputs[2]).view(np.uint32), ref.view(np.uint32))


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


def test_compiled_fp16_conversion_is_numpys_cast():
    """The compiled mad's fp16 -> float64 conversion (csrc/cubeconv.c, bit
    arithmetic) gives numpy's cast for all 65,536 patterns (NaN payloads,
    -0, subnormals), read contiguously and through the transposed views the
    mad reads, and the fp32 rounding adds as numpy does."""
    from npu.simulator import compiled
    from npu.simulator.cube_unit import F16_TO_F64
    if not compiled.available():
        pytest.skip("the C extension is not built")
    ce = compiled._cengine
    bits = np.arange(1 << 16, dtype=np.uint16)
    for src in (bits, bits.reshape(256, 256).T, bits.reshape(16, 16, 16, 16).transpose(1, 0, 3, 2),
                bits.reshape(16, 16, 16, 16).transpose(0, 2, 1, 3)):
        out = np.empty(src.shape)
        ce.f16_to_f64(out, src)
        np.testing.assert_array_equal(out.view(np.uint64), F16_TO_F64[src].view(np.uint64))
    wide = RNG.standard_normal(4096) * 1e3
    c = RNG.standard_normal(4096).astype(np.float32)
    expect = c + wide.astype(np.float32)
    ce.round_into_f32(c, wide, True)
    np.testing.assert_array_equal(c.view(np.uint32), expect.view(np.uint32))
    ce.round_into_f32(c, wide, False)
    np.testing.assert_array_equal(c.view(np.uint32), wide.astype(np.float32).view(np.uint32))
