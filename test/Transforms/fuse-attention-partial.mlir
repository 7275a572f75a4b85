// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-fuse-attention | FileCheck %s
// RUN: npu-opt %s --split-input-file --npu-fuse-attention --npu-lower-attention 2>&1 | FileCheck %s --check-prefix=KERNEL

// A seq of partial 16-row blocks (40: two blocks and a half): the casts and
// fractalizes of Q, K^T and V join the group as at whole blocks. The kernel
// reads only the rows (K^T's columns) within the sequence and zeroes the
// rest of the last block in UB before the cast: Q's and V's 40 rows are one
// burst; K^T's 16 rows are 40 columns each (5 blocks, a gap of one in UB).
// CHECK-LABEL: func.func @partial_seq
// CHECK-NOT:   "ascend.cast"
// CHECK:       scf.execute_region {
// CHECK-COUNT-4: "ascend.cast"
// KERNEL-LABEL: func.func @partial_seq
// KERNEL:      cce.copy_gm_to_ub{{.*}}burst_len = 80 : i64, dst_gap = 0 : i64, n_burst = 1 : i64
// KERNEL:      cce.copy_gm_to_ub{{.*}}burst_len = 5 : i64, dst_gap = 1 : i64, n_burst = 16 : i64
// Q's rows 40..47 (8 x 16 f32 from element 640), then K^T's columns 40..47 of each row.
// KERNEL:      cce.vdup{{.*}}mask = 64 : i64, repeat = 2 : i64, scalar = 0.000000e+00 : f64} : (memref<128xf32, strided<[1], offset: 640>
// KERNEL:      cce.vdup{{.*}}dst_rep_stride = 6 : i64, mask = 8 : i64, repeat = 16 : i64, scalar = 0.000000e+00 : f64} : (memref<728xf32, strided<[1], offset: 40>
func.func @partial_seq(%q: memref<1x40x16xf32, "gm">, %kt: memref<1x16x40xf32, "gm">, %v: memref<1x40x16xf32, "gm">, %y: memref<1x40x16xf32, "gm">) {
  %t1 = memref.alloc() : memref<1x40x16xf16, "gm">
  "ascend.cast"(%q, %t1) {round_mode = "rint"} : (memref<1x40x16xf32, "gm">, memref<1x40x16xf16, "gm">) -> ()
  %t2 = memref.alloc() : memref<1x1x3x16x16xf16, "gm">
  "ascend.fractalize"(%t1, %t2) : (memref<1x40x16xf16, "gm">, memref<1x1x3x16x16xf16, "gm">) -> ()
  %t3 = memref.alloc() : memref<1x16x40xf16, "gm">
  "ascend.cast"(%kt, %t3) {round_mode = "rint"} : (memref<1x16x40xf32, "gm">, memref<1x16x40xf16, "gm">) -> ()
  %t4 = memref.alloc() : memref<1x3x1x16x16xf16, "gm">
  "ascend.fractalize"(%t3, %t4) : (memref<1x16x40xf16, "gm">, memref<1x3x1x16x16xf16, "gm">) -> ()
  %t5 = memref.alloc() : memref<1x3x3x16x16xf32, "gm">
  // expected-remark @+1 {{fused attention (19 ops; Q, K, V loaded in f32 and cast and laid out on chip) over 1 heads, seq 40, head dim 16}}
  "ascend.batch_matmul"(%t2, %t4, %t5) : (memref<1x1x3x16x16xf16, "gm">, memref<1x3x1x16x16xf16, "gm">, memref<1x3x3x16x16xf32, "gm">) -> ()
  %t6 = memref.alloc() : memref<1x40x40xf32, "gm">
  "ascend.defractalize"(%t5, %t6) : (memref<1x3x3x16x16xf32, "gm">, memref<1x40x40xf32, "gm">) -> ()
  %t7 = memref.alloc() : memref<1x40x40xf32, "gm">
  "ascend.muls"(%t6, %t7) {scalar = 2.50000000000000000e-01 : f64} : (memref<1x40x40xf32, "gm">, memref<1x40x40xf32, "gm">) -> ()
  %t8 = memref.alloc() : memref<1x40x1xf32, "gm">
  "ascend.reduce_max"(%t7, %t8) : (memref<1x40x40xf32, "gm">, memref<1x40x1xf32, "gm">) -> ()
  %t9 = memref.alloc() : memref<1x40x40xf32, "gm">
  "ascend.sub"(%t7, %t8, %t9) : (memref<1x40x40xf32, "gm">, memref<1x40x1xf32, "gm">, memref<1x40x40xf32, "gm">) -> ()
  %t10 = memref.alloc() : memref<1x40x40xf32, "gm">
  "ascend.exp"(%t9, %t10) : (memref<1x40x40xf32, "gm">, memref<1x40x40xf32, "gm">) -> ()
  %t11 = memref.alloc() : memref<1x40x1xf32, "gm">
  "ascend.reduce_sum"(%t10, %t11) : (memref<1x40x40xf32, "gm">, memref<1x40x1xf32, "gm">) -> ()
  %t12 = memref.alloc() : memref<1x40x40xf32, "gm">
  %t13 = memref.alloc() : memref<1x40x1xf32, "gm">
  "ascend.reciprocal"(%t11, %t13) : (memref<1x40x1xf32, "gm">, memref<1x40x1xf32, "gm">) -> ()
  "ascend.mul"(%t10, %t13, %t12) : (memref<1x40x40xf32, "gm">, memref<1x40x1xf32, "gm">, memref<1x40x40xf32, "gm">) -> ()
  %t14 = memref.alloc() : memref<1x40x40xf16, "gm">
  "ascend.cast"(%t12, %t14) {round_mode = "rint"} : (memref<1x40x40xf32, "gm">, memref<1x40x40xf16, "gm">) -> ()
  %t15 = memref.alloc() : memref<1x3x3x16x16xf16, "gm">
  "ascend.fractalize"(%t14, %t15) : (memref<1x40x40xf16, "gm">, memref<1x3x3x16x16xf16, "gm">) -> ()
  %t16 = memref.alloc() : memref<1x40x16xf16, "gm">
  "ascend.cast"(%v, %t16) {round_mode = "rint"} : (memref<1x40x16xf32, "gm">, memref<1x40x16xf16, "gm">) -> ()
  %t17 = memref.alloc() : memref<1x1x3x16x16xf16, "gm">
  "ascend.fractalize"(%t16, %t17) : (memref<1x40x16xf16, "gm">, memref<1x1x3x16x16xf16, "gm">) -> ()
  %t18 = memref.alloc() : memref<1x1x3x16x16xf32, "gm">
  "ascend.batch_matmul"(%t15, %t17, %t18) : (memref<1x3x3x16x16xf16, "gm">, memref<1x1x3x16x16xf16, "gm">, memref<1x1x3x16x16xf32, "gm">) -> ()
  "ascend.defractalize"(%t18, %y) : (memref<1x1x3x16x16xf32, "gm">, memref<1x40x16xf32, "gm">) -> ()
  return
}

