"""`cce.img2col_l1_to_l0a` simulated at the cce and hivm levels against a
plain numpy im2col: pads, stride 2, dilation 2, both repeat modes, a
window start inside the map, a dst stride; the timing from the target."""

from __future__ import annotations

import numpy as np
import pytest

from img2col_kernel import im2col, kernel_text
from npu.ir import make_context, parse_module
from npu.pipeline import run_pipeline
from npu.simulator import simulate
from npu.target import get_target


def geometry(h, w, k=3, s=1, d=1, pads=(1, 1, 1, 1), **over):
    top, bottom, left, right = pads
    f = dict(fm_h=h, fm_w=w, pad_top=top, pad_bottom=bottom, pad_left=left, pad_right=right, c1=0,
             fetch_h=0, fetch_w=0, left_top_h=-top, left_top_w=-left, stride_h=s, stride_w=s,
             kernel_h=k, kernel_w=k, dilation_h=d, dilation_w=d, dst_stride=1, repeat_mode=0,
             repeat=1)
    f.update(over)
    return f


def run(c1_blocks, f, level):
    rng = np.random.default_rng(0)
    fm = rng.standard_normal((c1_blocks, f["fm_h"], f["fm_w"], 16)).astype(np.float16)
    ctx = make_context()
    module = parse_module(kernel_text(c1_blocks, f), ctx)
    target = get_target("ascend910")
    run_pipeline(module, "npu-insert-sync", target)
    if level == "hivm":
        run_pipeline(module, "npu-plan-memory,npu-lower-cce-to-hivm", target)
    res = simulate(module, [fm, np.eye(16, dtype=np.float16).reshape(-1),
                            np.zeros(f["repeat"] * 256, np.float32)])
    assert not res.hazards
    return fm, res.outputs[2].reshape(f["repeat"], 16, 16), res


def expected(fm, f):
    """The fractals the op should write, from the plain im2col (rows past
    the last window are not compared: -inf marks them)."""
    mat = im2col(fm, (f["pad_top"], f["pad_bottom"], f["pad_left"], f["pad_right"]),
                 (f["stride_h"], f["stride_w"]), (f["kernel_h"], f["kernel_w"]),
                 (f["dilation_h"], f["dilation_w"]))
    wo = (f["fm_w"] + f["pad_left"] + f["pad_right"] - f["dilation_w"] * (f["kernel_w"] - 1) - 1) \
        // f["stride_w"] + 1
    m0 = (f["left_top_h"] + f["pad_top"]) // f["stride_h"] * wo + (f["left_top_w"] + f["pad_left"]) \
        // f["stride_w"]
    kp0 = (f["c1"] * f["kernel_h"] + f["fetch_h"]) * f["kernel_w"] + f["fetch_w"]
    out = np.full((f["repeat"], 16, 16), -np.inf, np.float32)
    for r in range(f["repeat"]):
        rows = m0 + (16 * r if f["repeat_mode"] == 1 else 0)
        kp = kp0 + (r if f["repeat_mode"] == 0 else 0)
        block = mat[rows:rows + 16, kp * 16:kp * 16 + 16]
        out[r, :block.shape[0]] = block
    return out


CASES = {
    "3x3_pad1_mode0": (1, geometry(7, 9, repeat=9)),
    "stride2_mode1": (1, geometry(11, 10, s=2, repeat=2, repeat_mode=1, fetch_h=1, fetch_w=2)),
    "dilation2_c1": (2, geometry(9, 9, d=2, pads=(2, 2, 2, 2), c1=1, fetch_h=2, repeat=3)),
    "mode0_across_c1": (2, geometry(6, 6, pads=(0, 0, 0, 0), fetch_h=2, fetch_w=1, repeat=4)),
    "window_inside": (1, geometry(8, 8, pads=(1, 0, 1, 0), left_top_h=1, left_top_w=2, repeat=2,
                                  repeat_mode=1, dst_stride=3)),
    "7x7_stride2_pad3": (1, geometry(15, 15, k=7, s=2, pads=(3, 3, 3, 3), fetch_h=3, fetch_w=6,
                                     repeat=4, repeat_mode=1)),
    "asym_pads": (1, geometry(5, 7, pads=(0, 2, 1, 0), repeat=5)),
}


@pytest.mark.parametrize("level", ["cce", "hivm"])
@pytest.mark.parametrize("case", CASES)
def test_img2col_matches_numpy_im2col(case, level):
    c1_blocks, f = CASES[case]
    fm, got, _ = run(c1_blocks, f, level)
    want = expected(fm, f)
    valid = np.isfinite(want)
    np.testing.assert_array_equal(got[valid], want[valid])


