// RUN: npu-opt %s --verify-diagnostics --npu-fuse-attention=ub-fraction=0.12 | FileCheck %s
// RUN: npu-opt %s --npu-fuse-attention="ub-fraction=0.12 softmax=f32" --npu-lower-attention 2>&1 | FileCheck %s --check-prefix=KERNEL
// RUN: npu-opt %s --npu-fuse-attention=ub-fraction=0.12 --npu-lower-attention 2>&1 | FileCheck %s --check-prefix=RESIDENT

// Several query tiles per head (a small UB share: 2 tiles of 32 rows): the
// casts of Q, K, V to f16 stay separate ops (K and V would be re-cast per
// query tile), but their fractalizes join the group: the kernel reads the
// f16 rows and the loads lay them out as fractals on the way to L1.
// CHECK-LABEL: func.func @attention
// CHECK-COUNT-3: "ascend.cast"
// CHECK:       scf.execute_region {
// CHECK-NOT:     "ascend.cast"{{.*}}xf32, "gm">, memref<2x64x32xf16
// CHECK:         "ascend.fractalize"
// CHECK:       } {npu.attention = {{{.*}}key_rows = 64 : i64, query_rows = 32 : i64
// The kernel: no f32 staging in UB; a 16-column block of f16 rows is one
// GM -> L1 copy of one 32-byte burst per row (the gap skips the row's other
// columns: K^T's 64 columns, Q's and V's 32). Both query tiles of a head
// are one pipeline: the second's scores are computed before the first's
// P.V.
// KERNEL-LABEL: func.func @attention
// KERNEL-NOT:   cce.copy_gm_to_ub
// KERNEL:       scf.for
// KERNEL:       cce.copy_gm_to_l1{{.*}}burst_len = 1 : i64, dst_gap = 0 : i64, n_burst = 32 : i64, src_gap = 1 : i64
// KERNEL:       cce.copy_gm_to_l1{{.*}}burst_len = 1 : i64, dst_gap = 0 : i64, n_burst = 32 : i64, src_gap = 3 : i64
// KERNEL:       cce.mad
// P in two runs of two key slabs (32 rows each), each copied to L1 once
// made: the next tile's scores wait only for the last run's copy. The scale
// (1/sqrt(32), not a power of two: not folded into Q) rides on the shift:
// one vmadd per slab gives scale * s - scale * max.
// KERNEL:       cce.vmuls{{.*}}scalar = -0.17677669529663687
// KERNEL-NOT:   cce.vsub
// KERNEL:       cce.vmadd
// KERNEL:       cce.vmadd
// KERNEL:       cce.vconv{{.*}}(memref<1024xf16, strided<[1]>, "ub">, memref<1024xf32, strided<[1]>, "ub">)
// KERNEL:       cce.vexp{{.*}}memref<1024xf16
// KERNEL:       cce.copy_ub_to_l1{{.*}}memref<2x2x16x16xf16, strided<[512, 256, 16, 1]>, "l1">
// KERNEL:       cce.vmadd
// KERNEL:       cce.vmadd
// KERNEL:       cce.vconv{{.*}}offset: 1024>, "ub">, memref<1024xf32, strided<[1], offset: 1024>, "ub">)
// KERNEL:       cce.vexp
// KERNEL:       cce.copy_ub_to_l1{{.*}}memref<2x2x16x16xf16, strided<[512, 256, 16, 1], offset: 1024>, "l1">
// KERNEL:       cce.mad
// KERNEL-SAME:  k = 64 : i64, m = 32 : i64, n = 32 : i64
// KERNEL:       cce.mad
// KERNEL-SAME:  k = 48 : i64, m = 32 : i64, n = 64 : i64
// KERNEL:       cce.copy_ub_to_gm
// KERNEL-NOT:   cce.copy_gm_to_ub
// A head's K and V stay in L1 over its query tiles, and a query tile's Q
// comes to L1 with the step before it (after that step's Q.K^T). All keys
// are one tile here: the first step loads Q (two column blocks) and K^T
// (four), computes Q.K^T, loads the second tile's Q (two), then V (two,
// n_burst 64: once the step is issued, as the next head's V must wait for
// this head's last P.V); the second step computes Q.K^T, then loads the
// next head's first Q and, its own K^T read, the next head's K^T (four);
// after the first P.V, the next head's first step only computes Q.K^T and
// loads its second Q, and its V follows that head's previous P.V.
// RESIDENT-LABEL: func.func @attention
// RESIDENT-COUNT-6: cce.copy_gm_to_l1
// RESIDENT-NOT:     cce.copy_gm_to_l1
// RESIDENT:         cce.mad
// RESIDENT-SAME:    k = 64 : i64, m = 32 : i64, n = 32 : i64
// RESIDENT-COUNT-2: cce.copy_gm_to_l1{{.*}}n_burst = 32
// RESIDENT-COUNT-2: cce.copy_gm_to_l1{{.*}}n_burst = 64
// RESIDENT-NOT:     cce.copy_gm_to_l1
// RESIDENT:         cce.mad
// RESIDENT-SAME:    k = 64 : i64, m = 32 : i64, n = 32 : i64
// RESIDENT-COUNT-6: cce.copy_gm_to_l1{{.*}}n_burst = 32
// RESIDENT-NOT:     cce.copy_gm_to_l1
// RESIDENT:         cce.mad
// RESIDENT-SAME:    k = 48 : i64, m = 32 : i64, n = 64 : i64
// RESIDENT-NOT:     cce.copy_gm_to_l1
// RESIDENT:         cce.mad
// RESIDENT-SAME:    k = 64 : i64, m = 32 : i64, n = 32 : i64
// RESIDENT-COUNT-2: cce.copy_gm_to_l1{{.*}}n_burst = 32
// RESIDENT-NOT:     cce.copy_gm_to_l1
// RESIDENT:         cce.mad
// RESIDENT-SAME:    k = 48 : i64, m = 32 : i64, n = 64 : i64
// RESIDENT-COUNT-2: cce.copy_gm_to_l1{{.*}}n_burst = 64
// RESIDENT-NOT:     cce.copy_gm_to_l1
// RESIDENT:         return
func.func @attention(%q: memref<2x64x32xf32, "gm">, %kt: memref<2x32x64xf32, "gm">, %v: memref<2x64x32xf32, "gm">, %y: memref<2x64x32xf32, "gm">) {
  %t1 = memref.alloc() : memref<2x64x32xf16, "gm">
  "ascend.cast"(%q, %t1) {round_mode = "rint"} : (memref<2x64x32xf32, "gm">, memref<2x64x32xf16, "gm">) -> ()
  %t2 = memref.alloc() : memref<2x2x4x16x16xf16, "gm">
  "ascend.fractalize"(%t1, %t2) : (memref<2x64x32xf16, "gm">, memref<2x2x4x16x16xf16, "gm">) -> ()
  %t3 = memref.alloc() : memref<2x32x64xf16, "gm">
  "ascend.cast"(%kt, %t3) {round_mode = "rint"} : (memref<2x32x64xf32, "gm">, memref<2x32x64xf16, "gm">) -> ()
  %t4 = memref.alloc() : memref<2x4x2x16x16xf16, "gm">
  "ascend.fractalize"(%t3, %t4) : (memref<2x32x64xf16, "gm">, memref<2x4x2x16x16xf16, "gm">) -> ()
  %t5 = memref.alloc() : memref<2x4x4x16x16xf32, "gm">
  // expected-remark @+1 {{fused attention (16 ops; Q, K, V read as f16 rows and laid out on chip) over 2 heads, seq 64, head dim 32: query tiles of 32 rows, all 64 keys per tile: the scores stay on chip}}
  "ascend.batch_matmul"(%t2, %t4, %t5) : (memref<2x2x4x16x16xf16, "gm">, memref<2x4x2x16x16xf16, "gm">, memref<2x4x4x16x16xf32, "gm">) -> ()
  %t6 = memref.alloc() : memref<2x64x64xf32, "gm">
  "ascend.defractalize"(%t5, %t6) : (memref<2x4x4x16x16xf32, "gm">, memref<2x64x64xf32, "gm">) -> ()
  %t7 = memref.alloc() : memref<2x64x64xf32, "gm">
  "ascend.muls"(%t6, %t7) {scalar = 1.76776695296636865e-01 : f64} : (memref<2x64x64xf32, "gm">, memref<2x64x64xf32, "gm">) -> ()
  %t8 = memref.alloc() : memref<2x64x1xf32, "gm">
  "ascend.reduce_max"(%t7, %t8) : (memref<2x64x64xf32, "gm">, memref<2x64x1xf32, "gm">) -> ()
  %t9 = memref.alloc() : memref<2x64x64xf32, "gm">
  "ascend.sub"(%t7, %t8, %t9) : (memref<2x64x64xf32, "gm">, memref<2x64x1xf32, "gm">, memref<2x64x64xf32, "gm">) -> ()
  %t10 = memref.alloc() : memref<2x64x64xf32, "gm">
  "ascend.exp"(%t9, %t10) : (memref<2x64x64xf32, "gm">, memref<2x64x64xf32, "gm">) -> ()
  %t11 = memref.alloc() : memref<2x64x1xf32, "gm">
  "ascend.reduce_sum"(%t10, %t11) : (memref<2x64x64xf32, "gm">, memref<2x64x1xf32, "gm">) -> ()
  %t12 = memref.alloc() : memref<2x64x64xf32, "gm">
  %t13 = memref.alloc() : memref<2x64x1xf32, "gm">
  "ascend.reciprocal"(%t11, %t13) : (memref<2x64x1xf32, "gm">, memref<2x64x1xf32, "gm">) -> ()
  "ascend.mul"(%t10, %t13, %t12) : (memref<2x64x64xf32, "gm">, memref<2x64x1xf32, "gm">, memref<2x64x64xf32, "gm">) -> ()
  %t14 = memref.alloc() : memref<2x64x64xf16, "gm">
  "ascend.cast"(%t12, %t14) {round_mode = "rint"} : (memref<2x64x64xf32, "gm">, memref<2x64x64xf16, "gm">) -> ()
  %t15 = memref.alloc() : memref<2x4x4x16x16xf16, "gm">
  "ascend.fractalize"(%t14, %t15) : (memref<2x64x64xf16, "gm">, memref<2x4x4x16x16xf16, "gm">) -> ()
  %t16 = memref.alloc() : memref<2x64x32xf16, "gm">
  "ascend.cast"(%v, %t16) {round_mode = "rint"} : (memref<2x64x32xf32, "gm">, memref<2x64x32xf16, "gm">) -> ()
  %t17 = memref.alloc() : memref<2x2x4x16x16xf16, "gm">
  "ascend.fractalize"(%t16, %t17) : (memref<2x64x32xf16, "gm">, memref<2x2x4x16x16xf16, "gm">) -> ()
  %t18 = memref.alloc() : memref<2x2x4x16x16xf32, "gm">
  "ascend.batch_matmul"(%t15, %t17, %t18) : (memref<2x4x4x16x16xf16, "gm">, memref<2x2x4x16x16xf16, "gm">, memref<2x2x4x16x16xf32, "gm">) -> ()
  "ascend.defractalize"(%t18, %y) : (memref<2x2x4x16x16xf32, "gm">, memref<2x64x32xf32, "gm">) -> ()
  return
}