// -----

// seq 36: K^T's f32 rows (36 elements) are not whole 32-byte blocks, so
// they cannot be read as one burst each: the casts and fractalizes stay out
// and the kernel reads the f16 fractals (padded by the fractalizes).
// CHECK-LABEL: func.func @partial_seq_unaligned
// CHECK-COUNT-2: "ascend.fractalize"
// CHECK:       scf.execute_region {
func.func @partial_seq_unaligned(%q: memref<1x36x16xf32, "gm">, %kt: memref<1x16x36xf32, "gm">, %v: memref<1x36x16xf32, "gm">, %y: memref<1x36x16xf32, "gm">) {
  %t1 = memref.alloc() : memref<1x36x16xf16, "gm">
  "ascend.cast"(%q, %t1) {round_mode = "rint"} : (memref<1x36x16xf32, "gm">, memref<1x36x16xf16, "gm">) -> ()
  %t2 = memref.alloc() : memref<1x1x3x16x16xf16, "gm">
  "ascend.fractalize"(%t1, %t2) : (memref<1x36x16xf16, "gm">, memref<1x1x3x16x16xf16, "gm">) -> ()
  %t3 = memref.alloc() : memref<1x16x36xf16, "gm">
  "ascend.cast"(%kt, %t3) {round_mode = "rint"} : (memref<1x16x36xf32, "gm">, memref<1x16x36xf16, "gm">) -> ()
  %t4 = memref.alloc() : memref<1x3x1x16x16xf16, "gm">
  "ascend.fractalize"(%t3, %t4) : (memref<1x16x36xf16, "gm">, memref<1x3x1x16x16xf16, "gm">) -> ()
  %t5 = memref.alloc() : memref<1x3x3x16x16xf32, "gm">
  // expected-remark @+1 {{fused attention (13 ops; Q, K, V read as f16 fractals) over 1 heads, seq 36}}
  "ascend.batch_matmul"(%t2, %t4, %t5) : (memref<1x1x3x16x16xf16, "gm">, memref<1x3x1x16x16xf16, "gm">, memref<1x3x3x16x16xf32, "gm">) -> ()
  %t6 = memref.alloc() : memref<1x36x36xf32, "gm">
  "ascend.defractalize"(%t5, %t6) : (memref<1x3x3x16x16xf32, "gm">, memref<1x36x36xf32, "gm">) -> ()
  %t7 = memref.alloc() : memref<1x36x36xf32, "gm">
  "ascend.muls"(%t6, %t7) {scalar = 2.50000000000000000e-01 : f64} : (memref<1x36x36xf32, "gm">, memref<1x36x36xf32, "gm">) -> ()
  %t8 = memref.alloc() : memref<1x36x1xf32, "gm">
  "ascend.reduce_max"(%t7, %t8) : (memref<1x36x36xf32, "gm">, memref<1x36x1xf32, "gm">) -> ()
  %t9 = memref.alloc() : memref<1x36x36xf32, "gm">
  "ascend.sub"(%t7, %t8, %t9) : (memref<1x36x36xf32, "gm">, memref<1x36x1xf32, "gm">, memref<1x36x36xf32, "gm">) -> ()
  %t10 = memref.alloc() : memref<1x36x36xf32, "gm">
  "ascend.exp"(%t9, %t10) : (memref<1x36x36xf32, "gm">, memref<1x36x36xf32, "gm">) -> ()
  %t11 = memref.alloc() : memref<1x36x1xf32, "gm">
  "ascend.reduce_sum"(%t10, %t11) : (memref<1x36x36xf32, "gm">, memref<1x36x1xf32, "gm">) -> ()
  %t12 = memref.alloc() : memref<1x36x36xf32, "gm">
  %t13 = memref.alloc() : memref<1x36x1xf32, "gm">
  "ascend.reciprocal"(%t11, %t13) : (memref<1x36x1xf32, "gm">, memref<1x36x1xf32, "gm">) -> ()
  "ascend.mul"(%t10, %t13, %t12) : (memref<1x36x36xf32, "gm">, memref<1x36x1xf32, "gm">, memref<1x36x36xf32, "gm">) -> ()
  %t14 = memref.alloc() : memref<1x36x36xf16, "gm">
  "ascend.cast"(%t12, %t14) {round_mode = "rint"} : (memref<1x36x36xf32, "gm">, memref<1x36x36xf16, "gm">) -> ()
  %t15 = memref.alloc() : memref<1x3x3x16x16xf16, "gm">
  "ascend.fractalize"(%t14, %t15) : (memref<1x36x36xf16, "gm">, memref<1x3x3x16x16xf16, "gm">) -> ()
  %t16 = memref.alloc() : memref<1x36x16xf16, "gm">
  "ascend.cast"(%v, %t16) {round_mode = "rint"} : (memref<1x36x16xf32, "gm">, memref<1x36x16xf16, "gm">) -> ()
  %t17 = memref.alloc() : memref<1x1x3x16x16xf16, "gm">
  "ascend.fractalize"(%t16, %t17) : (memref<1x36x16xf16, "gm">, memref<1x1x3x16x16xf16, "gm">) -> ()
  %t18 = memref.alloc() : memref<1x1x3x16x16xf32, "gm">
  "ascend.batch_matmul"(%t15, %t17, %t18) : (memref<1x3x3x16x16xf16, "gm">, memref<1x1x3x16x16xf16, "gm">, memref<1x1x3x16x16xf32, "gm">) -> ()
  "ascend.defractalize"(%t18, %y) : (memref<1x1x3x16x16xf32, "gm">, memref<1x36x16xf32, "gm">) -> ()
  return
}
