// RUN: npu-opt %s --split-input-file --npu-lower-conv | FileCheck %s
// RUN: npu-opt %s --split-input-file --npu-lower-conv -o %t 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: npu-opt %s --split-input-file --npu-lower-conv=remarks=true -o %t 2>&1 | FileCheck %s --check-prefix=ESTIMATE
// Without remarks=true a dense conv says nothing (bench/fusion_estimates.py reads the estimate):
// REMARK-NOT: remark: npu-lower-conv: bands of
// npu-lower-conv: a 3x3 pad-1 conv of a 6x6 map with 2 C1 blocks (K = 2*9
// fractals) into one Cout block, one band: the f32 bias repeated to one
// 256-byte repeat in UB (one GM copy of row 0; UB copies on the vector unit
// fill rows 1 and 2-3 once the first loads are out, before the mad), the map per C1 block to L1, then the
// weights (18 fractals) to L1 in the same run of loads, one img2col per M fractal of the band along K (repeat
// mode 0: 3 M fractals, fewer than the chunk's 18 K fractals; each starts at
// its first window, 16 apart in raster order: (-1, -1), (1, 3), (4, 1)), the
// weights to L0B, one mad over the chunk, then L0C -> UB, the bias vadd and
// the store of the band's 36 windows x 16 channels.

// ESTIMATE: conv.mlir:[[@LINE+21]]:3: remark: npu-lower-conv: bands of 6 rows, 1 Cout blocks per L0C tile, 18 kernel points per chunk, weights resident; est. {{[0-9]+}} cycles
// CHECK-LABEL: func.func @conv
// CHECK:         "cce.copy_gm_to_ub"(%arg2{{.*}}) {burst_len = 2 : i64, dst_gap = 6 : i64, n_burst = 1 : i64, src_gap = 0 : i64}
// CHECK-NOT:     "cce.copy_gm_to_ub"(%arg2
// CHECK-COUNT-2: "cce.copy_gm_to_l1"({{.*}}) {burst_len = 36 : i64
// CHECK:         "cce.copy_gm_to_l1"({{.*}}) {burst_len = 288 : i64
// CHECK:         "cce.img2col_l1_to_l0a"({{.*}}) {c1 = 0 : i64, dilation_h = 1 : i64, dilation_w = 1 : i64, dst_stride = 1 : i64, fetch_h = 0 : i64, fetch_w = 0 : i64, fm_h = 6 : i64, fm_w = 6 : i64, kernel_h = 3 : i64, kernel_w = 3 : i64, left_top_h = -1 : i64, left_top_w = -1 : i64, pad_bottom = 1 : i64, pad_left = 1 : i64, pad_right = 1 : i64, pad_top = 1 : i64, repeat = 18 : i64, repeat_mode = 0 : i64, stride_h = 1 : i64, stride_w = 1 : i64}
// CHECK-NEXT:    memref.subview
// CHECK-NEXT:    "cce.img2col_l1_to_l0a"({{.*}}) {c1 = 0 : i64, {{.*}} left_top_h = 1 : i64, left_top_w = 3 : i64, {{.*}} repeat = 18 : i64, repeat_mode = 0 : i64
// CHECK-NEXT:    memref.subview
// CHECK-NEXT:    "cce.img2col_l1_to_l0a"({{.*}}) {c1 = 0 : i64, {{.*}} left_top_h = 4 : i64, left_top_w = 1 : i64, {{.*}} repeat = 18 : i64, repeat_mode = 0 : i64
// CHECK-NOT:     "cce.img2col_l1_to_l0a"
// CHECK:         "cce.load_l1_to_l0b"({{.*}}) {dst_stride = 1 : i64, repeat = 18 : i64, src_stride = 1 : i64, transpose = false}
// CHECK:         "cce.copy_ub_to_ub"({{.*}}) {burst_len = 2 : i64, dst_gap = 6 : i64, n_burst = 1 : i64, src_gap = 6 : i64}
// CHECK:         "cce.copy_ub_to_ub"({{.*}}) {burst_len = 4 : i64, dst_gap = 4 : i64, n_burst = 1 : i64, src_gap = 4 : i64}
// CHECK:         "cce.mad"({{.*}}) {accumulate = false, k = 16 : i64, m = 48 : i64, n = 288 : i64}
// CHECK:         "cce.copy_l0c_to_ub"
// CHECK:         "cce.vadd"({{.*}}) {{{.*}}mask = 64 : i64, repeat = 12 : i64, {{.*}}src1_rep_stride = 0 : i64}
// CHECK:         "cce.copy_ub_to_gm"({{.*}}) {burst_len = 72 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 24 : i64}
// CHECK-NOT:     "ascend.
func.func @conv(%x: memref<1x2x6x6x16xf16, "gm">, %w: memref<18x1x16x16xf16, "gm">, %b: memref<16xf32, "gm">, %y: memref<1x1x6x6x16xf32, "gm">) {
  "ascend.conv2d"(%x, %w, %b, %y) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 3, 3>} : (memref<1x2x6x6x16xf16, "gm">, memref<18x1x16x16xf16, "gm">, memref<16xf32, "gm">, memref<1x1x6x6x16xf32, "gm">) -> ()
  return
}

