// RUN: npu-opt %s --split-input-file --npu-lower-conv=depthwise=vector | FileCheck %s
// RUN: npu-opt %s --split-input-file --npu-lower-conv=depthwise=cube | FileCheck %s --check-prefix=CUBE
// RUN: npu-opt %s --split-input-file --npu-lower-conv -o %t 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: npu-opt %s --split-input-file --npu-lower-conv=depthwise=vector -o %t 2>&1 | FileCheck %s --check-prefix=FORCED
// The depthwise convs take the vector path when it is asked for; only the
// conv it does not apply to says it stays on the cube.
// FORCED-NOT:  does not apply
// npu-lower-conv on a depthwise conv (layout "nc1hwc0_bd", group_channels = 1)
// on the vector unit (docs/grouped_conv.md): one run of loads (the tile's
// input rows of both C1 blocks, its 18 diagonal weight fractals: weights
// that are a plain argument, not a constant, keep that form; its two bias
// blocks), the weights summed out of the fractals across 8 fractals a repeat
// (block stride 16: one row of each), the bias as the initial value (one
// block read with strides 0), a vmla per kernel point over the rectangle of outputs
// whose tap is inside the map (the center point covers all 6x6, a corner
// 5x5), its weight block read with strides 0, and one store of both blocks.

// CHECK-LABEL: func.func @dw_f16
// CHECK:         "cce.copy_gm_to_ub"({{.*}}) {burst_len = 36 : i64, dst_gap = 0 : i64, n_burst = 2 : i64, src_gap = 0 : i64}
// CHECK:         "cce.copy_gm_to_ub"({{.*}}) {burst_len = 288 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64}
// CHECK:         "cce.copy_gm_to_ub"({{.*}}) {burst_len = 2 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64}
// CHECK:         "cce.vadd"({{.*}}) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 128 : i64, repeat = 2 : i64, src0_blk_stride = 16 : i64, src0_rep_stride = 128 : i64
// CHECK-COUNT-2: "cce.vmuls"({{.*}}) {{{.*}}scalar = 1.000000e+00 : f64, src_blk_stride = 0 : i64, src_rep_stride = 0 : i64}
// CHECK-NEXT:    memref.subview
// CHECK-NEXT:    memref.subview
// CHECK-NEXT:    memref.subview
// CHECK-NEXT:    "cce.vmla"({{.*}}) {dst_blk_stride = 1 : i64, dst_rep_stride = 6 : i64, mask = 96 : i64, repeat = 6 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 6 : i64, src1_blk_stride = 0 : i64, src1_rep_stride = 0 : i64}
// CHECK:         "cce.vmla"({{.*}}) {dst_blk_stride = 1 : i64, dst_rep_stride = 6 : i64, mask = 80 : i64, repeat = 5 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 6 : i64, src1_blk_stride = 0 : i64, src1_rep_stride = 0 : i64}
// CHECK-NOT:     "cce.img2col_l1_to_l0a"
// CHECK:         "cce.copy_ub_to_gm"({{.*}}) {burst_len = 36 : i64, dst_gap = 0 : i64, n_burst = 2 : i64, src_gap = 12 : i64}
// CHECK-NOT:     "ascend.
// CUBE-LABEL:  func.func @dw_f16
// CUBE:          "cce.img2col_l1_to_l0a"
// CUBE-NOT:      "cce.vmla"
// REMARK:      remark: npu-lower-conv: depthwise conv on the vector unit (2 C1 blocks, 3x3 kernel points, f16 accumulation, fractal weights; tiles of 2 blocks x 6 rows, est. {{[0-9]+}} cycles against {{[0-9]+}} on the cube)
func.func @dw_f16(%x: memref<1x2x6x6x16xf16, "gm">, %w: memref<9x2x16x16xf16, "gm">, %b: memref<32xf16, "gm">, %y: memref<1x2x6x6x16xf16, "gm">) {
  "ascend.conv2d"(%x, %w, %b, %y) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0_bd", group_channels = 1 : i64, kernel = array<i64: 3, 3>} : (memref<1x2x6x6x16xf16, "gm">, memref<9x2x16x16xf16, "gm">, memref<32xf16, "gm">, memref<1x2x6x6x16xf16, "gm">) -> ()
  return
}

// -----

// Constant weights (the frontend's `npu.constant` diagonal fractals): on the
// vector unit the argument becomes the compact per-channel operand
// [C1, Kh*Kw, 16], the fractals' diagonals, in place (same position), and a
// tile loads its blocks' weights in one burst of 2 x 9 blocks: 16x fewer
// bytes than the 288 blocks of fractals, and no vadds summing them. The
// cube keeps the fractals.

