"""A cce kernel around one `cce.img2col_l1_to_l0a`, and a plain numpy im2col.

The kernel copies an NC1HWC0 map to L1, img2cols `repeat` fractals into L0A
and multiplies each by the identity on the cube (L0C holds the fractal
itself, in f32), then L0C -> UB -> GM: the fractals img2col wrote, readable.
"""

from __future__ import annotations

import numpy as np

FIELDS = ("fm_h", "fm_w", "pad_top", "pad_bottom", "pad_left", "pad_right", "c1", "fetch_h",
          "fetch_w", "left_top_h", "left_top_w", "stride_h", "stride_w", "kernel_h", "kernel_w",
          "dilation_h", "dilation_w", "dst_stride", "repeat_mode", "repeat")


def img2col_attrs(**f) -> str:
    return ", ".join(f"{n} = {f[n]} : i64" for n in FIELDS + ("small_channel",) if n in f)


def kernel_text(c1_blocks: int, f: dict) -> str:
    h, w, rep, ds = f["fm_h"], f["fm_w"], f["repeat"], max(f["dst_stride"], 1)
    fm = f'memref<{c1_blocks}x{h}x{w}x16xf16, "gm">'
    l1 = f'memref<{c1_blocks}x{h}x{w}x16xf16, "l1">'
    l0a_n = ((rep - 1) * ds + 1) * 256
    mads = []
    for r in range(rep):
        mads.append(
            f'    %a{r} = memref.subview %l0a[{r * ds * 256}] [256] [1] : memref<{l0a_n}xf16, "l0a"> to '
            f'memref<256xf16, strided<[1], offset: {r * ds * 256}>, "l0a">\n'
            f'    %c{r} = memref.subview %l0c[{r * 256}] [256] [1] : memref<{rep * 256}xf32, "l0c"> to '
            f'memref<256xf32, strided<[1], offset: {r * 256}>, "l0c">\n'
            f'    "cce.mad"(%a{r}, %l0b, %c{r}) {{m = 16 : i64, n = 16 : i64, k = 16 : i64, accumulate = false}} : '
            f'(memref<256xf16, strided<[1], offset: {r * ds * 256}>, "l0a">, memref<256xf16, "l0b">, '
            f'memref<256xf32, strided<[1], offset: {r * 256}>, "l0c">) -> ()')
    copy = "n_burst = 1 : i64, burst_len = {} : i64, src_gap = 0 : i64, dst_gap = 0 : i64"
    return f'''
func.func @img2col(%x: {fm}, %eye: memref<256xf16, "gm">, %out: memref<{rep * 256}xf32, "gm">) {{
    %l1 = memref.alloc() : {l1}
    %l1b = memref.alloc() : memref<256xf16, "l1">
    %l0a = memref.alloc() : memref<{l0a_n}xf16, "l0a">
    %l0b = memref.alloc() : memref<256xf16, "l0b">
    %l0c = memref.alloc() : memref<{rep * 256}xf32, "l0c">
    %ub = memref.alloc() : memref<{rep * 256}xf32, "ub">
    "cce.copy_gm_to_l1"(%x, %l1) {{{copy.format(c1_blocks * h * w)}}} : ({fm}, {l1}) -> ()
    "cce.copy_gm_to_l1"(%eye, %l1b) {{{copy.format(16)}}} : (memref<256xf16, "gm">, memref<256xf16, "l1">) -> ()
    "cce.img2col_l1_to_l0a"(%l1, %l0a) {{{img2col_attrs(**f)}}} : ({l1}, memref<{l0a_n}xf16, "l0a">) -> ()
    "cce.load_l1_to_l0b"(%l1b, %l0b) {{repeat = 1 : i64, src_stride = 0 : i64, dst_stride = 0 : i64, transpose = false}} : (memref<256xf16, "l1">, memref<256xf16, "l0b">) -> ()
{chr(10).join(mads)}
    "cce.copy_l0c_to_ub"(%l0c, %ub) {{{copy.format(rep * 32)}}} : (memref<{rep * 256}xf32, "l0c">, memref<{rep * 256}xf32, "ub">) -> ()
    "cce.copy_ub_to_gm"(%ub, %out) {{{copy.format(rep * 32)}}} : (memref<{rep * 256}xf32, "ub">, memref<{rep * 256}xf32, "gm">) -> ()
    return
}}
'''


def im2col(fm: np.ndarray, pads, strides, kernel, dilations) -> np.ndarray:
    """Plain im2col of an NC1HWC0 map [C1, H, W, 16]: [Ho*Wo, C1*Kh*Kw*16],
    K ordered (c1, kh, kw, c0), M as ho*Wo + wo; pads (top, bottom, left, right)."""
    c1n, h, w, c0 = fm.shape
    top, bottom, left, right = pads
    padded = np.zeros((c1n, h + top + bottom, w + left + right, c0), fm.dtype)
    padded[:, top:top + h, left:left + w] = fm
    (sh, sw), (kh, kw), (dh, dw) = strides, kernel, dilations
    ho = (padded.shape[1] - dh * (kh - 1) - 1) // sh + 1
    wo = (padded.shape[2] - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((ho * wo, c1n * kh * kw * c0), fm.dtype)
    for i in range(ho):
        for j in range(wo):
            col = []
            for c1 in range(c1n):
                for a in range(kh):
                    for b in range(kw):
                        col.append(padded[c1, i * sh + a * dh, j * sw + b * dw])
            out[i * wo + j] = np.concatenate(col)
    return out