// -----

// The small-channel form: a 3-channel 7x7 stride-2 stem reads 4 kernel points
// per K fractal (ceil(49 / 4) = 13 img2cols, small_channel = 1), but the
// last, kernel point 48 alone, in the normal mode (its 16 slots, 3..15
// zero: twice the rate).

// CHECK-LABEL: func.func @stem
// CHECK:         "cce.img2col_l1_to_l0a"({{.*}}fetch_h = 0 : i64, fetch_w = 0 : i64{{.*}}small_channel = 1 : i64
// CHECK:         "cce.img2col_l1_to_l0a"({{.*}}fetch_h = 0 : i64, fetch_w = 4 : i64{{.*}}small_channel = 1 : i64
// CHECK-COUNT-10: "cce.img2col_l1_to_l0a"({{.*}}small_channel = 1 : i64
// CHECK:         "cce.img2col_l1_to_l0a"({{.*}}fetch_h = 6 : i64, fetch_w = 6 : i64{{.*}}repeat_mode = 1 : i64, stride_h
// CHECK:         "cce.load_l1_to_l0b"
func.func @stem(%x: memref<1x1x16x16x16xf16, "gm">, %w: memref<13x1x16x16xf16, "gm">, %y: memref<1x1x8x8x16xf16, "gm">) {
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 2, 2>, pads = array<i64: 3, 3, 3, 3>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0_c4", kernel = array<i64: 7, 7>} : (memref<1x1x16x16x16xf16, "gm">, memref<13x1x16x16xf16, "gm">, memref<1x1x8x8x16xf16, "gm">) -> ()
  return
}

// -----

// The small-channel form on the NCHW image itself (3 channels, 21 wide):
// each channel's pixel run GM -> UB (one band of 20*21 = 420 pixels: 26
// whole blocks, then one block read back from the run's end), channel row 3
// zeroed once, one vnchwconv to 16-slot pixels (slots 4..15 from the zero
// row 3: src_offsets 0, 32, 64, then 96 x 13), UB -> L1 (the tail's 4 pixels
// apart), then img2col in the small-channel mode.
// CHECK-LABEL: func.func @stem_image
// CHECK:         "cce.vdup"
// CHECK:         "cce.copy_gm_to_ub"({{.*}}burst_len = 26 : i64
// CHECK:         "cce.copy_gm_to_ub"({{.*}}burst_len = 1 : i64
// CHECK:         "cce.vnchwconv"({{.*}}dst_rep_stride = 16 : i64{{.*}}repeat = 27 : i64, src_offsets = array<i64: 0, 32, 64, 96, 96, 96, 96, 96, 96, 96, 96, 96, 96, 96, 96, 96>
// CHECK:         "cce.copy_ub_to_l1"({{.*}}burst_len = 416 : i64
// CHECK:         "cce.copy_ub_to_l1"({{.*}}burst_len = 4 : i64
// CHECK:         "cce.img2col_l1_to_l0a"({{.*}}small_channel = 1 : i64
// CHECK-NOT:     "cce.copy_gm_to_l1"({{.*}}memref<1x1x
func.func @stem_image(%x: memref<1x3x20x21xf16, "gm">, %w: memref<13x1x16x16xf16, "gm">, %y: memref<1x1x10x11x16xf16, "gm">) {
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 2, 2>, pads = array<i64: 3, 3, 3, 3>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0_c4", kernel = array<i64: 7, 7>} : (memref<1x3x20x21xf16, "gm">, memref<13x1x16x16xf16, "gm">, memref<1x1x10x11x16xf16, "gm">) -> ()
  return
}

// -----

