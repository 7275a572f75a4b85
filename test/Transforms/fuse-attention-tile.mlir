// RUN: npu-opt %s --verify-diagnostics --npu-fuse-attention=softmax=f16 | FileCheck %s
// RUN: npu-opt %s --npu-fuse-attention=softmax=f16 --npu-lower-attention 2>/dev/null | FileCheck %s --check-prefix=KERNEL
// RUN: npu-opt %s --npu-fuse-attention="softmax=f16 tile=fewest" 2>&1 | FileCheck %s --check-prefix=FEWEST
// RUN: npu-opt %s --npu-fuse-attention=softmax=f16 2>&1 | FileCheck %s --check-prefix=REMARK

// The tile of the fewest modelled cycles (npu.costmodel.attention.cost): 256 keys in
// one key tile (no online softmax: no partial P.V drained and no context
// rescaled per key tile), so 96 query rows (whole-key scores fit L0C with
// fewer rows). K^T and V of 256 keys do not fit L0B together: Q.K^T and
// P.V run in chunks of 96, 80 and 80 keys (two of each fit, alternating).
// REMARK:      remark: fused attention
// REMARK-SAME: Q.K^T and P.V in 3 chunks of up to 96 keys (K^T and V of a key tile do not fit L0B together); the tile of the fewest modelled cycles: {{[0-9]+}} cycles (vector
// CHECK-LABEL: func.func @attention
// CHECK:       } {npu.attention = {{{.*}}key_rows = 256 : i64, query_rows = 96 : i64
// Q.K^T: one mad per chunk, into the chunk's column blocks of the scores;
// P.V: one per chunk, accumulated in L0C. Two query tiles (96 and 64 rows).
// KERNEL-LABEL: func.func @attention
// KERNEL:       cce.mad{{.*}}accumulate = false, k = 96 : i64, m = 96 : i64, n = 64 : i64
// KERNEL:       cce.mad{{.*}}accumulate = false, k = 80 : i64, m = 96 : i64, n = 64 : i64
// KERNEL:       cce.mad{{.*}}accumulate = false, k = 80 : i64, m = 96 : i64, n = 64 : i64
// KERNEL:       cce.mad{{.*}}accumulate = false, k = 80 : i64, m = 96 : i64, n = 96 : i64
// KERNEL:       cce.mad{{.*}}accumulate = true, k = 80 : i64, m = 96 : i64, n = 80 : i64
// KERNEL:       cce.mad{{.*}}accumulate = true, k = 80 : i64, m = 96 : i64, n = 80 : i64
// KERNEL:       cce.mad{{.*}}m = 64 : i64
// KERNEL-COUNT-5: cce.mad{{.*}}m = 64 : i64
// KERNEL-NOT:   cce.mad
// KERNEL:       return
// tile=fewest: the planner of before (K^T and V of a key tile in L0B at
// once, the fewest tiles): 128 rows x 176 keys, an online softmax.
// FEWEST:       remark: fused attention
// FEWEST-SAME:  query tiles of 128 rows, keys in tiles of 176 with an online softmax
// FEWEST-NOT:   modelled
// FEWEST:       key_rows = 176 : i64, query_rows = 128 : i64
func.func @attention(%q: memref<1x4x16x16x16xf16, "gm">, %k: memref<1x16x4x16x16xf16, "gm">, %v: memref<1x4x16x16x16xf16, "gm">, %y: memref<1x256x64xf32, "gm">) {
  %c1 = memref.alloc() : memref<1x16x16x16x16xf32, "gm">
  // expected-remark @+1 {{query tiles of 96 rows, all 256 keys per tile: the scores stay on chip}}
  "ascend.batch_matmul"(%q, %k, %c1) : (memref<1x4x16x16x16xf16, "gm">, memref<1x16x4x16x16xf16, "gm">, memref<1x16x16x16x16xf32, "gm">) -> ()
  %s = memref.alloc() : memref<1x256x256xf32, "gm">
  "ascend.defractalize"(%c1, %s) : (memref<1x16x16x16x16xf32, "gm">, memref<1x256x256xf32, "gm">) -> ()
  %t = memref.alloc() : memref<1x256x256xf32, "gm">
  "ascend.muls"(%s, %t) {scalar = 0.125 : f64} : (memref<1x256x256xf32, "gm">, memref<1x256x256xf32, "gm">) -> ()
  %m = memref.alloc() : memref<1x256x1xf32, "gm">
  "ascend.reduce_max"(%t, %m) : (memref<1x256x256xf32, "gm">, memref<1x256x1xf32, "gm">) -> ()
  %d = memref.alloc() : memref<1x256x256xf32, "gm">
  "ascend.sub"(%t, %m, %d) : (memref<1x256x256xf32, "gm">, memref<1x256x1xf32, "gm">, memref<1x256x256xf32, "gm">) -> ()
  %e = memref.alloc() : memref<1x256x256xf32, "gm">
  "ascend.exp"(%d, %e) : (memref<1x256x256xf32, "gm">, memref<1x256x256xf32, "gm">) -> ()
  %u = memref.alloc() : memref<1x256x1xf32, "gm">
  "ascend.reduce_sum"(%e, %u) : (memref<1x256x256xf32, "gm">, memref<1x256x1xf32, "gm">) -> ()
  %p = memref.alloc() : memref<1x256x256xf32, "gm">
  "ascend.div"(%e, %u, %p) : (memref<1x256x256xf32, "gm">, memref<1x256x1xf32, "gm">, memref<1x256x256xf32, "gm">) -> ()
  %h = memref.alloc() : memref<1x256x256xf16, "gm">
  "ascend.cast"(%p, %h) {round_mode = "rint"} : (memref<1x256x256xf32, "gm">, memref<1x256x256xf16, "gm">) -> ()
  %f = memref.alloc() : memref<1x16x16x16x16xf16, "gm">
  "ascend.fractalize"(%h, %f) : (memref<1x256x256xf16, "gm">, memref<1x16x16x16x16xf16, "gm">) -> ()
  %c2 = memref.alloc() : memref<1x4x16x16x16xf32, "gm">
  "ascend.batch_matmul"(%f, %v, %c2) : (memref<1x16x16x16x16xf16, "gm">, memref<1x4x16x16x16xf16, "gm">, memref<1x4x16x16x16xf32, "gm">) -> ()
  "ascend.defractalize"(%c2, %y) : (memref<1x4x16x16x16xf32, "gm">, memref<1x256x64xf32, "gm">) -> ()
  return
}
