// RUN: npu-opt %s --split-input-file --npu-lower-pool=max-rows=2 | FileCheck %s

// MaxPool 3x3 stride 2 pads 1 on 2x20 planes of 16x16 f16, two output rows a
// tile: 40 planes are 2 groups of 16 and one of 8. Band 0 reads the top pad
// (its own loop over the full groups, then the partial group); bands 1-3
// read only input rows and run as one loop (2 groups x 3 bands, then 3 for
// the partial group). Per tile: each group's 5 input rows (5 blocks of a
// plane, plane stride 16 blocks: gap 11) in one copy, vnchwconv to pixel
// blocks (the partial group repeats its last plane's row), the kw points
// along the 5 rows (block stride 2 = sw, the left point skipping output
// column 0: mask 7 blocks), the kh points down the 2 output rows (repeat
// stride 2 rows of 8 pooled columns), back to planes, one strided store.
// CHECK-LABEL: func.func @bands
// CHECK: scf.for %{{.*}} = %{{.*}} to %c2
// CHECK: "cce.vnchwconv"
// CHECK: }
// CHECK: src_offsets = array<i64: 0, 4, 8, 12, 16, 20, 24, 28, 28, 28, 28, 28, 28, 28, 28, 28>
// CHECK: scf.for %{{.*}} = %{{.*}} to %c6
// CHECK: "cce.copy_gm_to_ub"({{.*}}) {burst_len = 5 : i64, dst_gap = 0 : i64, n_burst = 16 : i64, src_gap = 11 : i64}
// CHECK: "cce.vnchwconv"({{.*}}) {dst_offsets = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15>, dst_rep_stride = 16 : i64, repeat = 5 : i64, src_offsets = array<i64: 0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 75>, src_rep_stride = 1 : i64}
// CHECK: "cce.vmax"({{.*}}) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 128 : i64, repeat = 5 : i64, src0_blk_stride = 2 : i64, src0_rep_stride = 16 : i64, src1_blk_stride = 2 : i64, src1_rep_stride = 16 : i64}
// CHECK: "cce.vmax"({{.*}}) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 112 : i64, repeat = 5 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 2 : i64, src1_rep_stride = 16 : i64}
// CHECK: "cce.vmax"({{.*}}) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 128 : i64, repeat = 2 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 16 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 16 : i64}
// CHECK: "cce.vmax"
// CHECK: "cce.vnchwconv"({{.*}}) {dst_offsets = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15>, dst_rep_stride = 1 : i64, repeat = 1 : i64, src_offsets = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15>, src_rep_stride = 16 : i64}
// CHECK: "cce.copy_ub_to_gm"({{.*}}) {burst_len = 1 : i64, dst_gap = 3 : i64, n_burst = 16 : i64, src_gap = 0 : i64}
// CHECK: scf.for %{{.*}} = %{{.*}} to %c3
// CHECK-NOT: ascend.pool2d
func.func @bands(%x: memref<2x20x16x16xf16, "gm">, %y: memref<2x20x8x8xf16, "gm">) {
  "ascend.pool2d"(%x, %y) {kind = "max", kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = 1 : i64} : (memref<2x20x16x16xf16, "gm">, memref<2x20x8x8xf16, "gm">) -> ()
  return
}

// -----

// f32: a vnchwconv row holds 8 pixels, so each pixel's 16 planes go to two
// images (planes 0-7 at block t, planes 8-15 at block 36 + t: the band's
// 4 x 9 pixels); 36 pixels are 4 whole blocks, and the last block of each
// plane's run is loaded and transposed on its own (one repeat). An avg pool
// without pads scales once by 1/4; the 2 x 4 outputs of 16 planes are
// stored in one copy.
// CHECK-LABEL: func.func @avg_f32
// CHECK: "cce.vnchwconv"({{.*}}) {dst_offsets = array<i64: 0, 36, 1, 37, 2, 38, 3, 39, 4, 40, 5, 41, 6, 42, 7, 43>, dst_rep_stride = 8 : i64, repeat = 4 : i64
// CHECK: "cce.vnchwconv"({{.*}}) {dst_offsets = array<i64: 0, 36, 1, 37, 2, 38, 3, 39, 4, 40, 5, 41, 6, 42, 7, 43>, dst_rep_stride = 8 : i64, repeat = 1 : i64
// CHECK: "cce.vadd"({{.*}}) {dst_blk_stride = 1 : i64, dst_rep_stride = 4 : i64, mask = 32 : i64, repeat = 4 : i64, src0_blk_stride = 2 : i64, src0_rep_stride = 9 : i64, src1_blk_stride = 2 : i64, src1_rep_stride = 9 : i64}
// CHECK: "cce.vmuls"({{.*}}) {{{.*}}scalar = 2.500000e-01 : f64
// CHECK: "cce.copy_ub_to_gm"({{.*}}) {burst_len = 1 : i64, dst_gap = 0 : i64, n_burst = 16 : i64, src_gap = 0 : i64}
func.func @avg_f32(%x: memref<1x16x5x9xf32, "gm">, %y: memref<1x16x2x4xf32, "gm">) {
  "ascend.pool2d"(%x, %y) {kind = "avg", kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, count_include_pad = 0 : i64} : (memref<1x16x5x9xf32, "gm">, memref<1x16x2x4xf32, "gm">) -> ()
  return
}

// -----

// An NC1HWC0 max pool whose 8 output rows npu-split-cores cut into 4 runs of
// 2 (`npu.core_part`): the first run reads input rows 0-3 (the top pad), the
// last rows 11-15 (offset 11 * 16 * 16 = 2816), an inner run 5 rows from
// 2 * (2 * part) - 1, at a run-time offset.
// CHECK-LABEL: func.func @pool_rows
// CHECK:         %[[PART:.*]] = arith.remui %arg2, %c4
// CHECK:         arith.cmpi eq, %[[PART]], %c0
// CHECK-NEXT:    scf.if
// CHECK:         "cce.copy_gm_to_ub"{{.*}} : (memref<1024xf16, strided<[1]>, "gm">
// CHECK:         } else {
// CHECK:         arith.cmpi eq, %[[PART]], %c3
// CHECK-NEXT:    scf.if
// CHECK:         "cce.copy_gm_to_ub"{{.*}} : (memref<1280xf16, strided<[1], offset: 2816>, "gm">
// CHECK:         } else {
// CHECK:         arith.muli %[[PART]], %c2
// CHECK:         "cce.copy_gm_to_ub"{{.*}} : (memref<1280xf16, strided<[1], offset: ?>, "gm">
func.func @pool_rows(%x: memref<1x1x16x16x16xf16, "gm">, %y: memref<1x1x8x8x16xf16, "gm">, %blk: index {npu.block_idx}) attributes {npu.block_dim = 4 : i64} {
  "ascend.pool2d"(%x, %y) {kind = "max", kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, count_include_pad = 1 : i64, layout = "nc1hwc0", npu.core_part = array<i64: 4, 1>} : (memref<1x1x16x16x16xf16, "gm">, memref<1x1x8x8x16xf16, "gm">) -> ()
  return
}
