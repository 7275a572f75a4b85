// RUN: npu-opt %s --split-input-file --npu-lower-elementwise | FileCheck %s

// erf of f16 data: converted to f32, Abramowitz-Stegun 7.1.26 in f32:
// -x^2 first, then T = m t = 1 / ((1 + p|x|) / m) (one vmadd whose factor
// p/m and addend 1/m are both constant blocks, vdup'ed once before the
// loop and read with strides 0; m = -(a5)^(1/5)), the negated polynomial
// monic in T (vadds, one vmadd per further coefficient, * T), exp(-x^2),
// the sign by clamping x*1e30 and y = s*q + s in one vmla; one rounding
// back to f16. Four f32 temporaries beside the f16 buffers.
// CHECK-LABEL: func.func @erf
// CHECK: "cce.vdup"({{.*}}mask = 8 : i64, repeat = 1 : i64, scalar = -0.32370978952624974 : f64
// CHECK: "cce.vdup"({{.*}}scalar = -0.98815196605234301 : f64
// CHECK: "cce.vdup"({{.*}}scalar = 1.3714870988995047 : f64
// CHECK: "cce.vdup"({{.*}}scalar = 0.27779521851550865 : f64
// CHECK: "cce.vdup"({{.*}}scalar = 0.25181036234311638 : f64
// CHECK-COUNT-4: memref.alloc() : memref<256xf32, "ub">
// CHECK: "cce.vconv"({{.*}}round_mode = "none"
// CHECK-NEXT: "cce.vabs"
// CHECK-NEXT: "cce.vmuls"({{.*}}scalar = -1.000000e+00 : f64
// CHECK-NEXT: "cce.vmul"
// CHECK: "cce.vmadd"({{.*}}src0_blk_stride = 0 : i64, src0_rep_stride = 0 : i64, src1_blk_stride = 0 : i64, src1_rep_stride = 0 : i64}
// CHECK-NEXT: "cce.vrec"
// CHECK-NEXT: "cce.vadds"({{.*}}scalar = 1.3854983352571426 : f64
// CHECK-COUNT-3: "cce.vmadd"({{.*}}src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 0 : i64, src1_rep_stride = 0 : i64}
// CHECK-NEXT: "cce.vmul"
// CHECK-NEXT: "cce.vexp"
// CHECK-NEXT: "cce.vmul"
// CHECK-NEXT: "cce.vmuls"({{.*}}scalar = 1.000000e+30 : f64
// CHECK-NEXT: "cce.vmaxs"({{.*}}scalar = -1.000000e+00 : f64
// CHECK-NEXT: "cce.vmins"({{.*}}scalar = 1.000000e+00 : f64
// CHECK-NEXT: "cce.vmla"
// CHECK-NEXT: "cce.vconv"({{.*}}round_mode = "rint"
func.func @erf(%a: memref<256xf16, "gm">, %b: memref<256xf16, "gm">) {
  "ascend.erf"(%a, %b) : (memref<256xf16, "gm">, memref<256xf16, "gm">) -> ()
  return
}

// -----

// cmp with a row operand: vcmp over the rows (4 repeats), the i8 result row
// of 128 lanes is 4 blocks, the f32 rows 16 blocks; the row is read with
// repeat stride 0.
// CHECK-LABEL: func.func @cmp_row
// CHECK: "cce.vcmp"({{.*}}) {dst_blk_stride = 1 : i64, dst_rep_stride = 4 : i64, mask = 64 : i64, predicate = "ge", repeat = 4 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 16 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 0 : i64}
// CHECK: "cce.vcmp"
// CHECK: "cce.copy_ub_to_gm"{{.*}} : (memref<512xi8, "ub">
func.func @cmp_row(%a: memref<4x128xf32, "gm">, %r: memref<128xf32, "gm">, %m: memref<4x128xi8, "gm">) {
  "ascend.cmp"(%a, %r, %m) {predicate = "ge"} : (memref<4x128xf32, "gm">, memref<128xf32, "gm">, memref<4x128xi8, "gm">) -> ()
  return
}

// -----

// select with a mask row (attention style): one vsel over the 12 rows, the
// i8 mask read with repeat stride 0.
// CHECK-LABEL: func.func @select_mask_row
// CHECK: "cce.copy_gm_to_ub"{{.*}} : (memref<128xi8, "gm">, memref<128xi8, "ub">) -> ()
// CHECK: "cce.vsel"({{.*}}) {cond_blk_stride = 1 : i64, cond_rep_stride = 0 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 128 : i64, repeat = 12 : i64
func.func @select_mask_row(%m: memref<128xi8, "gm">, %a: memref<12x128xf16, "gm">, %b: memref<12x128xf16, "gm">, %o: memref<12x128xf16, "gm">) {
  "ascend.select"(%m, %a, %b, %o) : (memref<128xi8, "gm">, memref<12x128xf16, "gm">, memref<12x128xf16, "gm">, memref<12x128xf16, "gm">) -> ()
  return
}

