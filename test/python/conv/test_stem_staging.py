"""The 224 stem reading its NCHW image (bench/conv.py's "stem image" row):
how its rows are staged GM -> UB -> L1 (image_map.py). Each chunk's flag
holds MTE2 for a GM latency and the staging runs back to back there, so
chunks take the UB the drain slots leave (`longest_chunk`); the run's
first segment loads all its rows during the first band, ahead of that
band's stores on MTE3, and the next segment's rows after them."""

from __future__ import annotations

import re

import numpy as np

from mlir import ir

from npu.ir import make_context, ops_named, parse_module
from npu.pipeline import run_pipeline
from npu.simulator import simulate
from npu.target import get_target

H = W = 224
HO = WO = 112


def _stem(emit: str) -> tuple:
    tx, tw = f'memref<1x3x{H}x{W}xf16, "gm">', 'memref<13x4x16x16xf16, "gm">'
    tb, ty = 'memref<64xf16, "gm">', f'memref<1x4x{HO}x{WO}x16xf16, "gm">'
    text = (f'func.func @conv(%x: {tx}, %w: {tw} {{npu.constant = dense<0.0> : '
            f'tensor<13x4x16x16xf16>}}, %b: {tb} {{npu.constant = dense<0.0> : tensor<64xf16>}}, '
            f'%y: {ty}) {{\n'
            f'  "ascend.conv2d"(%x, %w, %b, %y) {{strides = array<i64: 2, 2>, pads = array<i64: '
            f'3, 3, 3, 3>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0_c4", '
            f'kernel = array<i64: 7, 7>}} : ({tx}, {tw}, {tb}, {ty}) -> ()\n  return\n}}\n')
    target = get_target("ascend910")
    module = parse_module(text, make_context())
    run_pipeline(module, f"npu-lower{{cores=1{emit}}}", target)
    return module, target


def test_rows_staged_in_long_chunks_and_first_segment_before_its_stores():
    cce = str(_stem(" emit=cce")[0])
    ops = re.findall(r'"cce\.(vnchwconv|copy_ub_to_gm)"(.*)', cce)
    # one vnchwconv per chunk: its repeat is the chunk's 16-pixel blocks
    blocks = [int(re.search(r"repeat = (\d+)", rest).group(1)) if name == "vnchwconv" else None
              for name, rest in ops]
    # a band's 6 new rows (1344 pixels) in one chunk (before: 1024 at most)
    assert 6 * W // 16 in blocks, blocks
    assert sum(b is not None for b in blocks) <= 50, blocks  # before: 86 chunks
    # before the first band's stores: the first segment's rows exactly (bands
    # 0..2: input rows 0..7, then 6 a band), not the next segment's first piece
    first_store = blocks.index(None)
    assert sum(blocks[:first_store]) == 20 * W // 16, blocks[:first_store + 1]


def _mte3_sequence(cce: str, letters: dict[str, str]) -> str:
    """The `cce` ops named in `letters` in program order, one letter each,
    with "F" for every set_flag MTE3 sets (after a store or a staging copy)."""
    pattern = r'"cce\.(' + "|".join(letters) + r'|set_flag)"\(\)? ?(\{[^}]*\})?'
    seq = ""
    for name, attrs in re.findall(pattern, cce):
        if name != "set_flag":
            seq += letters[name]
        elif 'src = "MTE3"' in attrs:
            seq += "F"
    return seq


def test_last_bands_whose_slots_return_store_side_by_side():
    """Of the 38 bands (6 drain slots), bands 33 and 34 (the last two whose
    slots later drains take again) drain both halves (L0C -> UB) first and
    then store them next to each other, so no set_flag freeing a slot
    splits their stores on MTE3 (`ConvDrain.stores_paired`); the last two
    bands drain and store block by block (`by_block`); every other band
    stores each half right after its drain, the last three with no flag
    after their stores at all."""
    cce = str(_stem(" emit=cce")[0])
    seq = _mte3_sequence(cce, {"copy_l0c_to_ub": "D", "copy_ub_to_gm": "S"})
    assert seq.replace("F", "") == "DSDS" * 33 + "DDSS" * 2 + "DSDS" + "DS" * 8, seq
    assert seq.count("DDSSF") == 2 and seq.endswith("DSDS" + "DS" * 8), seq
    stores = re.findall(r'"cce\.copy_ub_to_gm".*n_burst = (\d+)', cce)
    assert stores[-9:] == ["2"] + ["1"] * 8, stores  # one Cout block a store


