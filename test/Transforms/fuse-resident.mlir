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
  // expected-remark @+1 {{'ascend.reduce_max' left unfused: not fused with its consumer 'ascend.sub': rows of 1001 elements of 4 bytes are not whole 32-byte blocks: fused kernels move whole-block rows, or keep one row resident in UB, which needs rows past the vector repeat stride (or a single row)}}
  "ascend.reduce_max"(%x, %m) : (memref<4x1001xf32, "gm">, memref<4x1xf32, "gm">) -> ()
  // expected-remark @+1 {{'ascend.sub' left unfused}}
  "ascend.sub"(%x, %m, %y) : (memref<4x1001xf32, "gm">, memref<4x1xf32, "gm">, memref<4x1001xf32, "gm">) -> ()
  return
}

// -----

// One short row that is not whole blocks (a classifier's 1000 logits after
// its matmul: the cast and the bias add) is one resident kernel: the row's
// whole blocks and the block ending it, loaded from element 984.
// CHECK-LABEL: func.func @classifier_row
// CHECK:       scf.execute_region {
// KERNEL-LABEL: func.func @classifier_row
// KERNEL:       cce.copy_gm_to_ub{{.*}}burst_len = 2 :{{.*}}memref<16xf32, strided<[1], offset: 984>, "gm">
// KERNEL:       cce.vconv
// KERNEL:       cce.copy_gm_to_ub{{.*}}burst_len = 1 :{{.*}}memref<16xf16, strided<[1], offset: 984>, "gm">
// KERNEL:       cce.vadd
// KERNEL:       cce.copy_ub_to_gm{{.*}}burst_len = 1 :
func.func @classifier_row(%c: memref<1x1000xf32, "gm">, %b: memref<1x1000xf16, "gm">, %y: memref<1x1000xf16, "gm">) {
  %h = memref.alloc() : memref<1x1000xf16, "gm">
  // expected-remark @+1 {{fused 2 ops (cast, add) over 1 rows of 1000: GM traffic 12000 -> 8000 bytes, 1 tensor(s) stay on chip; rows resident in UB, one a chunk, in two slots (stored from their loaded buffers)}}
  "ascend.cast"(%c, %h) {round_mode = "rint"} : (memref<1x1000xf32, "gm">, memref<1x1000xf16, "gm">) -> ()
  "ascend.add"(%h, %b, %y) : (memref<1x1000xf16, "gm">, memref<1x1000xf16, "gm">, memref<1x1000xf16, "gm">) -> ()
  return
}

// -----

// Rows of 32768 f32 (128 KB) do not fit UB twice: the two slots share the
// bytes of the row's last stored piece. The first slot's row ends in them
// and the second's starts in them; each row loads them last.
// CHECK-LABEL: func.func @rows_over_half_of_ub
// CHECK:       scf.execute_region {
// KERNEL-LABEL: func.func @rows_over_half_of_ub
// KERNEL:       memref.alloc() : memref<64000xf32, "ub">
// KERNEL:       memref.subview %{{.*}}[0] [32768] [1]
// KERNEL:       memref.subview %{{.*}}[31232] [32768] [1]
// KERNEL:       scf.for
// The first slot: its own columns, then the shared 1536.
// KERNEL:       cce.copy_gm_to_ub{{.*}}burst_len = 2048 :
// KERNEL:       cce.copy_gm_to_ub{{.*}}burst_len = 1856 :
// KERNEL:       cce.copy_gm_to_ub{{.*}}burst_len = 192 :
// KERNEL:       cce.copy_ub_to_gm{{.*}}burst_len = 512 :
// The second slot: the columns after the shared ones, then the shared ones.
// KERNEL:       cce.copy_gm_to_ub{{.*}}burst_len = 1856 :
// KERNEL:       cce.copy_gm_to_ub{{.*}}burst_len = 2048 :
// KERNEL:       cce.copy_gm_to_ub{{.*}}burst_len = 192 :
func.func @rows_over_half_of_ub(%x: memref<16x32768xf32, "gm">, %y: memref<16x32768xf32, "gm">) {
  %m = memref.alloc() : memref<16x1xf32, "gm">
  // expected-remark @+1 {{fused 5 ops (reduce_max, sub, exp, reduce_sum, div) over 16 rows of 32768: GM traffic 16777472 -> 4194304 bytes, 4 tensor(s) stay on chip; rows resident in UB, one a chunk, in two slots sharing 1536 columns (stored from their loaded buffers)}}
  "ascend.reduce_max"(%x, %m) : (memref<16x32768xf32, "gm">, memref<16x1xf32, "gm">) -> ()
  %d = memref.alloc() : memref<16x32768xf32, "gm">
  "ascend.sub"(%x, %m, %d) : (memref<16x32768xf32, "gm">, memref<16x1xf32, "gm">, memref<16x32768xf32, "gm">) -> ()
  %e = memref.alloc() : memref<16x32768xf32, "gm">
  "ascend.exp"(%d, %e) : (memref<16x32768xf32, "gm">, memref<16x32768xf32, "gm">) -> ()
  %s = memref.alloc() : memref<16x1xf32, "gm">
  "ascend.reduce_sum"(%e, %s) : (memref<16x32768xf32, "gm">, memref<16x1xf32, "gm">) -> ()
  "ascend.div"(%e, %s, %y) : (memref<16x32768xf32, "gm">, memref<16x1xf32, "gm">, memref<16x32768xf32, "gm">) -> ()
  return
}

// -----

// GPT-2's vocabulary: rows of 50257 f32 (not whole 32-byte blocks, which
// the two-pass kernel cannot move) fit UB once: one slot.
// CHECK-LABEL: func.func @rows_that_fit_ub_once
// CHECK:       scf.execute_region {
func.func @rows_that_fit_ub_once(%x: memref<2x50257xf32, "gm">, %y: memref<2x50257xf32, "gm">) {
  %m = memref.alloc() : memref<2x1xf32, "gm">
  // expected-remark @+1 {{rows resident in UB, one a chunk, in one slot (each row loaded as the previous one is stored)}}
  "ascend.reduce_max"(%x, %m) : (memref<2x50257xf32, "gm">, memref<2x1xf32, "gm">) -> ()
  %d = memref.alloc() : memref<2x50257xf32, "gm">
  "ascend.sub"(%x, %m, %d) : (memref<2x50257xf32, "gm">, memref<2x1xf32, "gm">, memref<2x50257xf32, "gm">) -> ()
  %e = memref.alloc() : memref<2x50257xf32, "gm">
  "ascend.exp"(%d, %e) : (memref<2x50257xf32, "gm">, memref<2x50257xf32, "gm">) -> ()
  %s = memref.alloc() : memref<2x1xf32, "gm">
  "ascend.reduce_sum"(%e, %s) : (memref<2x50257xf32, "gm">, memref<2x1xf32, "gm">) -> ()
  "ascend.div"(%e, %s, %y) : (memref<2x50257xf32, "gm">, memref<2x1xf32, "gm">, memref<2x50257xf32, "gm">) -> ()
  return
}
