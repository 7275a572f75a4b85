// RUN: npu-opt %s | npu-opt | FileCheck %s
// Every cce op parses, verifies and prints back (generic form), twice.

// CHECK-LABEL: func.func @copies(
// CHECK:      "cce.copy_gm_to_l1"(%arg0, %arg1) {burst_len = 128 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64} : (memref<4096xf16, "gm">, memref<4096xf16, "l1">) -> ()
// CHECK-NEXT: "cce.copy_gm_to_ub"(%arg0, %arg2) {burst_len = 4 : i64, dst_gap = 0 : i64, n_burst = 16 : i64, src_gap = 12 : i64} : (memref<4096xf16, "gm">, memref<4096xf16, "ub">) -> ()
// CHECK-NEXT: "cce.copy_ub_to_gm"(%arg2, %arg0) {burst_len = 4 : i64, dst_gap = 12 : i64, n_burst = 16 : i64, src_gap = 0 : i64} : (memref<4096xf16, "ub">, memref<4096xf16, "gm">) -> ()
// CHECK-NEXT: "cce.copy_ub_to_l1"(%arg2, %arg1) {burst_len = 8 : i64, dst_gap = 3 : i64, n_burst = 2 : i64, src_gap = 1 : i64} : (memref<4096xf16, "ub">, memref<4096xf16, "l1">) -> ()
// CHECK-NEXT: "cce.copy_ub_to_ub"(%arg2, %arg3) {burst_len = 256 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64} : (memref<4096xf16, "ub">, memref<4096xf16, "ub">) -> ()
// CHECK-NEXT: "cce.copy_l0c_to_ub"(%arg4, %arg5) {burst_len = 128 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64} : (memref<1024xf32, "l0c">, memref<1024xf32, "ub">) -> ()
// CHECK-NEXT: "cce.copy_l0c_to_ub"(%arg4, %arg6) {burst_len = 128 : i64, convert = "f32_to_f16", dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64} : (memref<1024xf32, "l0c">, memref<1024xf16, "ub">) -> ()
// CHECK-NEXT: "cce.copy_l0c_to_ub"(%arg4, %arg6) {burst_len = 128 : i64, convert = "f32_to_f16_relu", dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64} : (memref<1024xf32, "l0c">, memref<1024xf16, "ub">) -> ()
// CHECK-NEXT: return
func.func @copies(%gm: memref<4096xf16, "gm">, %l1: memref<4096xf16, "l1">,
                  %ub: memref<4096xf16, "ub">, %ub2: memref<4096xf16, "ub">,
                  %l0c: memref<1024xf32, "l0c">, %ubf: memref<1024xf32, "ub">,
                  %ubh: memref<1024xf16, "ub">) {
  "cce.copy_gm_to_l1"(%gm, %l1) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<4096xf16, "gm">, memref<4096xf16, "l1">) -> ()
  "cce.copy_gm_to_ub"(%gm, %ub) {n_burst = 16 : i64, burst_len = 4 : i64, src_gap = 12 : i64, dst_gap = 0 : i64} : (memref<4096xf16, "gm">, memref<4096xf16, "ub">) -> ()
  "cce.copy_ub_to_gm"(%ub, %gm) {n_burst = 16 : i64, burst_len = 4 : i64, src_gap = 0 : i64, dst_gap = 12 : i64} : (memref<4096xf16, "ub">, memref<4096xf16, "gm">) -> ()
  "cce.copy_ub_to_l1"(%ub, %l1) {n_burst = 2 : i64, burst_len = 8 : i64, src_gap = 1 : i64, dst_gap = 3 : i64} : (memref<4096xf16, "ub">, memref<4096xf16, "l1">) -> ()
  "cce.copy_ub_to_ub"(%ub, %ub2) {n_burst = 1 : i64, burst_len = 256 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<4096xf16, "ub">, memref<4096xf16, "ub">) -> ()
  "cce.copy_l0c_to_ub"(%l0c, %ubf) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<1024xf32, "l0c">, memref<1024xf32, "ub">) -> ()
  "cce.copy_l0c_to_ub"(%l0c, %ubh) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64, convert = "f32_to_f16"} : (memref<1024xf32, "l0c">, memref<1024xf16, "ub">) -> ()
  "cce.copy_l0c_to_ub"(%l0c, %ubh) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64, convert = "f32_to_f16_relu"} : (memref<1024xf32, "l0c">, memref<1024xf16, "ub">) -> ()
  return
}

