// RUN: npu-opt %s --split-input-file --npu-lower-transpose | FileCheck %s
// RUN: npu-opt %s --split-input-file --target=ascend910b --npu-lower-transpose | FileCheck %s --check-prefix=B910

// BERT (12, 512, 64) -> (12, 64, 512) fp16: per batch the whole 512 x 64
// matrix fits (2 x 64 KiB in half of UB on ascend910): one contiguous load,
// one vnchwconv per 16-column block repeating down the 32 row tiles (source
// repeat stride 16 rows x 4 blocks = 64; destination rows 512 elements = 32
// blocks apart), one contiguous store. On ascend910b (96 KiB for a chunk,
// at most 384 rows) the rows are cut in two even chunks of 256 (a loop).
// CHECK-LABEL: func.func @bert
// CHECK: scf.for %{{.*}} = %{{.*}} to %c12
// CHECK: memref.alloc() : memref<32768xf16, "ub">
// CHECK: "cce.copy_gm_to_ub"({{.*}}) {burst_len = 2048 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64}
// CHECK: "cce.vnchwconv"({{.*}}) {dst_offsets = array<i64: 0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448, 480>, dst_rep_stride = 1 : i64, repeat = 32 : i64, src_offsets = array<i64: 0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60>, src_rep_stride = 64 : i64}
// CHECK-COUNT-3: "cce.vnchwconv"
// CHECK: "cce.copy_ub_to_gm"({{.*}}) {burst_len = 2048 : i64, dst_gap = 0 : i64, n_burst = 1 : i64
// B910-LABEL: func.func @bert
// B910: scf.for %{{.*}} = %{{.*}} to %c2
// B910: memref.alloc() : memref<16384xf16, "ub">
// B910: "cce.vnchwconv"({{.*}}) {{{.*}}repeat = 16 : i64
// B910: "cce.copy_ub_to_gm"({{.*}}) {burst_len = 16 : i64, dst_gap = 16 : i64, n_burst = 64 : i64
func.func @bert(%a: memref<12x512x64xf16, "gm">, %b: memref<12x64x512xf16, "gm">) {
  "ascend.transpose"(%a, %b) {permutation = array<i64: 0, 2, 1>} : (memref<12x512x64xf16, "gm">, memref<12x64x512xf16, "gm">) -> ()
  return
}

// -----

// 40 x 20 fp32 (2-D [1, 0]): tiles of 16 rows x 8 columns; rows 0..31 and
// the overlapped tail 24..39, columns 0..15 and the overlapped tail 12..19.
// 20 fp32 source rows are not whole blocks: one copy per row. The 4-byte
// transpose writes each 16-element result row in two halves.
// CHECK-LABEL: func.func @odd_f32
// CHECK: scf.for
// CHECK: "cce.copy_gm_to_ub"({{.*}}) {burst_len = 2 : i64, dst_gap = 0 : i64, n_burst = 1 : i64
// CHECK: "cce.vnchwconv"({{.*}}) {dst_offsets = array<i64: 0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29>, dst_rep_stride = 2 : i64, repeat = 2 : i64
// CHECK: "cce.copy_ub_to_gm"({{.*}}) {burst_len = 4 : i64, dst_gap = 1 : i64, n_burst = 16 : i64
// column tail at 12: source element 12 of each row
// CHECK: arith.addi %{{.*}}, %c12
// CHECK: memref.subview %{{.*}}[480] [312] [1]
// row tail at 24: destination offset 24
// CHECK: memref.subview %{{.*}}[24] [616] [1]
// CHECK: memref.subview %{{.*}}[504] [296] [1]
func.func @odd_f32(%a: memref<40x20xf32, "gm">, %b: memref<20x40xf32, "gm">) {
  "ascend.transpose"(%a, %b) {permutation = array<i64: 1, 0>} : (memref<40x20xf32, "gm">, memref<20x40xf32, "gm">) -> ()
  return
}

// -----

// [0, 2, 1, 3]: (1, 512, 12, 64) -> (1, 12, 512, 64) fp16. A chunk of K
// source rows (12 x 64 elements each) is loaded contiguously; each head j is
// stored with one strided copy: K bursts of 64 elements (4 blocks), skipping
// the other 11 heads (44 blocks) in UB. At most 85 rows fit half of UB: 7
// chunks, evened out to 6 x 74 + 68.
// CHECK-LABEL: func.func @heads
// CHECK: memref.alloc() : memref<56832xf16, "ub">
// CHECK: scf.for
// CHECK: "cce.copy_ub_to_gm"({{.*}}) {burst_len = 4 : i64, dst_gap = 0 : i64, n_burst = 74 : i64, src_gap = 44 : i64}
// CHECK: memref.alloc() : memref<52224xf16, "ub">
// CHECK: "cce.copy_ub_to_gm"({{.*}}) {burst_len = 4 : i64, dst_gap = 0 : i64, n_burst = 68 : i64, src_gap = 44 : i64}
func.func @heads(%a: memref<1x512x12x64xf16, "gm">, %b: memref<1x12x512x64xf16, "gm">) {
  "ascend.transpose"(%a, %b) {permutation = array<i64: 0, 2, 1, 3>} : (memref<1x512x12x64xf16, "gm">, memref<1x12x512x64xf16, "gm">) -> ()
  return
}

// -----

// An image's [16, 4096] -> [4096, 16] transpose whose source columns
// npu-split-cores cut into 4 runs of 1024 (`npu.core_part`): the core's run
// starts at column 1024 * part; its chunks read 16 rows at the full pitch
// (256 blocks a row: 15 read, 241 skipped).
// CHECK-LABEL: func.func @nhwc_columns
// CHECK:         %[[PART:.*]] = arith.remui %arg2, %c4
// CHECK:         arith.muli %[[PART]], %c1024
// CHECK:         scf.for
// CHECK:         "cce.copy_gm_to_ub"({{.*}}) {burst_len = 15 : i64, dst_gap = 0 : i64, n_burst = 16 : i64, src_gap = 241 : i64}
func.func @nhwc_columns(%x: memref<1x16x4096xf16, "gm">, %y: memref<1x4096x16xf16, "gm">, %blk: index {npu.block_idx}) attributes {npu.block_dim = 4 : i64} {
  "ascend.transpose"(%x, %y) {permutation = array<i64: 0, 2, 1>, npu.core_part = array<i64: 4, 1>} : (memref<1x16x4096xf16, "gm">, memref<1x4096x16xf16, "gm">) -> ()
  return
}
