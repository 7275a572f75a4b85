// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-fuse | FileCheck %s
// RUN: npu-opt %s --split-input-file --npu-fuse --npu-lower-fused 2>/dev/null | FileCheck %s --check-prefix=KERNEL

// BERT's vocabulary softmax: rows of 30,522 f32 (122 KB, not whole 32-byte
// blocks) fit UB twice over: one row a chunk, resident, in two slots.
// CHECK-LABEL: func.func @vocabulary_softmax
// CHECK:       scf.execute_region {
// KERNEL-LABEL: func.func @vocabulary_softmax
// KERNEL:       scf.for
// The whole blocks in two pieces, the block ending the row (1 burst).
// KERNEL:       cce.copy_gm_to_ub{{.*}}burst_len = 1920
// KERNEL:       cce.copy_gm_to_ub{{.*}}burst_len = 1 :
// KERNEL:       cce.copy_gm_to_ub{{.*}}burst_len = 1895
// The tail's 6 lanes that repeat the whole blocks' last elements: -inf for
// the max, 0 for the sum.
// KERNEL:       cce.vdup{{.*}}mask = 6 {{.*}}scalar = 0xFFF0000000000000
// KERNEL:       cce.vcmax
// KERNEL:       cce.vdup{{.*}}mask = 6 {{.*}}scalar = 0.0
// KERNEL:       cce.vcadd
// The tail block is stored before the whole blocks that overlap it.
// KERNEL:       cce.copy_ub_to_gm{{.*}}burst_len = 1 :
// KERNEL-NEXT:  memref.subview
// KERNEL:       cce.copy_ub_to_gm{{.*}}burst_len = 455
func.func @vocabulary_softmax(%x: memref<16x30522xf32, "gm">, %y: memref<16x30522xf32, "gm">) {
  %m = memref.alloc() : memref<16x1xf32, "gm">
  // expected-remark @+1 {{fused 5 ops (reduce_max, sub, exp, reduce_sum, div) over 16 rows of 30522: GM traffic 15627520 -> 3906816 bytes, 4 tensor(s) stay on chip; rows resident in UB, one a chunk, in two slots (stored from their loaded buffers)}}
  "ascend.reduce_max"(%x, %m) : (memref<16x30522xf32, "gm">, memref<16x1xf32, "gm">) -> ()
  %d = memref.alloc() : memref<16x30522xf32, "gm">
  "ascend.sub"(%x, %m, %d) : (memref<16x30522xf32, "gm">, memref<16x1xf32, "gm">, memref<16x30522xf32, "gm">) -> ()
  %e = memref.alloc() : memref<16x30522xf32, "gm">
  "ascend.exp"(%d, %e) : (memref<16x30522xf32, "gm">, memref<16x30522xf32, "gm">) -> ()
  %s = memref.alloc() : memref<16x1xf32, "gm">
  "ascend.reduce_sum"(%e, %s) : (memref<16x30522xf32, "gm">, memref<16x1xf32, "gm">) -> ()
  "ascend.div"(%e, %s, %y) : (memref<16x30522xf32, "gm">, memref<16x1xf32, "gm">, memref<16x30522xf32, "gm">) -> ()
  return
}

// -----

// Rows within the repeat stride that are not whole blocks stay unfused
// (the unfused reductions take them).
// CHECK-LABEL: func.func @short_rows_not_whole_blocks
// CHECK-NOT:   scf.execute_region
func.func @short_rows_not_whole_blocks(%x: memref<4x1001xf32, "gm">, %y: memref<4x1001xf32, "gm">) {
  %m = memref.alloc() : memref<4x1xf32, "gm">
  // expected-remark @+1 {{'ascend.reduce_max' left unfused: not fused with its consumer 'ascend.sub': rows of 1001 elements of 4 bytes are not whole 32-byte blocks: fused kernels move whole-block rows, or keep one row resident in UB in two slots, which needs rows past the vector repeat stride}}
  "ascend.reduce_max"(%x, %m) : (memref<4x1001xf32, "gm">, memref<4x1xf32, "gm">) -> ()
  // expected-remark @+1 {{'ascend.sub' left unfused}}
  "ascend.sub"(%x, %m, %y) : (memref<4x1001xf32, "gm">, memref<4x1xf32, "gm">, memref<4x1001xf32, "gm">) -> ()
  return
}