// CHECK-LABEL: func.func @dw_f16_constant
// CHECK-SAME:    %arg1: memref<2x9x16xf16, "gm"> {npu.constant = dense<5.000000e-01> : tensor<2x9x16xf16>}
// CHECK:         "cce.copy_gm_to_ub"({{.*}}) {burst_len = 36 : i64, dst_gap = 0 : i64, n_burst = 2 : i64, src_gap = 0 : i64}
// CHECK:         "cce.copy_gm_to_ub"({{.*}}) {burst_len = 18 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64} : (memref<2x9x16xf16, strided<[144, 16, 1]>, "gm">
// CHECK-NOT:     "cce.vadd"
// CHECK:         "cce.vmuls"
// CHECK:         "cce.vmla"
// CHECK:         "cce.copy_ub_to_gm"
// CUBE-LABEL:  func.func @dw_f16_constant
// CUBE-SAME:     %arg1: memref<9x2x16x16xf16, "gm"> {npu.constant = dense<5.000000e-01> : tensor<9x2x16x16xf16>}
// CUBE:          "cce.img2col_l1_to_l0a"
// REMARK:      remark: npu-lower-conv: depthwise conv on the vector unit (2 C1 blocks, 3x3 kernel points, f16 accumulation, compact weights; tiles of 2 blocks x 6 rows
func.func @dw_f16_constant(%x: memref<1x2x6x6x16xf16, "gm">, %w: memref<9x2x16x16xf16, "gm"> {npu.constant = dense<0.5> : tensor<9x2x16x16xf16>}, %b: memref<32xf16, "gm">, %y: memref<1x2x6x6x16xf16, "gm">) {
  "ascend.conv2d"(%x, %w, %b, %y) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0_bd", group_channels = 1 : i64, kernel = array<i64: 3, 3>} : (memref<1x2x6x6x16xf16, "gm">, memref<9x2x16x16xf16, "gm">, memref<32xf16, "gm">, memref<1x2x6x6x16xf16, "gm">) -> ()
  return
}

// -----

// An f32 result, stride 2, no pads, no bias: f32 accumulation. The summed
// weights are converted to f32 (each block's 16 weights read 4 times: src
// block stride 0), the input band too; a pixel is two blocks, each half its
// own vector op (block stride 2 in the result, 2 x 2 in the input: stride 2),
// the first (the center point covers every output) a vmul.

// CHECK-LABEL: func.func @dw_f32_s2
// CHECK:         "cce.vconv"({{.*}}) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 64 : i64, repeat = 9 : i64, round_mode = "none", src_blk_stride = 0 : i64, src_rep_stride = 1 : i64}
// CHECK:         "cce.vconv"({{.*}}) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 64 : i64, repeat = 12 : i64, round_mode = "none", src_blk_stride = 1 : i64, src_rep_stride = 4 : i64}
// CHECK-NOT:     "cce.vmuls"
// CHECK-COUNT-2: "cce.vmul"({{.*}}) {dst_blk_stride = 2 : i64, dst_rep_stride = 6 : i64, mask = 24 : i64, repeat = 3 : i64, src0_blk_stride = 4 : i64, src0_rep_stride = 28 : i64, src1_blk_stride = 0 : i64, src1_rep_stride = 0 : i64}
// CHECK-COUNT-16: "cce.vmla"({{.*}}) {dst_blk_stride = 2 : i64, dst_rep_stride = 6 : i64, mask = 24 : i64, repeat = 3 : i64, src0_blk_stride = 4 : i64, src0_rep_stride = 28 : i64
// CHECK-NOT:     "cce.vmla"
// CHECK:         "cce.copy_ub_to_gm"({{.*}}) {burst_len = 18 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 14 : i64}
// REMARK:      remark: npu-lower-conv: depthwise conv on the vector unit (1 C1 blocks, 3x3 kernel points, f32 accumulation
func.func @dw_f32_s2(%x: memref<1x1x7x7x16xf16, "gm">, %w: memref<9x1x16x16xf16, "gm">, %y: memref<1x1x3x3x16xf32, "gm">) {
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0_bd", group_channels = 1 : i64, kernel = array<i64: 3, 3>} : (memref<1x1x7x7x16xf16, "gm">, memref<9x1x16x16xf16, "gm">, memref<1x1x3x3x16xf32, "gm">) -> ()
  return
}

// -----

// Groups of two channels: their fractals are not diagonal, so the cube's
// block-diagonal form even when the vector path is asked for (beside a
// depthwise conv it acts on: a program with none refuses the option).

// CHECK-LABEL: func.func @groups_of_two
// CHECK:         "cce.img2col_l1_to_l0a"
// CHECK-NOT:     "cce.vmla"
// REMARK:      remark: npu-lower-conv: block-diagonal conv on the cube
// FORCED:      remark: npu-lower-conv: depthwise=vector does not apply to this conv
func.func @groups_of_two(%x: memref<1x2x6x6x16xf16, "gm">, %w: memref<9x2x16x16xf16, "gm">, %y: memref<1x2x6x6x16xf16, "gm">) {
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0_bd", group_channels = 2 : i64, kernel = array<i64: 3, 3>} : (memref<1x2x6x6x16xf16, "gm">, memref<9x2x16x16xf16, "gm">, memref<1x2x6x6x16xf16, "gm">) -> ()
  return
}

// CHECK-LABEL: func.func @dw_beside
func.func @dw_beside(%x: memref<1x1x7x7x16xf16, "gm">, %w: memref<9x1x16x16xf16, "gm">, %y: memref<1x1x3x3x16xf32, "gm">) {
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0_bd", group_channels = 1 : i64, kernel = array<i64: 3, 3>} : (memref<1x1x7x7x16xf16, "gm">, memref<9x1x16x16xf16, "gm">, memref<1x1x3x3x16xf32, "gm">) -> ()
  return
}
