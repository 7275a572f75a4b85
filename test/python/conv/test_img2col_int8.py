"""`cce.img2col_l1_to_l0a` on int8 maps (C0 = 32) with a pad value, in a
hand-built int8 conv: img2col i8 -> L0A, fractal-Z int8 weights -> L0B,
`cce.mad` i8 x i8 -> i32 in L0C, then to GM. Exact against numpy (the pads
take `pad_value`), at the cce and hivm levels: bit-identical outputs and
identical cycles; the hivm program sets the padding register once."""

from __future__ import annotations

import numpy as np
import pytest

from npu.dialects import hivm
from npu.ir import make_context, parse_module
from npu.pipeline import run_pipeline
from npu.simulator import simulate
from npu.target import get_target

C, COUT, K, PAD = 64, 32, 3, 1
C1 = C // 32  # 32-channel blocks


def _copy(n_blocks: int) -> str:
    return f"n_burst = 1 : i64, burst_len = {n_blocks} : i64, src_gap = 0 : i64, dst_gap = 0 : i64"


def _attrs(**f) -> str:
    return ", ".join(f"{k} = {v} : i64" for k, v in f.items())


def conv_kernel(h: int, w: int, stride: int, pads: tuple[int, ...], mode: int) -> tuple[str, int, int]:
    """(cce text, Ho, Wo) of one int8 conv of the [C1, h, w, 32] map.
    mode 0: one img2col per 16 windows (block i padding with pads[i]),
    stepping all K fractals (dst_stride 1); mode 1: one per kernel point,
    stepping the windows (dst_stride n1), padding with pads[0]."""
    ho = (h + 2 * PAD - K) // stride + 1
    wo = (w + 2 * PAD - K) // stride + 1
    m1, n1, k1 = -(-ho * wo // 16), C1 * K * K, COUT // 16
    fm_t = f'memref<{C1}x{h}x{w}x32xi8, "l1">'
    a_n, b_n, c_n = m1 * n1 * 512, n1 * k1 * 512, m1 * k1 * 256
    a_t = f'memref<{a_n}xi8, "l0a">'
    geo = dict(fm_h=h, fm_w=w, pad_top=PAD, pad_bottom=PAD, pad_left=PAD, pad_right=PAD,
               stride_h=stride, stride_w=stride, kernel_h=K, kernel_w=K, dilation_h=1, dilation_w=1)
    img2cols = []
    if mode == 0:
        for i in range(m1):
            row, col = divmod(16 * i, wo)
            f = dict(geo, c1=0, fetch_h=0, fetch_w=0, left_top_h=row * stride - PAD,
                     left_top_w=col * stride - PAD, dst_stride=1, repeat_mode=0, repeat=n1,
                     pad_value=pads[i])
            img2cols.append((i * n1, f, (n1 - 1) * 512 + 512))
    else:
        for kp in range(n1):
            c1, rest = divmod(kp, K * K)
            f = dict(geo, c1=c1, fetch_h=rest // K, fetch_w=rest % K, left_top_h=-PAD,
                     left_top_w=-PAD, dst_stride=n1, repeat_mode=1, repeat=m1, pad_value=pads[0])
            img2cols.append((kp, f, (m1 - 1) * n1 * 512 + 512))
    body = []
    for j, (frac, f, span) in enumerate(img2cols):
        view = f'memref<{span}xi8, strided<[1], offset: {frac * 512}>, "l0a">'
        body.append(f'    %a{j} = memref.subview %l0a[{frac * 512}] [{span}] [1] : {a_t} to {view}\n'
                    f'    "cce.img2col_l1_to_l0a"(%l1, %a{j}) {{{_attrs(**f)}}} : ({fm_t}, {view}) -> ()')
    text = f'''
func.func @conv_i8(%x: memref<{C1}x{h}x{w}x32xi8, "gm">, %wt: memref<{b_n}xi8, "gm">,
                   %out: memref<{c_n}xi32, "gm">) {{
    %l1 = memref.alloc() : {fm_t}
    %l1w = memref.alloc() : memref<{b_n}xi8, "l1">
    %l0a = memref.alloc() : {a_t}
    %l0b = memref.alloc() : memref<{b_n}xi8, "l0b">
    %l0c = memref.alloc() : memref<{c_n}xi32, "l0c">
    %ub = memref.alloc() : memref<{c_n}xi32, "ub">
    "cce.copy_gm_to_l1"(%x, %l1) {{{_copy(C1 * h * w)}}} : (memref<{C1}x{h}x{w}x32xi8, "gm">, {fm_t}) -> ()
    "cce.copy_gm_to_l1"(%wt, %l1w) {{{_copy(b_n // 32)}}} : (memref<{b_n}xi8, "gm">, memref<{b_n}xi8, "l1">) -> ()
{chr(10).join(body)}
    "cce.load_l1_to_l0b"(%l1w, %l0b) {{repeat = {n1 * k1} : i64, src_stride = 1 : i64, dst_stride = 1 : i64, transpose = false}} : (memref<{b_n}xi8, "l1">, memref<{b_n}xi8, "l0b">) -> ()
    "cce.mad"(%l0a, %l0b, %l0c) {{m = {m1 * 16} : i64, n = {n1 * 32} : i64, k = {COUT} : i64, accumulate = false}} : ({a_t}, memref<{b_n}xi8, "l0b">, memref<{c_n}xi32, "l0c">) -> ()
    "cce.copy_l0c_to_ub"(%l0c, %ub) {{{_copy(c_n * 4 // 32)}}} : (memref<{c_n}xi32, "l0c">, memref<{c_n}xi32, "ub">) -> ()
    "cce.copy_ub_to_gm"(%ub, %out) {{{_copy(c_n * 4 // 32)}}} : (memref<{c_n}xi32, "ub">, memref<{c_n}xi32, "gm">) -> ()
    return
}}
'''
    return text, ho, wo


def fractal_z_int8(wt: np.ndarray) -> np.ndarray:
    """[Cout, C, K, K] -> [C1*K*K, Cout/16, 16, 32]: K fractal (c1, kh, kw),
    row = output channel, column = input channel 32*c1 + j (L0B, no transpose)."""
    cout = wt.shape[0]
    blocks = wt.reshape(cout // 16, 16, C1, 32, K, K)  # co1, r, c1, j, kh, kw
    return np.ascontiguousarray(blocks.transpose(2, 4, 5, 0, 1, 3)).reshape(-1)


def reference(x: np.ndarray, wt: np.ndarray, stride: int, pad_value: int) -> np.ndarray:
    """[Cout, Ho, Wo] int32: the conv of x [C, H, W] padded with pad_value."""
    xp = np.pad(x.astype(np.int64), ((0, 0), (PAD, PAD), (PAD, PAD)), constant_values=pad_value)
    ho = (xp.shape[1] - K) // stride + 1
    wo = (xp.shape[2] - K) // stride + 1
    out = np.zeros((wt.shape[0], ho, wo), np.int64)
    for kh in range(K):
        for kw in range(K):
            taps = xp[:, kh:kh + stride * (ho - 1) + 1:stride, kw:kw + stride * (wo - 1) + 1:stride]
            out += np.einsum("chw,oc->ohw", taps, wt[:, :, kh, kw].astype(np.int64))
    return out.astype(np.int32)


def run(h, w, stride, pads, mode, level):
    """(result [Cout, Ho, Wo], its reference, the run, the module); the
    windows of M block i pad with pads[i] (mode 0) or all with pads[0]."""
    rng = np.random.default_rng(7)
    x = rng.integers(-128, 128, (C, h, w), dtype=np.int8)
    wt = rng.integers(-128, 128, (COUT, C, K, K), dtype=np.int8)
    text, ho, wo = conv_kernel(h, w, stride, pads, mode)
    module = parse_module(text, make_context())
    run_pipeline(module, "npu-insert-sync", get_target("ascend910"))
    if level == "hivm":
        run_pipeline(module, "npu-plan-memory,npu-lower-cce-to-hivm", get_target("ascend910"))
    fm = np.ascontiguousarray(x.reshape(C1, 32, h, w).transpose(0, 2, 3, 1))
    m1 = -(-ho * wo // 16)
    res = simulate(module, [fm, fractal_z_int8(wt), np.zeros(m1 * (COUT // 16) * 256, np.int32)])
    assert not res.hazards
    nz = res.outputs[2].reshape(COUT // 16, m1 * 16, 16)  # Nz: [co1, m, co0]
    got = nz.transpose(0, 2, 1).reshape(COUT, m1 * 16)[:, :ho * wo].reshape(COUT, ho, wo)
    refs = [reference(x, wt, stride, pads[min(i, len(pads) - 1) if mode == 0 else 0])
            .reshape(COUT, -1)[:, 16 * i:16 * i + 16] for i in range(m1)]
    return got, np.concatenate(refs, axis=1).reshape(COUT, ho, wo), res, module


CASES = {  # (h, w, stride, pad value of each M block, img2col repeat mode)
    "stride1_pad-7_mode0": (5, 5, 1, (-7, -7), 0),
    "stride2_pad93_mode1": (9, 9, 2, (93,), 1),
    "stride2_pad-128_mode0": (7, 6, 2, (-128,), 0),
}


@pytest.mark.parametrize("case", CASES)
def test_int8_conv_matches_numpy_at_cce_and_hivm(case):
    h, w, stride, pads, mode = CASES[case]
    got_cce, want, res_cce, _ = run(h, w, stride, pads, mode, "cce")
    np.testing.assert_array_equal(got_cce, want)
    got_hivm, _, res_hivm, module = run(h, w, stride, pads, mode, "hivm")
    np.testing.assert_array_equal(res_hivm.outputs[2], res_cce.outputs[2])
    assert res_hivm.cycles == res_cce.cycles
    text = str(module)
    # the register is set once, to the pad's byte, before the first img2col
    assert text.count('"hivm.set_padding"') == 1
    word = hivm.encode("padding", value=pads[0] & 0xFF)
    assert f"arith.constant {word} : i64" in text


def test_padding_register_changes_between_img2cols():
    # block 0 pads with -7, block 1 with 0: the register is set twice, and
    # each img2col reads the value set before it
    got_cce, want, res_cce, _ = run(5, 5, 1, (-7, 0), 0, "cce")
    np.testing.assert_array_equal(got_cce, want)
    got_hivm, _, res_hivm, module = run(5, 5, 1, (-7, 0), 0, "hivm")
    np.testing.assert_array_equal(got_hivm, want)
    assert res_hivm.cycles == res_cce.cycles
    assert str(module).count('"hivm.set_padding"') == 2
    # the pads show: padding every block with -7 gives another result
    assert not np.array_equal(want, run(5, 5, 1, (-7, -7), 0, "cce")[1])


def test_zero_pad_sets_no_register():
    got, want, _, module = run(5, 5, 1, (0, 0), 0, "hivm")
    np.testing.assert_array_equal(got, want)
    assert '"hivm.set_padding"' not in str(module)  # the register's reset value is 0


def test_padded_taps_are_initialised_when_img2col_carries_uninitialised_bytes():
    # Only the map's first 32-channel block is in L1. One img2col of 10 K
    # fractals reads the 9 kernel points of block 0 and one of the unwritten
    # block 1 (so it carries uninitialised flags); the mad reads the first 9
    # fractals only, whose pads hold -7: written bytes, not uninitialised ones.
    h = w = 5
    fm_t, a_t = f'memref<2x{h}x{w}x32xi8, "l1">', 'memref<5120xi8, "l0a">'
    a9_t = 'memref<4608xi8, strided<[1]>, "l0a">'
    f = dict(fm_h=h, fm_w=w, pad_top=1, pad_bottom=1, pad_left=1, pad_right=1, c1=0, fetch_h=0,
             fetch_w=0, left_top_h=-1, left_top_w=-1, stride_h=1, stride_w=1, kernel_h=K, kernel_w=K,
             dilation_h=1, dilation_w=1, dst_stride=1, repeat_mode=0, repeat=10, pad_value=-7)
    text = f'''
func.func @partial(%x: memref<2x{h}x{w}x32xi8, "gm">, %wt: memref<4608xi8, "gm">,
                   %out: memref<256xi32, "gm">) {{
    %l1 = memref.alloc() : {fm_t}
    %l1w = memref.alloc() : memref<4608xi8, "l1">
    %l0a = memref.alloc() : {a_t}
    %l0b = memref.alloc() : memref<4608xi8, "l0b">
    %l0c = memref.alloc() : memref<256xi32, "l0c">
    %ub = memref.alloc() : memref<256xi32, "ub">
    "cce.copy_gm_to_l1"(%x, %l1) {{{_copy(h * w)}}} : (memref<2x{h}x{w}x32xi8, "gm">, {fm_t}) -> ()
    "cce.copy_gm_to_l1"(%wt, %l1w) {{{_copy(144)}}} : (memref<4608xi8, "gm">, memref<4608xi8, "l1">) -> ()
    "cce.img2col_l1_to_l0a"(%l1, %l0a) {{{_attrs(**f)}}} : ({fm_t}, {a_t}) -> ()
    %a9 = memref.subview %l0a[0] [4608] [1] : {a_t} to {a9_t}
    "cce.load_l1_to_l0b"(%l1w, %l0b) {{repeat = 9 : i64, src_stride = 1 : i64, dst_stride = 1 : i64, transpose = false}} : (memref<4608xi8, "l1">, memref<4608xi8, "l0b">) -> ()
    "cce.mad"(%a9, %l0b, %l0c) {{m = 16 : i64, n = 288 : i64, k = 16 : i64, accumulate = false}} : ({a9_t}, memref<4608xi8, "l0b">, memref<256xi32, "l0c">) -> ()
    "cce.copy_l0c_to_ub"(%l0c, %ub) {{{_copy(32)}}} : (memref<256xi32, "l0c">, memref<256xi32, "ub">) -> ()
    "cce.copy_ub_to_gm"(%ub, %out) {{{_copy(32)}}} : (memref<256xi32, "ub">, memref<256xi32, "gm">) -> ()
    return
}}
'''
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, (32, h, w), dtype=np.int8)
    wt = rng.integers(-128, 128, (16, 32, K, K), dtype=np.int8)
    fm = np.zeros((2, h, w, 32), np.int8)
    fm[0] = x.transpose(1, 2, 0)
    b = np.ascontiguousarray(wt.transpose(2, 3, 0, 1)).reshape(-1)  # [kh, kw, co, ci]
    for level in ("cce", "hivm"):
        module = parse_module(text, make_context())
        run_pipeline(module, "npu-insert-sync", get_target("ascend910"))
        if level == "hivm":
            run_pipeline(module, "npu-plan-memory,npu-lower-cce-to-hivm", get_target("ascend910"))
        res = simulate(module, [fm, b, np.zeros(256, np.int32)])
        assert not res.hazards, res.hazards
        got = res.outputs[2].reshape(16, 16).T[:, :16]  # [co, window]
        want = np.concatenate([x, np.zeros((32, h, w), np.int8)]), \
            np.concatenate([wt, np.zeros((16, 32, K, K), np.int8)], axis=1)
        ref = reference(*want, 1, -7).reshape(16, -1)[:, :16]
        np.testing.assert_array_equal(got, ref)


def test_binary_round_trip_and_listing_carry_padding_and_b8():
    from npu.hivm.binary import encode
    from npu.hivm.disasm import decode, listing

    text, _, _ = conv_kernel(5, 5, 1, (-7, -7), 0)
    module = parse_module(text, make_context())
    run_pipeline(module, "npu-insert-sync,npu-plan-memory,npu-lower-cce-to-hivm", get_target())
    binary = encode(module)
    assert str(decode(binary, "k.npub", make_context())) == str(module)
    lines = listing(binary, "k.npub", make_context()).splitlines()
    (pad,) = [x for x in lines if "hivm.set_padding" in x]
    assert "[padding 0x00000000000000f9: value=249]" in pad
    img2cols = [x for x in lines if "hivm.img2col_l1_to_l0a" in x]
    assert len(img2cols) == 2 and all("b8=1" in x and "repeat=18" in x for x in img2cols)


def test_sync_analysis_reads_the_int8_map_bytes_once():
    # insert-sync's access analysis: an img2col reads its map's bytes (1 a
    # channel for i8), not two per element, which would reach past the map
    from npu.analysis.access import function_accesses
    from npu.ir import functions

    text, _, _ = conv_kernel(5, 5, 1, (0, 0), 0)
    module = parse_module(text, make_context())
    _, accesses = function_accesses(functions(module)[0], get_target())
    img2cols = [a for a in accesses if a.op.name == "cce.img2col_l1_to_l0a"]
    assert len(img2cols) == 2
    assert all(a.reads[0].length == C1 * 5 * 5 * 32 for a in img2cols)