// -----

// broadcast_to of [6, 1, 64] to [6, 16, 64]: a loop over the 6 slices, each
// a row broadcast copied with vmax(x, x) (exact for every value and type).
// CHECK-LABEL: func.func @broadcast_middle
// CHECK: scf.for
// CHECK: "cce.copy_gm_to_ub"({{.*}}) {burst_len = 8 : i64
// CHECK: "cce.vmax"({{.*}}) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 64 : i64, repeat = 16 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 0 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 0 : i64}
// CHECK: "cce.copy_ub_to_gm"({{.*}}) {burst_len = 128 : i64
func.func @broadcast_middle(%a: memref<6x1x64xf32, "gm">, %b: memref<6x16x64xf32, "gm">) {
  "ascend.broadcast"(%a, %b) : (memref<6x1x64xf32, "gm">, memref<6x16x64xf32, "gm">) -> ()
  return
}

// -----

// [12, 128, 128] + [1, 1, 128]: the leading dims merge, one row broadcast
// over 1536 rows (no slice loop).
// CHECK-LABEL: func.func @bias_all_rows
// CHECK-NOT: memref.subview %arg1[%
// CHECK: "cce.vadd"({{.*}}src1_blk_stride = 1 : i64, src1_rep_stride = 0 : i64}
func.func @bias_all_rows(%a: memref<12x128x128xf16, "gm">, %b: memref<1x1x128xf16, "gm">, %c: memref<12x128x128xf16, "gm">) {
  "ascend.add"(%a, %b, %c) : (memref<12x128x128xf16, "gm">, memref<1x1x128xf16, "gm">, memref<12x128x128xf16, "gm">) -> ()
  return
}

// -----

// f32 -> i8 has no direct vconv: f32 -> i32 with the op's rounding, then
// exact steps i32 -> f32 -> f16 -> i8 (saturating at the end).
// CHECK-LABEL: func.func @cast_chain
// CHECK: "cce.vconv"({{.*}}round_mode = "floor"{{.*}} : (memref<64xi32, "ub">, memref<64xf32, "ub">)
// CHECK-NEXT: "cce.vconv"({{.*}}round_mode = "rint"{{.*}} : (memref<64xf32, "ub">, memref<64xi32, "ub">)
// CHECK-NEXT: "cce.vconv"({{.*}}round_mode = "rint"{{.*}} : (memref<64xf16, "ub">, memref<64xf32, "ub">)
// CHECK-NEXT: "cce.vconv"({{.*}}round_mode = "rint"{{.*}} : (memref<64xi8, "ub">, memref<64xf16, "ub">)
func.func @cast_chain(%a: memref<64xf32, "gm">, %b: memref<64xi8, "gm">) {
  "ascend.cast"(%a, %b) {round_mode = "floor"} : (memref<64xf32, "gm">, memref<64xi8, "gm">) -> ()
  return
}

// -----

// [2, 10] + [10] in f16: rows under one block. The row operand is expanded to
// one block per element, assembled in output order (one UB copy of 10
// one-block bursts per output row), compacted, and one vadd covers all 20
// lanes; one store.
// CHECK-LABEL: func.func @short_row
// CHECK: "cce.vnchwconv"
// CHECK: scf.for
// CHECK: "cce.copy_ub_to_ub"({{.*}}) {burst_len = 1 : i64, dst_gap = 0 : i64, n_burst = 10 : i64, src_gap = 0 : i64}
// CHECK: "cce.vnchwconv"({{.*}}) {dst_offsets = array<i64: 0, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2>
// CHECK: "cce.vadd"({{.*}}) {{{.*}}mask = 20 : i64, repeat = 1 : i64
// CHECK: "cce.copy_ub_to_gm"({{.*}}) {burst_len = 2 : i64
func.func @short_row(%a: memref<2x10xf16, "gm">, %b: memref<10xf16, "gm">, %c: memref<2x10xf16, "gm">) {
  "ascend.add"(%a, %b, %c) : (memref<2x10xf16, "gm">, memref<10xf16, "gm">, memref<2x10xf16, "gm">) -> ()
  return
}