// Bands of an NCHW image share L1 maps: 5 bands of 8 output rows (a 7x7/2
// band reads 21 input rows, 5 of them the next band's too) in segments of
// 2 bands, each band a row window of its segment's map (34, 37 and 19
// rows). A map is loaded a piece per band: the rows its first band reads
// first, the next band's rows (and the next segment's) during a band.
// CHECK-LABEL: func.func @stem_image_segments
// CHECK:         %[[S0:.*]] = memref.alloc() : memref<1x34x112x16xf16, "l1">
// CHECK:         memref.subview %[[S0]][0, 0, 0, 0] [1, 18, 112, 16]
// CHECK:         "cce.img2col_l1_to_l0a"
// CHECK:         memref.subview %[[S0]][0, 18, 0, 0] [1, 16, 112, 16]
// CHECK:         %[[S1:.*]] = memref.alloc() : memref<1x37x112x16xf16, "l1">
// CHECK:         memref.subview %[[S1]][0, 0, 0, 0] [1, 21, 112, 16]
// CHECK:         memref.subview %[[S0]][0, 13, 0, 0] [1, 21, 112, 16]
// CHECK:         memref.subview %[[S1]][0, 21, 0, 0] [1, 16, 112, 16]
// CHECK:         memref.subview %[[S1]][0, 0, 0, 0] [1, 21, 112, 16]
// CHECK:         %[[S2:.*]] = memref.alloc() : memref<1x19x112x16xf16, "l1">
// CHECK:         memref.subview %[[S1]][0, 16, 0, 0] [1, 21, 112, 16]
// CHECK:         memref.subview %[[S2]][0, 0, 0, 0] [1, 19, 112, 16]
// CHECK-NOT:     memref.alloc() : memref<1x{{[0-9]+}}x112x16xf16, "l1">
func.func @stem_image_segments(%x: memref<1x3x80x112xf16, "gm">, %w: memref<13x4x16x16xf16, "gm">, %y: memref<1x4x40x56x16xf16, "gm">) {
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 2, 2>, pads = array<i64: 3, 3, 3, 3>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0_c4", kernel = array<i64: 7, 7>} : (memref<1x3x80x112xf16, "gm">, memref<13x4x16x16xf16, "gm">, memref<1x4x40x56x16xf16, "gm">) -> ()
  return
}

// -----

// The block-diagonal form (depthwise): Cout block j's img2col reads input
// block j (c1 = j) and reduces over its 9 kernel points only.
// CHECK-LABEL: func.func @depthwise
// CHECK:     "cce.img2col_l1_to_l0a"({{.*}}c1 = 0 : i64
// CHECK-NOT: "cce.img2col_l1_to_l0a"({{.*}}c1 = 1 : i64
// CHECK:     "cce.mad"
// CHECK:     "cce.img2col_l1_to_l0a"({{.*}}c1 = 1 : i64
// REMARK: conv.mlir:[[@LINE+2]]:3: remark: npu-lower-conv: block-diagonal conv on the cube (2 Cout blocks, each over its own input block's 9 kernel points
func.func @depthwise(%x: memref<1x2x7x7x16xf16, "gm">, %w: memref<9x2x16x16xf16, "gm">, %y: memref<1x2x4x4x16xf16, "gm">) {
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0_bd", kernel = array<i64: 3, 3>} : (memref<1x2x7x7x16xf16, "gm">, memref<9x2x16x16xf16, "gm">, memref<1x2x4x4x16xf16, "gm">) -> ()
  return
}

// -----

