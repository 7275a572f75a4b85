"""Functional semantics of the simulated vector instructions (binary,
unary, scalar, reductions, vconv, vnchwconv; masks and strides), compared
with numpy."""

from __future__ import annotations

import numpy as np
import pytest

from npu.simulator import simulate
from npu.target import get_target

from sim_kernels import RNG, Kernel, f16, gm, mem

T = get_target()
BLOCK = T.vector_block_bytes


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