def test_first_img2col_reads_only_its_windows_rows():
    """The access analysis bounds an img2col's read of its map by the rows
    its windows touch: the stem's first img2col (the first band's 3 output
    rows, kernel row 3 of the folded form; its map holds 8 input rows)
    reads input rows 0..4 only, so npu-insert-sync makes it wait for the staging chunk holding
    them, not every chunk of the band (before: the whole map operand; the
    first mad at cycle 1,471, now 1,275)."""
    from npu.analysis.access import AccessAnalysis

    module = _stem(" emit=cce")[0]
    analysis = AccessAnalysis(get_target("ascend910"))
    ops = ops_named(module.operation, "cce.img2col_l1_to_l0a")
    first = ops[0]
    fm = ir.MemRefType(first.operands[0].type)
    rows, width = fm.shape[1], fm.shape[2]
    (read,) = analysis.access(first).reads
    assert (rows, read.length) == (8, 5 * width * 32), (rows, read.length)
    # the first band's 13 img2cols: 5 or 6 rows each, from row 0, 1, 2 or 3 on
    reads = [analysis.access(op).reads[0] for op in ops[:13]]
    assert {r.length // (width * 32) for r in reads} == {5, 6}, reads
    assert len({str(r.start) for r in reads}) == 4, reads


def test_store_sets_share_the_staging_copies():
    """A set_flag right after a GM store holds MTE3 for the store's GM
    latency (~350 cycles); npu-insert-sync sets a store's flag after the
    next staging copy (UB -> L1) instead where that comes before the
    store's consumer (`insert_sync.store_sets`): of the four sets right
    after a store before, two are left (the last bands', no staging copy
    after them)."""
    cce = str(_stem(" emit=cce")[0])
    seq = _mte3_sequence(cce, {"copy_ub_to_gm": "S", "copy_ub_to_l1": "L"})
    assert seq.count("SF") == 2, seq
    assert seq.count("S") == 80, seq


def test_chunks_mix_half_rate_img2cols():
    """The folded stem's K fractals in chunk order (`stem_fold.k_order`):
    the 5 small-channel (half-rate) fractals spread so no chunk of 3 has
    more than 2; the weights follow the same order (numerics: the image
    form tests against onnxruntime)."""
    from npu.costmodel.conv.stem_fold import k_order

    order = k_order(7, 13, True)
    assert sorted(order) == list(range(13)) and order[-1] == 12, order
    small = [f >= 7 and f < 12 for f in order]
    assert max(sum(small[j:j + 3]) for j in range(0, 12, 3)) == 2, order
    cce = str(_stem(" emit=cce")[0])
    modes = re.findall(r'"cce\.img2col_l1_to_l0a".*?\{([^}]*)\}', cce)[:13]
    assert ["small_channel" in m for m in modes] == small, modes


def test_stem_image_cycles():
    """bench/conv.py's stem image row: 51,441 cycles before (1.71x its
    ideal of 30,086); 49,579 with the long chunks and the first segment's
    order; 48,925 with the weights in the runs of the first band's second
    chunk and the next band's rows (1.63x); 48,389 with the stores of the
    last two bands whose slots return side by side; 48,260 with the last
    two bands drained block by block; 48,225 with the first of them drained
    half by half right after its halves' last mads (1.60x; the target is
    1.6x: 48,137); 48,179 with each img2col waiting for the staging chunk of
    its rows only (the first mad at 1,275, not 1,471); 47,345 with the
    small-channel fractals spread over the chunks (`stem_fold.k_order`: no
    chunk of three half-rate img2cols holding the cube); 47,234 with the
    stores' set_flags moved to the next staging copy's (`store_sets`)."""
    module, target = _stem("")
    inputs = [np.zeros((1, 3, H, W), np.float16), np.zeros((13, 4, 16, 16), np.float16),
              np.zeros(64, np.float16), np.zeros((1, 4, HO, WO, 16), np.float16)]
    res = simulate(module, inputs, target=target, numerics=False)
    assert res.cycles <= 47_250, res.cycles
