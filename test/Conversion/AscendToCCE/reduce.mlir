// RUN: npu-opt %s --split-input-file --npu-lower-reduce | FileCheck %s

// 40 rows of 336 fp16, summed in f32 (the ascend semantics accumulates
// sums in fp32): the rows fit one chunk but the 40 results are cut in whole
// blocks of 16: rows 0..31, then the tail rows 24..39 (8 rows reduced
// twice). Each chunk is converted to f32 (64 lanes a repeat), each row is
// folded onto its first 64 lanes with vadd, one instruction per further
// segment repeating over the rows with a repeat stride of one f32 row (42
// blocks); the last segment has 16 lanes (partial mask). vcadd writes one
// sum per row, rounded once to f16 by vconv.
// CHECK-LABEL: func.func @sum_rows
// CHECK: memref.alloc() : memref<10752xf16, "ub">
// CHECK: memref.alloc() : memref<10752xf32, "ub">
// CHECK: "cce.vconv"({{.*}}) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 64 : i64, repeat = 168 : i64, round_mode = "none", src_blk_stride = 1 : i64, src_rep_stride = 4 : i64}
// CHECK: "cce.vadd"({{.*}}) {dst_blk_stride = 1 : i64, dst_rep_stride = 42 : i64, mask = 64 : i64, repeat = 32 : i64
// CHECK-COUNT-3: "cce.vadd"({{.*}}) {{{.*}}mask = 64 : i64, repeat = 32 : i64
// CHECK: "cce.vadd"({{.*}}) {{{.*}}mask = 16 : i64, repeat = 32 : i64
// CHECK: "cce.vcadd"({{.*}}) {dst_rep_stride = 1 : i64, mask = 64 : i64, repeat = 32 : i64, src_blk_stride = 1 : i64, src_rep_stride = 42 : i64}
// CHECK: "cce.vconv"({{.*}}) {{{.*}}mask = 32 : i64, repeat = 1 : i64, round_mode = "rint"
// CHECK: "cce.copy_ub_to_gm"
// CHECK: memref.subview %{{.*}}[8064] [5376] [1]
// CHECK: memref.subview %arg1[24] [16] [1]
func.func @sum_rows(%a: memref<40x336xf16, "gm">, %b: memref<40xf16, "gm">) {
  "ascend.reduce_sum"(%a, %b) : (memref<40x336xf16, "gm">, memref<40xf16, "gm">) -> ()
  return
}

// -----

// Short rows (32 fp32 = 4 blocks): no fold, vcmax with a 32-lane mask.
// CHECK-LABEL: func.func @max_short
// CHECK-NOT: "cce.vmax"
// CHECK: "cce.vcmax"({{.*}}) {dst_rep_stride = 1 : i64, mask = 32 : i64, repeat = 24 : i64, src_blk_stride = 1 : i64, src_rep_stride = 4 : i64}
func.func @max_short(%a: memref<4x6x32xf32, "gm">, %b: memref<4x6xf32, "gm">) {
  "ascend.reduce_max"(%a, %b) : (memref<4x6x32xf32, "gm">, memref<4x6xf32, "gm">) -> ()
  return
}

// -----

// Rows of 8192 fp16 (512 blocks) exceed the vector repeat stride: each row
// is reduced in column chunks, folded in halves down to one repeat and into
// a per-row accumulator (initialised to -inf for max), then one vcmax over
// the 3 accumulators.
// CHECK-LABEL: func.func @max_long
// CHECK: "cce.vdup"({{.*}}) {{{.*}}repeat = 3 : i64, scalar = 0xFFF0000000000000 : f64}
// CHECK: scf.for
// CHECK: "cce.vmax"({{.*}}) {{{.*}}repeat = 32 : i64
// CHECK: "cce.vmax"({{.*}}) {{{.*}}repeat = 16 : i64
// CHECK: "cce.vcmax"({{.*}}) {dst_rep_stride = 1 : i64, mask = 128 : i64, repeat = 3 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64}
func.func @max_long(%a: memref<3x8192xf16, "gm">, %b: memref<3xf16, "gm">) {
  "ascend.reduce_max"(%a, %b) : (memref<3x8192xf16, "gm">, memref<3xf16, "gm">) -> ()
  return
}

// -----