// A conv whose 12 output rows npu-split-cores cut into 3 runs of 4 over the
// cores (`npu.core_part = [parts, inner]`): the part is the block index mod
// 3; the first run's map has the top pad (5 input rows from row 0), the last
// run's the bottom pad (5 rows from row 7, offset 7 * 8 * 16 = 896), the
// inner run's none (6 rows from 4 * part - 1, a run-time offset).
// CHECK-LABEL: func.func @conv_rows
// CHECK:         %[[PART:.*]] = arith.remui %arg3, %c3
// CHECK:         arith.cmpi eq, %[[PART]], %c0
// CHECK-NEXT:    scf.if
// CHECK:         "cce.copy_gm_to_l1"{{.*}} : (memref<1x1x5x8x16xf16, strided<[1536, 1536, 128, 16, 1]>, "gm">
// CHECK:         "cce.img2col_l1_to_l0a"({{.*}}) {{{.*}}fm_h = 5 : i64{{.*}}pad_bottom = 0 : i64{{.*}}pad_top = 1 : i64
// CHECK:         } else {
// CHECK:         arith.cmpi eq, %[[PART]], %c2
// CHECK-NEXT:    scf.if
// CHECK:         "cce.copy_gm_to_l1"{{.*}} : (memref<1x1x5x8x16xf16, strided<[1536, 1536, 128, 16, 1], offset: 896>, "gm">
// CHECK:         "cce.img2col_l1_to_l0a"({{.*}}) {{{.*}}fm_h = 5 : i64{{.*}}pad_bottom = 1 : i64{{.*}}pad_top = 0 : i64
// CHECK:         } else {
// CHECK:         arith.muli %[[PART]], %c4
// CHECK:         "cce.copy_gm_to_l1"{{.*}} : (memref<1x1x6x8x16xf16, strided<[1536, 1536, 128, 16, 1], offset: ?>, "gm">
// CHECK:         "cce.img2col_l1_to_l0a"({{.*}}) {{{.*}}fm_h = 6 : i64{{.*}}pad_bottom = 0 : i64{{.*}}pad_top = 0 : i64
func.func @conv_rows(%x: memref<1x1x12x8x16xf16, "gm">, %w: memref<9x1x16x16xf16, "gm">, %y: memref<1x1x12x8x16xf32, "gm">, %blk: index {npu.block_idx}) attributes {npu.block_dim = 3 : i64} {
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 3, 3>, npu.core_part = array<i64: 3, 1>} : (memref<1x1x12x8x16xf16, "gm">, memref<9x1x16x16xf16, "gm">, memref<1x1x12x8x16xf32, "gm">) -> ()
  return
}

// -----

// One store per super tile (`one_store`): a 1x1 64 -> 256 conv on 28x28 with
// an f16 result, bands of 4 rows (7 M fractals), all 16 Cout blocks in one
// super tile: its two accumulators (8 blocks each) drain into one UB slot of
// 16 x 7 fractals, which leaves in one store of 16 bursts (each store's flag
// holds MTE3 for the GM latency). The band's one chunk is its last: each
// half drains right after its own mad (one flag after both mads held the
// first half's drain for the second's). The slots are all the conv holds in
// UB: four of them, and the stores go two bands at a time, side by side (one
// flag, one GM latency, for both: `stores_pair`).
// CHECK-LABEL: func.func @one_store
// CHECK-COUNT-4: memref.alloc() : memref<28672xf16, "ub">
// CHECK-NOT:     memref.alloc() : memref<{{[0-9]+}}xf16, "ub">
// CHECK:         "cce.mad"
// CHECK-NOT:     "cce.mad"
// CHECK:         "cce.copy_l0c_to_ub"({{.*}}) {burst_len = 1792 : i64{{.*}}convert = "f32_to_f16"
// CHECK-NOT:     "cce.copy_ub_to_gm"
// CHECK:         "cce.mad"
// CHECK-NOT:     "cce.copy_ub_to_gm"
// CHECK:         "cce.copy_l0c_to_ub"({{.*}}) {burst_len = 1792 : i64{{.*}}convert = "f32_to_f16"
// CHECK-NOT:     "cce.copy_ub_to_gm"
// CHECK:         "cce.mad"
// CHECK-NOT:     "cce.copy_ub_to_gm"
// CHECK:         "cce.copy_l0c_to_ub"
// CHECK-NOT:     "cce.copy_ub_to_gm"
// CHECK:         "cce.mad"
// CHECK-NOT:     "cce.copy_ub_to_gm"
// CHECK:         "cce.copy_l0c_to_ub"
// CHECK-NOT:     "cce.copy_l0c_to_ub"
// CHECK:         "cce.copy_ub_to_gm"({{.*}}) {burst_len = 112 : i64, dst_gap = 672 : i64, n_burst = 16 : i64, src_gap = 0 : i64} : (memref<28672xf16
// CHECK-NOT:     "cce.mad"
// CHECK-NOT:     "cce.copy_l0c_to_ub"
// CHECK:         "cce.copy_ub_to_gm"({{.*}}) {burst_len = 112 : i64, dst_gap = 672 : i64, n_burst = 16 : i64, src_gap = 0 : i64} : (memref<28672xf16
// CHECK:         "cce.mad"
func.func @one_store(%x: memref<1x4x28x28x16xf16, "gm">, %w: memref<4x16x16x16xf16, "gm">, %b: memref<256xf16, "gm">, %y: memref<1x16x28x28x16xf16, "gm">) {
  "ascend.conv2d"(%x, %w, %b, %y) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 1, 1>} : (memref<1x4x28x28x16xf16, "gm">, memref<4x16x16x16xf16, "gm">, memref<256xf16, "gm">, memref<1x16x28x28x16xf16, "gm">) -> ()
  return
}