def test_cce_and_hivm_agree_on_cycles_and_timing_from_target():
    c1_blocks, f = CASES["stride2_mode1"]
    _, a, res_cce = run(c1_blocks, f, "cce")
    _, b, res_hivm = run(c1_blocks, f, "hivm")
    np.testing.assert_array_equal(a, b)
    assert res_cce.cycles == res_hivm.cycles
    t = get_target("ascend910")
    for res, name in ((res_cce, "cce.img2col_l1_to_l0a"), (res_hivm, "hivm.img2col_l1_to_l0a")):
        (i,) = [k for k, (instr, _, _) in enumerate(res.trace_entries) if instr.name == name]
        tl = res.timeline
        assert tl.end[i] - tl.start[i] == -(-f["repeat"] * 512 // t.img2col_bytes_per_cycle) \
            + t.img2col_latency


def test_own_bound_counts_img2col_at_its_own_rate():
    # Its bytes go over L1 -> L0A, whose 512 B/cycle the other loads get; the
    # report's MTE1 bound takes img2col's own (slower) rate from the target.
    from npu.target import PATH_PIPES

    c1_blocks, f = CASES["stride2_mode1"]
    _, _, res = run(c1_blocks, f, "cce")
    t, rep = get_target("ascend910"), res.report
    img2col = f["repeat"] * 512
    others = sum(rep["bytes"][p] / t.path(p).bytes_per_cycle
                 for p, pipe in PATH_PIPES.items() if pipe == "MTE1")
    others -= img2col / t.path("l1_to_l0a").bytes_per_cycle
    assert rep["bounds"]["MTE1"] == pytest.approx(
        img2col / t.img2col_bytes_per_cycle + others, abs=0.01)
    assert t.img2col_bytes_per_cycle < t.path("l1_to_l0a").bytes_per_cycle


def test_binary_round_trip_and_listing():
    from npu.hivm.binary import encode
    from npu.hivm.disasm import decode, listing

    c1_blocks, f = CASES["dilation2_c1"]
    module = parse_module(kernel_text(c1_blocks, f), make_context())
    run_pipeline(module, "npu-insert-sync,npu-plan-memory,npu-lower-cce-to-hivm", get_target())
    binary = encode(module)
    assert str(decode(binary, "k.npub", make_context())) == str(module)
    lines = listing(binary, "k.npub", make_context()).splitlines()
    (line,) = [x for x in lines if "hivm.img2col_l1_to_l0a" in x]
    assert "[img2col_pos" in line and "left_top_w=-2" in line and "c1=1" in line
    assert "[img2col " in line and "dilation_h=2" in line and "repeat=3" in line
    assert any("hivm.set_fmatrix" in x and "pad_top=2" in x for x in lines)


def expected_small(fm, f):
    """Small-channel mode: column j of a fractal is kernel point (first + j // 4),
    channel j % 4; points past the kernel read 0."""
    mat = im2col(fm, (f["pad_top"], f["pad_bottom"], f["pad_left"], f["pad_right"]),
                 (f["stride_h"], f["stride_w"]), (f["kernel_h"], f["kernel_w"]),
                 (f["dilation_h"], f["dilation_w"]))
    points = f["kernel_h"] * f["kernel_w"]
    wo = (f["fm_w"] + f["pad_left"] + f["pad_right"] - f["dilation_w"] * (f["kernel_w"] - 1) - 1) \
        // f["stride_w"] + 1
    m0 = (f["left_top_h"] + f["pad_top"]) // f["stride_h"] * wo + (f["left_top_w"] + f["pad_left"]) \
        // f["stride_w"]
    out = np.full((f["repeat"], 16, 16), -np.inf, np.float32)
    for r in range(f["repeat"]):
        rows = m0 + (16 * r if f["repeat_mode"] == 1 else 0)
        first = f["fetch_h"] * f["kernel_w"] + f["fetch_w"] + (4 * r if f["repeat_mode"] == 0 else 0)
        block = np.zeros((min(16, mat.shape[0] - rows), 16), np.float32)
        for j in range(16):
            kp, ch = first + j // 4, j % 4
            if kp < points:
                block[:, j] = mat[rows:rows + block.shape[0], kp * 16 + ch]
        out[r, :block.shape[0]] = block
    return out


SMALL = {
    "7x7_stride2_mode1": geometry(15, 15, k=7, s=2, pads=(3, 3, 3, 3), fetch_h=6, fetch_w=4,
                                  repeat=4, repeat_mode=1, small_channel=1),
    "3x3_mode0_tail": geometry(9, 9, repeat=3, small_channel=1),
}


@pytest.mark.parametrize("level", ["cce", "hivm"])
@pytest.mark.parametrize("case", SMALL)
def test_small_channel_mode(case, level):
    f = SMALL[case]
    fm, got, _ = run(1, f, level)
    want = expected_small(fm, f)
    valid = np.isfinite(want)
    np.testing.assert_array_equal(got[valid], want[valid])


@pytest.mark.parametrize("level", ["cce", "hivm"])
@pytest.mark.parametrize("small_channel", [0, 1])
def test_windows_wholly_in_the_pads_read_no_map_byte(small_channel, level):
    """A band's first img2col of a 7x7 stride-2 stem may take every tap from
    the top pads (kernel row 0 over output rows 0 and 1). It reads no byte of
    its map, so npu-insert-sync does not order it after the map's copy; the
    simulator must not count a read either (it counted the map's first two
    bytes, a false race with the copy on 32 cores)."""
    f = geometry(15, 20, k=7, s=2, pads=(3, 3, 3, 3), repeat=1, repeat_mode=1,
                 small_channel=small_channel)
    fm, got, res = run(1, f, level)
    assert not res.hazards
    np.testing.assert_array_equal(got, np.zeros_like(got))
    np.testing.assert_array_equal(got, expected(fm, f))