// Rows of 100 fp16 (not whole blocks): per row one copy of its 96-element
// whole blocks and one copy of the block ending at the row's end (elements
// 84..99); in that block the 12 lanes that repeat elements 84..95 are set to
// -inf, then it is folded onto the row's first block.
// CHECK-LABEL: func.func @max_unaligned
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %c16
// CHECK: "cce.copy_gm_to_ub"({{.*}}) {burst_len = 6 : i64, dst_gap = 0 : i64, n_burst = 1 : i64
// CHECK: arith.addi %{{.*}}, %c84
// CHECK: "cce.copy_gm_to_ub"({{.*}}) {burst_len = 1 : i64, dst_gap = 0 : i64, n_burst = 1 : i64
// CHECK: }
// CHECK: "cce.vdup"({{.*}}) {dst_blk_stride = 1 : i64, dst_rep_stride = 1 : i64, mask = 12 : i64, repeat = 16 : i64, scalar = 0xFFF0000000000000 : f64}
// CHECK: "cce.vmax"({{.*}}) {dst_blk_stride = 1 : i64, dst_rep_stride = 6 : i64, mask = 16 : i64, repeat = 16 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 6 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 1 : i64}
// CHECK: "cce.vcmax"({{.*}}) {dst_rep_stride = 1 : i64, mask = 96 : i64, repeat = 16 : i64
func.func @max_unaligned(%a: memref<16x100xf16, "gm">, %b: memref<16xf16, "gm">) {
  "ascend.reduce_max"(%a, %b) : (memref<16x100xf16, "gm">, memref<16xf16, "gm">) -> ()
  return
}

// -----

// Rows of 2048 f32 (256 blocks, over the 255-block repeat stride), whole
// 64-lane segments: two levels of vcadd (npu.passes.reduce_segments). Each
// chunk of 8 rows is one copy (one burst); one vcadd per segment along the
// flat chunk (repeat stride one segment: 256 repeats, cut at 248 so the
// second instruction's results start on a block), then one over each row's
// 32 partials (repeat stride 4 blocks). No folds, no per-row copies.
// CHECK-LABEL: func.func @rows_past_the_stride
// CHECK: "cce.copy_gm_to_ub"({{.*}}) {burst_len = 2048 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64}
// CHECK-NOT: cce.copy_gm_to_ub
// CHECK-NOT: cce.vadd
// CHECK: "cce.vcadd"({{.*}}) {dst_rep_stride = 1 : i64, mask = 64 : i64, repeat = 248 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64}
// CHECK: "cce.vcadd"({{.*}}) {dst_rep_stride = 1 : i64, mask = 64 : i64, repeat = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64}
// CHECK: "cce.vcadd"({{.*}}) {dst_rep_stride = 1 : i64, mask = 32 : i64, repeat = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 4 : i64}
// CHECK: "cce.copy_ub_to_gm"
func.func @rows_past_the_stride(%a: memref<64x2048xf32, "gm">, %b: memref<64xf32, "gm">) {
  "ascend.reduce_sum"(%a, %b) : (memref<64x2048xf32, "gm">, memref<64xf32, "gm">) -> ()
  return
}

// -----

// Rows of 2112 f32 (264 blocks): 33 segment partials would not fill whole
// blocks, so two pieces of 1056 per row. Each piece of the chunk's 8 rows
// is one copy (a burst per row, the other piece as the GM gap) into an
// area of its own (row stride 132 blocks); folds per area, one fold of
// area 1 onto area 0, one vcadd over area 0. No per-row copies.
// CHECK-LABEL: func.func @rows_past_the_stride_in_pieces
// CHECK-COUNT-2: "cce.copy_gm_to_ub"({{.*}}) {burst_len = 132 : i64, dst_gap = 0 : i64, n_burst = 8 : i64, src_gap = 132 : i64}
// CHECK-NOT: cce.copy_gm_to_ub
// CHECK: "cce.vadd"({{.*}}) {dst_blk_stride = 1 : i64, dst_rep_stride = 132 : i64, mask = 64 : i64, repeat = 8 : i64
// CHECK: "cce.vcadd"({{.*}}) {dst_rep_stride = 1 : i64, mask = 64 : i64, repeat = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 132 : i64}
// CHECK: "cce.copy_ub_to_gm"
func.func @rows_past_the_stride_in_pieces(%a: memref<64x2112xf32, "gm">, %b: memref<64xf32, "gm">) {
  "ascend.reduce_sum"(%a, %b) : (memref<64x2112xf32, "gm">, memref<64xf32, "gm">) -> ()
  return
}
