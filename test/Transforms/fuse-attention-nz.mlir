// RUN: npu-opt %s --verify-diagnostics --npu-fuse-attention | FileCheck %s
// RUN: npu-opt %s --npu-fuse-attention --npu-lower-attention 2>/dev/null | FileCheck %s --check-prefix=KERNEL
// RUN: npu-opt %s --npu-fuse-attention=nz-out=false 2>&1 | FileCheck %s --check-prefix=OFF

// Attention over the projections [S, H*D] whose merged context is only cast
// to f16 and fractalized (out_proj's A operand): the cast and fractalize
// join the group, and the kernel writes each head's context column blocks
// as f16 Nz (one contiguous burst of the query tile's rows per column
// block), cast with the cast's own rounding.
// CHECK-LABEL: func.func @attention
// CHECK:       scf.execute_region {
// CHECK:         "ascend.transpose"
// CHECK:         "ascend.cast"({{.*}}) {round_mode = "rint"} : (memref<32x32xf32, "gm">, memref<32x32xf16, "gm">)
// CHECK-NEXT:    "ascend.fractalize"({{.*}}, %arg3)
// CHECK-NEXT:    scf.yield
// CHECK-NEXT:  } {npu.attention = {gm_bytes = 14336
// CHECK-NEXT:  return
// KERNEL-LABEL: func.func @attention
// KERNEL:       "cce.vmul"
// KERNEL:       "cce.vconv"({{.*}}round_mode = "rint"{{.*}} : (memref<512xf16, "ub">, memref<512xf32, strided<[1]>, "ub">)
// KERNEL-NOT:   cce.
// KERNEL:       "cce.copy_ub_to_gm"{{.*}}burst_len = 32 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64} : (memref<512xf16, "ub">, memref<512xf16, {{.*}}"gm">)
// KERNEL:       "cce.vmul"
// KERNEL:       "cce.vconv"({{.*}}round_mode = "rint"{{.*}} : (memref<512xf16, "ub">, memref<512xf32, strided<[1]>, "ub">)
// KERNEL-NOT:   cce.
// KERNEL:       "cce.copy_ub_to_gm"{{.*}}burst_len = 32 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64} : (memref<512xf16, "ub">, memref<512xf16, {{.*}}"gm">)
// KERNEL-NOT:   ascend.
// OFF:          remark: {{.*}}the context written in f32 (not as an Nz A operand: Nz output is off (nz-out=false))
// OFF-LABEL:    func.func @attention
// OFF:          } {npu.attention
// OFF:          "ascend.cast"
// OFF-NEXT:     "ascend.fractalize"
func.func @attention(%q: memref<1x32x2x16xf32, "gm">, %kt: memref<1x32x2x16xf32, "gm">, %v: memref<1x32x2x16xf32, "gm">, %y: memref<2x2x16x16xf16, "gm">) {
  %t1 = memref.alloc() : memref<1x2x32x16xf32, "gm">
  "ascend.transpose"(%q, %t1) {permutation = array<i64: 0, 2, 1, 3>} : (memref<1x32x2x16xf32, "gm">, memref<1x2x32x16xf32, "gm">) -> ()
  %v2 = memref.collapse_shape %t1 [[0, 1], [2], [3]] : memref<1x2x32x16xf32, "gm"> into memref<2x32x16xf32, "gm">
  %t2 = memref.alloc() : memref<1x2x16x32xf32, "gm">
  "ascend.transpose"(%kt, %t2) {permutation = array<i64: 0, 2, 3, 1>} : (memref<1x32x2x16xf32, "gm">, memref<1x2x16x32xf32, "gm">) -> ()
  %v5 = memref.collapse_shape %t2 [[0, 1], [2], [3]] : memref<1x2x16x32xf32, "gm"> into memref<2x16x32xf32, "gm">
  %t3 = memref.alloc() : memref<1x2x32x16xf32, "gm">
  "ascend.transpose"(%v, %t3) {permutation = array<i64: 0, 2, 1, 3>} : (memref<1x32x2x16xf32, "gm">, memref<1x2x32x16xf32, "gm">) -> ()
  %v8 = memref.collapse_shape %t3 [[0, 1], [2], [3]] : memref<1x2x32x16xf32, "gm"> into memref<2x32x16xf32, "gm">
  %t4 = memref.alloc() : memref<2x32x16xf16, "gm">
  "ascend.cast"(%v2, %t4) {round_mode = "rint"} : (memref<2x32x16xf32, "gm">, memref<2x32x16xf16, "gm">) -> ()
  %t5 = memref.alloc() : memref<2x1x2x16x16xf16, "gm">
  "ascend.fractalize"(%t4, %t5) : (memref<2x32x16xf16, "gm">, memref<2x1x2x16x16xf16, "gm">) -> ()
  %t6 = memref.alloc() : memref<2x16x32xf16, "gm">
  "ascend.cast"(%v5, %t6) {round_mode = "rint"} : (memref<2x16x32xf32, "gm">, memref<2x16x32xf16, "gm">) -> ()
  %t7 = memref.alloc() : memref<2x2x1x16x16xf16, "gm">
  "ascend.fractalize"(%t6, %t7) : (memref<2x16x32xf16, "gm">, memref<2x2x1x16x16xf16, "gm">) -> ()
  %t8 = memref.alloc() : memref<2x2x2x16x16xf32, "gm">
  // expected-remark @+1 {{GM traffic 224768 -> 14336 bytes; UB 23552 bytes per tile; the context written as the f16 Nz A operand of the next matmul (its cast and fractalize absorbed: no separate pass over it)}}
  "ascend.batch_matmul"(%t5, %t7, %t8) : (memref<2x1x2x16x16xf16, "gm">, memref<2x2x1x16x16xf16, "gm">, memref<2x2x2x16x16xf32, "gm">) -> ()
  %t9 = memref.alloc() : memref<2x32x32xf32, "gm">
  "ascend.defractalize"(%t8, %t9) : (memref<2x2x2x16x16xf32, "gm">, memref<2x32x32xf32, "gm">) -> ()
  %t10 = memref.alloc() : memref<2x32x32xf32, "gm">
  "ascend.muls"(%t9, %t10) {scalar = 2.50000000000000000e-01 : f64} : (memref<2x32x32xf32, "gm">, memref<2x32x32xf32, "gm">) -> ()
  %t11 = memref.alloc() : memref<2x32x1xf32, "gm">
  "ascend.reduce_max"(%t10, %t11) : (memref<2x32x32xf32, "gm">, memref<2x32x1xf32, "gm">) -> ()
  %t12 = memref.alloc() : memref<2x32x32xf32, "gm">
  "ascend.sub"(%t10, %t11, %t12) : (memref<2x32x32xf32, "gm">, memref<2x32x1xf32, "gm">, memref<2x32x32xf32, "gm">) -> ()
  %t13 = memref.alloc() : memref<2x32x32xf32, "gm">
  "ascend.exp"(%t12, %t13) : (memref<2x32x32xf32, "gm">, memref<2x32x32xf32, "gm">) -> ()
  %t14 = memref.alloc() : memref<2x32x1xf32, "gm">
  "ascend.reduce_sum"(%t13, %t14) : (memref<2x32x32xf32, "gm">, memref<2x32x1xf32, "gm">) -> ()
  %t15 = memref.alloc() : memref<2x32x32xf32, "gm">
  %t16 = memref.alloc() : memref<2x32x1xf32, "gm">
  "ascend.reciprocal"(%t14, %t16) : (memref<2x32x1xf32, "gm">, memref<2x32x1xf32, "gm">) -> ()
  "ascend.mul"(%t13, %t16, %t15) : (memref<2x32x32xf32, "gm">, memref<2x32x1xf32, "gm">, memref<2x32x32xf32, "gm">) -> ()
  %t17 = memref.alloc() : memref<2x32x32xf16, "gm">
  "ascend.cast"(%t15, %t17) {round_mode = "rint"} : (memref<2x32x32xf32, "gm">, memref<2x32x32xf16, "gm">) -> ()
  %t18 = memref.alloc() : memref<2x2x2x16x16xf16, "gm">
  "ascend.fractalize"(%t17, %t18) : (memref<2x32x32xf16, "gm">, memref<2x2x2x16x16xf16, "gm">) -> ()
  %t19 = memref.alloc() : memref<2x32x16xf16, "gm">
  "ascend.cast"(%v8, %t19) {round_mode = "rint"} : (memref<2x32x16xf32, "gm">, memref<2x32x16xf16, "gm">) -> ()
  %t20 = memref.alloc() : memref<2x1x2x16x16xf16, "gm">
  "ascend.fractalize"(%t19, %t20) : (memref<2x32x16xf16, "gm">, memref<2x1x2x16x16xf16, "gm">) -> ()
  %t21 = memref.alloc() : memref<2x1x2x16x16xf32, "gm">
  "ascend.batch_matmul"(%t18, %t20, %t21) : (memref<2x2x2x16x16xf16, "gm">, memref<2x1x2x16x16xf16, "gm">, memref<2x1x2x16x16xf32, "gm">) -> ()
  %t22 = memref.alloc() : memref<2x32x16xf32, "gm">
  "ascend.defractalize"(%t21, %t22) : (memref<2x1x2x16x16xf32, "gm">, memref<2x32x16xf32, "gm">) -> ()
  %v47 = memref.expand_shape %t22 [[0, 1], [2], [3]] output_shape [1, 2, 32, 16] : memref<2x32x16xf32, "gm"> into memref<1x2x32x16xf32, "gm">
  %t23 = memref.alloc() : memref<1x32x2x16xf32, "gm">
  "ascend.transpose"(%v47, %t23) {permutation = array<i64: 0, 2, 1, 3>} : (memref<1x2x32x16xf32, "gm">, memref<1x32x2x16xf32, "gm">) -> ()
  %v50 = memref.collapse_shape %t23 [[0, 1], [2, 3]] : memref<1x32x2x16xf32, "gm"> into memref<32x32xf32, "gm">
  %t24 = memref.alloc() : memref<32x32xf16, "gm">
  "ascend.cast"(%v50, %t24) {round_mode = "rint"} : (memref<32x32xf32, "gm">, memref<32x32xf16, "gm">) -> ()
  "ascend.fractalize"(%t24, %y) : (memref<32x32xf16, "gm">, memref<2x2x16x16xf16, "gm">) -> ()
  return
}
