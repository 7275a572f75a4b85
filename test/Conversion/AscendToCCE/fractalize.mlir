// RUN: npu-opt %s --split-input-file --npu-lower-fractalize | FileCheck %s
// RUN: npu-opt %s --split-input-file --npu-lower-fractalize="algorithm=naive" | FileCheck %s --check-prefix=NAIVE
// RUN: npu-opt %s --split-input-file --npu-lower-fractalize="ub-fraction=0.5" | FileCheck %s --check-prefix=HALF

// 512x768 fp16 -> Nz 48x32x16x16 (thesis 6.4.2).
// fill-ub: strips of 80 rows (strip + its transpose fill UB: 2 x 80 x 768 x 2 B
// = 240 KiB of 256 KiB), six of them in a loop, then the 32-row tail.
// CHECK-LABEL: func.func @fractalize_bert
// CHECK:       scf.for %[[RB:.*]] = %c0{{.*}} to %c30{{.*}} step %c5{{.*}} {
// CHECK:         %[[STRIP:.*]] = memref.alloc() : memref<61440xf16, "ub">
// CHECK:         %[[TMP:.*]] = memref.alloc() : memref<61440xf16, "ub">
// 80 contiguous rows in one burst.
// CHECK:         "cce.copy_gm_to_ub"({{.*}}) {burst_len = 3840 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64}
// Pass 1: one vnchwconv, rows a*5+b, repeat over (b, column block) = 5 x 48.
// CHECK:         "cce.vnchwconv"({{.*}}) {dst_offsets = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15>, dst_rep_stride = 16 : i64, repeat = 240 : i64, src_offsets = array<i64: 0, 240, 480, 720, 960, 1200, 1440, 1680, 1920, 2160, 2400, 2640, 2880, 3120, 3360, 3600>, src_rep_stride = 1 : i64}
// Pass 2: one vnchwconv per b, 48 repeats each, back into the strip buffer.
// CHECK-COUNT-5: "cce.vnchwconv"({{.*}}) {dst_offsets = array<i64: 0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 75>, dst_rep_stride = 80 : i64, repeat = 48 : i64, src_offsets = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15>, src_rep_stride = 16 : i64}
// Out: per column block 5 fractals (80 blocks of 32 B), 32 row blocks apart in GM.
// CHECK:         "cce.copy_ub_to_gm"({{.*}}) {burst_len = 80 : i64, dst_gap = 432 : i64, n_burst = 48 : i64, src_gap = 0 : i64}
// CHECK:       }
// CHECK:       memref.alloc() : memref<24576xf16, "ub">
// CHECK:       "cce.vnchwconv"({{.*}}repeat = 96 : i64
// CHECK-COUNT-2: "cce.vnchwconv"({{.*}}) {dst_offsets = array<i64: 0, 2, 4, {{.*}}>, dst_rep_stride = 32 : i64, repeat = 48 : i64
// CHECK:       "cce.copy_ub_to_gm"({{.*}}) {burst_len = 32 : i64, dst_gap = 480 : i64, n_burst = 48 : i64, src_gap = 0 : i64}
// CHECK-NOT:   cce.vdup
// CHECK:       return

// ub-fraction=0.5: strips of 32 rows, so that npu-double-buffer can keep two.
// HALF-LABEL: func.func @fractalize_bert
// HALF:       scf.for %{{.*}} = %c0{{.*}} to %c32{{.*}} step %c2{{.*}} {
// HALF:         memref.alloc() : memref<24576xf16, "ub">
// HALF:         "cce.vnchwconv"({{.*}}repeat = 96 : i64
// HALF-COUNT-2: "cce.vnchwconv"({{.*}}repeat = 48 : i64