// CHECK-LABEL: func.func @cube(
// CHECK:      "cce.load_l1_to_l0a"(%arg0, %arg1) {dst_stride = 1 : i64, repeat = 4 : i64, src_stride = 1 : i64, transpose = false} : (memref<2x2x16x16xf16, "l1">, memref<1024xf16, "l0a">) -> ()
// CHECK-NEXT: "cce.load_l1_to_l0b"(%arg0, %arg2) {dst_stride = 1 : i64, repeat = 2 : i64, src_stride = 2 : i64, transpose = true} : (memref<2x2x16x16xf16, "l1">, memref<1024xf16, "l0b">) -> ()
// CHECK-NEXT: "cce.mad"(%arg1, %arg2, %arg3) {accumulate = false, k = 32 : i64, m = 32 : i64, n = 32 : i64} : (memref<1024xf16, "l0a">, memref<1024xf16, "l0b">, memref<1024xf32, "l0c">) -> ()
// CHECK-NEXT: "cce.load_l1_to_l0b"(%arg7, %arg5) {dst_stride = 1 : i64, repeat = 4 : i64, src_stride = 1 : i64, transpose = true} : (memref<2048xi8, "l1">, memref<2048xi8, "l0b">) -> ()
// CHECK-NEXT: "cce.mad"(%arg4, %arg5, %arg6) {accumulate = true, k = 32 : i64, m = 16 : i64, n = 64 : i64} : (memref<2048xi8, "l0a">, memref<2048xi8, "l0b">, memref<1024xi32, "l0c">) -> ()
// CHECK-NEXT: return
func.func @cube(%l1: memref<2x2x16x16xf16, "l1">, %a: memref<1024xf16, "l0a">,
                %b: memref<1024xf16, "l0b">, %c: memref<1024xf32, "l0c">,
                %a8: memref<2048xi8, "l0a">, %b8: memref<2048xi8, "l0b">, %c8: memref<1024xi32, "l0c">,
                %l1b8: memref<2048xi8, "l1">) {
  "cce.load_l1_to_l0a"(%l1, %a) {repeat = 4 : i64, src_stride = 1 : i64, dst_stride = 1 : i64, transpose = false} : (memref<2x2x16x16xf16, "l1">, memref<1024xf16, "l0a">) -> ()
  "cce.load_l1_to_l0b"(%l1, %b) {repeat = 2 : i64, src_stride = 2 : i64, dst_stride = 1 : i64, transpose = true} : (memref<2x2x16x16xf16, "l1">, memref<1024xf16, "l0b">) -> ()
  "cce.mad"(%a, %b, %c) {m = 32 : i64, n = 32 : i64, k = 32 : i64, accumulate = false} : (memref<1024xf16, "l0a">, memref<1024xf16, "l0b">, memref<1024xf32, "l0c">) -> ()
  "cce.load_l1_to_l0b"(%l1b8, %b8) {repeat = 4 : i64, src_stride = 1 : i64, dst_stride = 1 : i64, transpose = true} : (memref<2048xi8, "l1">, memref<2048xi8, "l0b">) -> ()
  "cce.mad"(%a8, %b8, %c8) {m = 16 : i64, n = 64 : i64, k = 32 : i64, accumulate = true} : (memref<2048xi8, "l0a">, memref<2048xi8, "l0b">, memref<1024xi32, "l0c">) -> ()
  return
}