// naive: 16-row strips, two vnchwconv of 48 repeats each, one block per column block.
// NAIVE-LABEL: func.func @fractalize_bert
// NAIVE:       scf.for %{{.*}} = %c0{{.*}} to %c32{{.*}} step %c1{{.*}} {
// NAIVE:         memref.alloc() : memref<12288xf16, "ub">
// NAIVE:         "cce.copy_gm_to_ub"({{.*}}) {burst_len = 768 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64}
// NAIVE-NOT:     "cce.copy
// NAIVE:         "cce.vnchwconv"({{.*}}repeat = 48 : i64
// NAIVE-NOT:     "cce.copy
// NAIVE:         "cce.vnchwconv"({{.*}}repeat = 48 : i64
// NAIVE-NOT:     "cce.vnchwconv"
// NAIVE:         "cce.copy_ub_to_gm"({{.*}}) {burst_len = 16 : i64, dst_gap = 496 : i64, n_burst = 48 : i64, src_gap = 0 : i64}
// NAIVE-NEXT:  }
// NAIVE-NEXT:  return
func.func @fractalize_bert(%a: memref<512x768xf16, "gm">, %b: memref<48x32x16x16xf16, "gm">) {
  "ascend.fractalize"(%a, %b) : (memref<512x768xf16, "gm">, memref<48x32x16x16xf16, "gm">) -> ()
  return
}

// -----

// Defractalize runs the passes inverted: Nz in (one copy), transpose back,
// rows out in one burst.
// CHECK-LABEL: func.func @defractalize_bert
// CHECK:       scf.for %{{.*}} = %c0{{.*}} to %c30{{.*}} step %c5{{.*}} {
// CHECK:         "cce.copy_gm_to_ub"({{.*}}) {burst_len = 80 : i64, dst_gap = 0 : i64, n_burst = 48 : i64, src_gap = 432 : i64}
// CHECK-COUNT-5: "cce.vnchwconv"({{.*}}) {dst_offsets = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15>, dst_rep_stride = 16 : i64, repeat = 48 : i64, src_offsets = array<i64: 0, 5, 10, {{.*}}>, src_rep_stride = 80 : i64}
// CHECK:         "cce.vnchwconv"({{.*}}) {dst_offsets = array<i64: 0, 240, 480, {{.*}}>, dst_rep_stride = 1 : i64, repeat = 240 : i64
// CHECK:         "cce.copy_ub_to_gm"({{.*}}) {burst_len = 3840 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64}
func.func @defractalize_bert(%z: memref<48x32x16x16xf16, "gm">, %a: memref<512x768xf16, "gm">) {
  "ascend.defractalize"(%z, %a) : (memref<48x32x16x16xf16, "gm">, memref<512x768xf16, "gm">) -> ()
  return
}

// -----

// f32, 37 rows (5 padding rows), 24 columns (8 padding columns): the strip is
// zero-filled first, rows land at a 32-element pitch, the 4-byte vnchwconv
// passes run in halves.
// CHECK-LABEL: func.func @f32_tails
// CHECK:       scf.for %{{.*}} = %c0{{.*}} to %c3{{.*}} step %c3{{.*}} {
// CHECK:       %[[S:.*]] = memref.alloc() : memref<1536xf32, "ub">
// CHECK:       "cce.vdup"({{.*}}) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 64 : i64, repeat = 24 : i64, scalar = 0.000000e+00 : f64}
// CHECK:       "cce.copy_gm_to_ub"({{.*}}) {burst_len = 3 : i64, dst_gap = 1 : i64, n_burst = 37 : i64, src_gap = 0 : i64}
// CHECK:       "cce.vnchwconv"({{.*}}repeat = 12 : i64
// CHECK-COUNT-6: "cce.vnchwconv"({{.*}}repeat = 2 : i64
// CHECK:       "cce.copy_ub_to_gm"({{.*}}) {burst_len = 96 : i64, dst_gap = 0 : i64, n_burst = 2 : i64, src_gap = 0 : i64}
func.func @f32_tails(%a: memref<37x24xf32, "gm">, %b: memref<2x3x16x16xf32, "gm">) {
  "ascend.fractalize"(%a, %b) : (memref<37x24xf32, "gm">, memref<2x3x16x16xf32, "gm">) -> ()
  return
}

// -----

// Rows of 13 fp16 (26 bytes) are not whole 32-byte blocks: one copy per row
// (GM side unaligned, UB rows aligned); after pass 1 the 3 padding columns
// (which hold the next rows' data) are zeroed; the last row would read past
// the tensor's end, so its elements come from the tensor's final 32 bytes,
// shifted into place by two vnchwconv (broadcast, pick).
// CHECK-LABEL: func.func @rows_of_partial_blocks
// CHECK:         "cce.vdup"
// CHECK-COUNT-15: "cce.copy_gm_to_ub"({{.*}}) {burst_len = 1 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64} : (memref<16xf16, strided<[1], offset: ?>, "gm">
// CHECK:         %[[W:.*]] = memref.alloc() : memref<16xf16, "ub">
// CHECK:         "cce.copy_gm_to_ub"(%{{.*}}, %[[W]]) {{.*}} : (memref<16xf16, strided<[1], offset: 205>, "gm">
// CHECK:         "cce.vnchwconv"({{.*}}) {dst_offsets = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15>, dst_rep_stride = 0 : i64, repeat = 1 : i64, src_offsets = array<i64: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>
// CHECK:         "cce.vnchwconv"({{.*}}) {{.*}} src_offsets = array<i64: 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 3, 3, 3>
// CHECK:         "cce.copy_ub_to_ub"
// CHECK:         "cce.vnchwconv"
// CHECK-COUNT-2: "cce.vdup"({{.*}}) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 48 : i64, repeat = 1 : i64
// CHECK:         "cce.vnchwconv"
// CHECK:         "cce.copy_ub_to_gm"
func.func @rows_of_partial_blocks(%a: memref<17x13xf16, "gm">, %b: memref<1x2x16x16xf16, "gm">) {
  "ascend.fractalize"(%a, %b) : (memref<17x13xf16, "gm">, memref<1x2x16x16xf16, "gm">) -> ()
  return
}

// -----

// int8 -> the 16 x 32 blocks of a matmul's A operand: an int8 block row is
// 32 bytes of an ND row, as an f16 one is, so both buffers are viewed as f16
// (the bytes in pairs: 40 x 32 f16 -> Nz [2, 3, 16, 16]) and lowered as f16.
// CHECK-LABEL: func.func @fractalize_int8
// CHECK:       %[[ND:.*]] = memref.collapse_shape %arg0 {{.*}} into memref<2560xi8, "gm">
// CHECK:       %[[NZ:.*]] = memref.collapse_shape %arg1 {{.*}} into memref<3072xi8, "gm">
// CHECK:       memref.view %[[ND]][%{{.*}}][] : memref<2560xi8, "gm"> to memref<1280xf16, "gm">
// CHECK:       memref.view %[[NZ]][%{{.*}}][] : memref<3072xi8, "gm"> to memref<1536xf16, "gm">
// CHECK:       memref.alloc() : memref<1536xf16, "ub">
// CHECK:       "cce.vnchwconv"
func.func @fractalize_int8(%a: memref<40x64xi8, "gm">, %b: memref<2x3x16x32xi8, "gm">) {
  "ascend.fractalize"(%a, %b) : (memref<40x64xi8, "gm">, memref<2x3x16x32xi8, "gm">) -> ()
  return
}

// -----

// i32 (an int8 matmul's result) moves as 4-byte elements, like f32.
// CHECK-LABEL: func.func @defractalize_i32
// CHECK:       memref.alloc() : memref<{{[0-9]+}}xi32, "ub">
// CHECK:       "cce.vnchwconv"({{.*}}) {{.*}} : (memref<{{.*}}xi32, {{.*}}"ub">, memref<{{.*}}xi32, {{.*}}"ub">)
func.func @defractalize_i32(%a: memref<2x3x16x16xi32, "gm">, %b: memref<40x32xi32, "gm">) {
  "ascend.defractalize"(%a, %b) : (memref<2x3x16x16xi32, "gm">, memref<40x32xi32, "gm">) -> ()
  return
}