// CHECK-LABEL: func.func @vector_binary(
// CHECK:      "cce.vadd"(%arg0, %arg1, %arg2) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 128 : i64, repeat = 2 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
// CHECK-NEXT: "cce.vsub"(%arg0, %arg1, %arg2) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 100 : i64, repeat = 1 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
// CHECK-NEXT: "cce.vmul"(%arg3, %arg4, %arg5) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 64 : i64, repeat = 2 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 0 : i64} : (memref<128xf32, "ub">, memref<128xf32, "ub">, memref<128xf32, "ub">) -> ()
// CHECK-NEXT: "cce.vdiv"(%arg3, %arg4, %arg5) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 64 : i64, repeat = 2 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64} : (memref<128xf32, "ub">, memref<128xf32, "ub">, memref<128xf32, "ub">) -> ()
// CHECK-NEXT: "cce.vmax"(%arg0, %arg1, %arg2) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 128 : i64, repeat = 2 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 0 : i64, src1_rep_stride = 0 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
// CHECK-NEXT: "cce.vmin"(%arg6, %arg6, %arg6) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 64 : i64, repeat = 1 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64} : (memref<64xi32, "ub">, memref<64xi32, "ub">, memref<64xi32, "ub">) -> ()
// CHECK-NEXT: return
func.func @vector_binary(%d: memref<256xf16, "ub">, %x: memref<256xf16, "ub">, %y: memref<256xf16, "ub">,
                         %df: memref<128xf32, "ub">, %xf: memref<128xf32, "ub">, %yf: memref<128xf32, "ub">,
                         %di: memref<64xi32, "ub">) {
  "cce.vadd"(%d, %x, %y) {repeat = 2 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
  "cce.vsub"(%d, %x, %y) {repeat = 1 : i64, mask = 100 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
  "cce.vmul"(%df, %xf, %yf) {repeat = 2 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 0 : i64} : (memref<128xf32, "ub">, memref<128xf32, "ub">, memref<128xf32, "ub">) -> ()
  "cce.vdiv"(%df, %xf, %yf) {repeat = 2 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64} : (memref<128xf32, "ub">, memref<128xf32, "ub">, memref<128xf32, "ub">) -> ()
  "cce.vmax"(%d, %x, %y) {repeat = 2 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 0 : i64, src1_rep_stride = 0 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
  "cce.vmin"(%di, %di, %di) {repeat = 1 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64} : (memref<64xi32, "ub">, memref<64xi32, "ub">, memref<64xi32, "ub">) -> ()
  return
}

// CHECK-LABEL: func.func @vector_scalar(
// CHECK:      "cce.vadds"(%arg0, %arg1) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 128 : i64, repeat = 2 : i64, scalar = 1.500000e+00 : f64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
// CHECK-NEXT: "cce.vmuls"(%arg0, %arg1) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 128 : i64, repeat = 2 : i64, scalar = -1.000000e+00 : f64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
// CHECK-NEXT: "cce.vmaxs"(%arg2, %arg2) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 64 : i64, repeat = 2 : i64, scalar = 0.000000e+00 : f64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<128xf32, "ub">, memref<128xf32, "ub">) -> ()
// CHECK-NEXT: "cce.vmins"(%arg0, %arg1) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 128 : i64, repeat = 2 : i64, scalar = 6.000000e+00 : f64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
// CHECK-NEXT: "cce.vdup"(%arg0) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 128 : i64, repeat = 2 : i64, scalar = 0.000000e+00 : f64} : (memref<256xf16, "ub">) -> ()
// CHECK-NEXT: return
func.func @vector_scalar(%d: memref<256xf16, "ub">, %x: memref<256xf16, "ub">, %df: memref<128xf32, "ub">) {
  "cce.vadds"(%d, %x) {repeat = 2 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64, scalar = 1.5 : f64} : (memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
  "cce.vmuls"(%d, %x) {repeat = 2 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64, scalar = -1.0 : f64} : (memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
  "cce.vmaxs"(%df, %df) {repeat = 2 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64, scalar = 0.0 : f64} : (memref<128xf32, "ub">, memref<128xf32, "ub">) -> ()
  "cce.vmins"(%d, %x) {repeat = 2 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64, scalar = 6.0 : f64} : (memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
  "cce.vdup"(%d) {repeat = 2 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, scalar = 0.0 : f64} : (memref<256xf16, "ub">) -> ()
  return
}

// CHECK-LABEL: func.func @vector_unary(
// CHECK:      "cce.vrelu"(%arg0, %arg1) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 128 : i64, repeat = 2 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
// CHECK-NEXT: "cce.vabs"(%arg0, %arg1) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 128 : i64, repeat = 2 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
// CHECK-NEXT: "cce.vexp"(%arg0, %arg1) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 128 : i64, repeat = 2 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
// CHECK-NEXT: "cce.vln"(%arg2, %arg3) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 64 : i64, repeat = 4 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<256xf32, "ub">, memref<256xf32, "ub">) -> ()
// CHECK-NEXT: "cce.vsqrt"(%arg2, %arg3) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 64 : i64, repeat = 4 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<256xf32, "ub">, memref<256xf32, "ub">) -> ()
// CHECK-NEXT: "cce.vrsqrt"(%arg0, %arg1) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 128 : i64, repeat = 2 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
// CHECK-NEXT: "cce.vrec"(%arg0, %arg1) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 128 : i64, repeat = 2 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
// CHECK-NEXT: "cce.vconv"(%arg2, %arg1) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 64 : i64, repeat = 2 : i64, round_mode = "none", src_blk_stride = 1 : i64, src_rep_stride = 4 : i64} : (memref<256xf32, "ub">, memref<256xf16, "ub">) -> ()
// CHECK-NEXT: "cce.vconv"(%arg0, %arg3) {dst_blk_stride = 1 : i64, dst_rep_stride = 4 : i64, mask = 64 : i64, repeat = 2 : i64, round_mode = "rint", src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<256xf16, "ub">, memref<256xf32, "ub">) -> ()
// CHECK-NEXT: return
func.func @vector_unary(%d: memref<256xf16, "ub">, %x: memref<256xf16, "ub">,
                        %df: memref<256xf32, "ub">, %xf: memref<256xf32, "ub">) {
  "cce.vrelu"(%d, %x) {repeat = 2 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
  "cce.vabs"(%d, %x) {repeat = 2 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
  "cce.vexp"(%d, %x) {repeat = 2 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
  "cce.vln"(%df, %xf) {repeat = 4 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<256xf32, "ub">, memref<256xf32, "ub">) -> ()
  "cce.vsqrt"(%df, %xf) {repeat = 4 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<256xf32, "ub">, memref<256xf32, "ub">) -> ()
  "cce.vrsqrt"(%d, %x) {repeat = 2 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
  "cce.vrec"(%d, %x) {repeat = 2 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
  "cce.vconv"(%df, %x) {repeat = 2 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 4 : i64, round_mode = "none"} : (memref<256xf32, "ub">, memref<256xf16, "ub">) -> ()
  "cce.vconv"(%d, %xf) {repeat = 2 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 4 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64, round_mode = "rint"} : (memref<256xf16, "ub">, memref<256xf32, "ub">) -> ()
  return
}

// CHECK-LABEL: func.func @vector_reduce(
// CHECK:      "cce.vcadd"(%arg0, %arg1) {dst_rep_stride = 1 : i64, mask = 128 : i64, repeat = 16 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<16xf16, "ub">, memref<2048xf16, "ub">) -> ()
// CHECK-NEXT: "cce.vcmax"(%arg0, %arg1) {dst_rep_stride = 1 : i64, mask = 100 : i64, repeat = 16 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<16xf16, "ub">, memref<2048xf16, "ub">) -> ()
// CHECK-NEXT: "cce.vnchwconv"(%arg2, %arg1) {dst_offsets = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15>, dst_rep_stride = 0 : i64, repeat = 1 : i64, src_offsets = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15>, src_rep_stride = 0 : i64} : (memref<512xf16, "ub">, memref<2048xf16, "ub">) -> ()
// CHECK-NEXT: return
func.func @vector_reduce(%d: memref<16xf16, "ub">, %x: memref<2048xf16, "ub">, %y: memref<512xf16, "ub">) {
  "cce.vcadd"(%d, %x) {repeat = 16 : i64, mask = 128 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64, dst_rep_stride = 1 : i64} : (memref<16xf16, "ub">, memref<2048xf16, "ub">) -> ()
  "cce.vcmax"(%d, %x) {repeat = 16 : i64, mask = 100 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64, dst_rep_stride = 1 : i64} : (memref<16xf16, "ub">, memref<2048xf16, "ub">) -> ()
  "cce.vnchwconv"(%y, %x) {repeat = 1 : i64, src_offsets = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15>, dst_offsets = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15>, src_rep_stride = 0 : i64, dst_rep_stride = 0 : i64} : (memref<512xf16, "ub">, memref<2048xf16, "ub">) -> ()
  return
}

// CHECK-LABEL: func.func @sync(
// CHECK:      "cce.set_flag"() {dst = "V", event = 0 : i64, src = "MTE2"} : () -> ()
// CHECK-NEXT: "cce.wait_flag"() {dst = "V", event = 0 : i64, src = "MTE2"} : () -> ()
// CHECK-NEXT: "cce.set_flag"() {dst = "MTE1", event = 7 : i64, src = "M"} : () -> ()
// CHECK-NEXT: "cce.wait_flag"() {dst = "MTE1", event = 7 : i64, src = "M"} : () -> ()
// CHECK-NEXT: "cce.pipe_barrier"() {pipe = "V"} : () -> ()
// CHECK-NEXT: "cce.pipe_barrier"() {pipe = "ALL"} : () -> ()
// CHECK-NEXT: "cce.set_flag"() {dst = "MTE3", event = 1 : i64, src = "S"} : () -> ()
// CHECK-NEXT: "cce.wait_flag"() {dst = "MTE3", event = 1 : i64, src = "S"} : () -> ()
// CHECK-NEXT: return
func.func @sync() {
  "cce.set_flag"() {src = "MTE2", dst = "V", event = 0 : i64} : () -> ()
  "cce.wait_flag"() {src = "MTE2", dst = "V", event = 0 : i64} : () -> ()
  "cce.set_flag"() {src = "M", dst = "MTE1", event = 7 : i64} : () -> ()
  "cce.wait_flag"() {src = "M", dst = "MTE1", event = 7 : i64} : () -> ()
  "cce.pipe_barrier"() {pipe = "V"} : () -> ()
  "cce.pipe_barrier"() {pipe = "ALL"} : () -> ()
  "cce.set_flag"() {src = "S", dst = "MTE3", event = 1 : i64} : () -> ()
  "cce.wait_flag"() {src = "S", dst = "MTE3", event = 1 : i64} : () -> ()
  return
}

// CHECK-LABEL: func.func @compare_select(
// CHECK:      "cce.vcmp"(%arg0, %arg1, %arg1) {{{.*}}predicate = "lt"{{.*}}} : (memref<128xi8, "ub">, memref<128xf32, "ub">, memref<128xf32, "ub">) -> ()
// CHECK-NEXT: "cce.vsel"(%arg1, %arg0, %arg1, %arg1) {{{.*}}cond_rep_stride = 2 : i64{{.*}}} : (memref<128xf32, "ub">, memref<128xi8, "ub">, memref<128xf32, "ub">, memref<128xf32, "ub">) -> ()
// CHECK-NEXT: "cce.vcmin"(%arg1, %arg1) {{.*}} : (memref<128xf32, "ub">, memref<128xf32, "ub">) -> ()
func.func @compare_select(%m: memref<128xi8, "ub">, %x: memref<128xf32, "ub">) {
  "cce.vcmp"(%m, %x, %x) {repeat = 2 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 2 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64, predicate = "lt"} : (memref<128xi8, "ub">, memref<128xf32, "ub">, memref<128xf32, "ub">) -> ()
  "cce.vsel"(%x, %m, %x, %x) {repeat = 2 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, cond_blk_stride = 1 : i64, cond_rep_stride = 2 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64} : (memref<128xf32, "ub">, memref<128xi8, "ub">, memref<128xf32, "ub">, memref<128xf32, "ub">) -> ()
  "cce.vcmin"(%x, %x) {repeat = 2 : i64, mask = 64 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64, dst_rep_stride = 1 : i64} : (memref<128xf32, "ub">, memref<128xf32, "ub">) -> ()
  return
}

// Multiply-adds: vmadd dst = src0*dst + src1, vmla dst = src0*src1 + dst,
// vaxpy dst = scalar*src + dst (f16/f32; a constant block with strides 0).
// CHECK-LABEL: func.func @vector_multiply_add(
// CHECK:      "cce.vmadd"(%arg0, %arg1, %arg2) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 64 : i64, repeat = 2 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 0 : i64, src1_rep_stride = 0 : i64} : (memref<128xf32, "ub">, memref<128xf32, "ub">, memref<8xf32, "ub">) -> ()
// CHECK-NEXT: "cce.vmla"(%arg3, %arg4, %arg4) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 100 : i64, repeat = 1 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64} : (memref<128xf16, "ub">, memref<128xf16, "ub">, memref<128xf16, "ub">) -> ()
// CHECK-NEXT: "cce.vaxpy"(%arg0, %arg1) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 64 : i64, repeat = 2 : i64, scalar = 5.000000e-01 : f64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<128xf32, "ub">, memref<128xf32, "ub">) -> ()
// CHECK-NEXT: return
func.func @vector_multiply_add(%d: memref<128xf32, "ub">, %x: memref<128xf32, "ub">, %c: memref<8xf32, "ub">,
                               %dh: memref<128xf16, "ub">, %xh: memref<128xf16, "ub">) {
  "cce.vmadd"(%d, %x, %c) {repeat = 2 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 0 : i64, src1_rep_stride = 0 : i64} : (memref<128xf32, "ub">, memref<128xf32, "ub">, memref<8xf32, "ub">) -> ()
  "cce.vmla"(%dh, %xh, %xh) {repeat = 1 : i64, mask = 100 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64} : (memref<128xf16, "ub">, memref<128xf16, "ub">, memref<128xf16, "ub">) -> ()
  "cce.vaxpy"(%d, %x) {repeat = 2 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64, scalar = 0.5 : f64} : (memref<128xf32, "ub">, memref<128xf32, "ub">) -> ()
  return
}

// CHECK-LABEL: func.func @img2col(
// CHECK:      "cce.img2col_l1_to_l0a"(%arg0, %arg1) {c1 = 1 : i64, dilation_h = 1 : i64, dilation_w = 1 : i64, dst_stride = 1 : i64, fetch_h = 2 : i64, fetch_w = 1 : i64, fm_h = 9 : i64, fm_w = 9 : i64, kernel_h = 3 : i64, kernel_w = 3 : i64, left_top_h = -1 : i64, left_top_w = -1 : i64, pad_bottom = 1 : i64, pad_left = 1 : i64, pad_right = 1 : i64, pad_top = 1 : i64, repeat = 2 : i64, repeat_mode = 1 : i64, stride_h = 2 : i64, stride_w = 2 : i64} : (memref<2x9x9x16xf16, "l1">, memref<512xf16, "l0a">) -> ()
// CHECK-NEXT: return
func.func @img2col(%fm: memref<2x9x9x16xf16, "l1">, %a: memref<512xf16, "l0a">) {
  "cce.img2col_l1_to_l0a"(%fm, %a) {fm_h = 9 : i64, fm_w = 9 : i64, pad_top = 1 : i64, pad_bottom = 1 : i64, pad_left = 1 : i64, pad_right = 1 : i64, c1 = 1 : i64, fetch_h = 2 : i64, fetch_w = 1 : i64, left_top_h = -1 : i64, left_top_w = -1 : i64, stride_h = 2 : i64, stride_w = 2 : i64, kernel_h = 3 : i64, kernel_w = 3 : i64, dilation_h = 1 : i64, dilation_w = 1 : i64, dst_stride = 1 : i64, repeat_mode = 1 : i64, repeat = 2 : i64} : (memref<2x9x9x16xf16, "l1">, memref<512xf16, "l0a">) -> ()
  return
}

// img2col of an int8 map (C0 = 32 one-byte channels, c1 counts 32-channel
// blocks): 512-byte fractals of 16 windows x 32 channels; its padded taps
// take pad_value.
// CHECK-LABEL: func.func @img2col_i8(
// CHECK:      "cce.img2col_l1_to_l0a"(%arg0, %arg1) {c1 = 1 : i64, dilation_h = 1 : i64, dilation_w = 1 : i64, dst_stride = 1 : i64, fetch_h = 2 : i64, fetch_w = 1 : i64, fm_h = 9 : i64, fm_w = 9 : i64, kernel_h = 3 : i64, kernel_w = 3 : i64, left_top_h = -1 : i64, left_top_w = -1 : i64, pad_bottom = 1 : i64, pad_left = 1 : i64, pad_right = 1 : i64, pad_top = 1 : i64, pad_value = -128 : i64, repeat = 2 : i64, repeat_mode = 1 : i64, stride_h = 2 : i64, stride_w = 2 : i64} : (memref<2x9x9x32xi8, "l1">, memref<1024xi8, "l0a">) -> ()
// CHECK-NEXT: return
func.func @img2col_i8(%fm: memref<2x9x9x32xi8, "l1">, %a: memref<1024xi8, "l0a">) {
  "cce.img2col_l1_to_l0a"(%fm, %a) {fm_h = 9 : i64, fm_w = 9 : i64, pad_top = 1 : i64, pad_bottom = 1 : i64, pad_left = 1 : i64, pad_right = 1 : i64, c1 = 1 : i64, fetch_h = 2 : i64, fetch_w = 1 : i64, left_top_h = -1 : i64, left_top_w = -1 : i64, stride_h = 2 : i64, stride_w = 2 : i64, kernel_h = 3 : i64, kernel_w = 3 : i64, dilation_h = 1 : i64, dilation_w = 1 : i64, dst_stride = 1 : i64, repeat_mode = 1 : i64, repeat = 2 : i64, pad_value = -128 : i64} : (memref<2x9x9x32xi8, "l1">, memref<1024xi8, "l0a">) -> ()
  return
}

// The chip-wide barrier between the cores of a launch.
// CHECK-LABEL: func.func @sync_all(
// CHECK:      "cce.sync_all"() : () -> ()
// CHECK-NEXT: return
func.func @sync_all(%blk: index {npu.block_idx}) attributes {npu.block_dim = 2 : i64} {
  "cce.sync_all"() : () -> ()
  return
}
