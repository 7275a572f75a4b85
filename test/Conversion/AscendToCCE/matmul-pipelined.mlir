// RUN: npu-opt %s --npu-lower-matmul="m=32 k=64 schedule=pipelined l1-chunk=32" 2>/dev/null | FileCheck %s
// RUN: npu-opt %s --npu-lower-matmul="m=32 k=64 schedule=pipelined l1-chunk=32" 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// RUN: not npu-opt %s --npu-lower-matmul="m=32 k=64 schedule=pipelined l1-chunk=48" 2>&1 | FileCheck %s --check-prefix=BADCHUNK
// RUN: npu-opt %s --npu-lower-matmul="m=32 k=64 schedule=pipelined l1-chunk=32 drain-order=per-piece" 2>/dev/null | FileCheck %s --check-prefix=PIECE

// The pipelined OS schedule: 2 x 1 C tiles of 32 x 64, two L1 chunks of 32
// along the reduction (N = 64), so one flat loop of 4 (tile, chunk)
// iterations. The C tile lives in two L0C pieces of 32 columns allocated
// before the loop; each iteration stages one A and one B chunk in L1, loads
// L0A/L0B sub-steps into two alternating slots, mads into each piece (an
// overwriting mad on chunk 0) and, on the last chunk, drains the pieces
// after all the mads (drain-order=per-piece: each right after its mads).

// REMARK: remark: matmul tiling: strategy=os tiles (m=32, n=64, k=64); modelled GM traffic: read 12288 elements (A 4096, B 8192) = 24576 bytes, write-back 4096 elements = 16384 bytes, total 40960 bytes; pipelined schedule: L1 chunk n=32, L0 sub-step n=32, 2 C piece(s) in L0C
// BADCHUNK: error: l1-chunk=48 must be a multiple of 16 dividing N=64

// CHECK-LABEL: func.func @mm
// CHECK:       %[[C0:.*]] = memref.alloc() : memref<2x2x16x16xf32, "l0c">
// CHECK:       %[[C1:.*]] = memref.alloc() : memref<2x2x16x16xf32, "l0c">
// CHECK:       scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:         %[[CHUNK:.*]] = arith.remui %[[I]], %{{.*}} : index
// CHECK:         %[[TILE:.*]] = arith.divui %[[I]], %{{.*}} : index
// CHECK:         %[[FIRST:.*]] = arith.cmpi eq, %[[CHUNK]], %{{.*}} : index
// CHECK:         %[[LAST:.*]] = arith.cmpi eq, %[[CHUNK]], %{{.*}} : index
// CHECK:         %[[A1:.*]] = memref.alloc() : memref<2x2x16x16xf16, "l1">
// CHECK:         "cce.copy_gm_to_l1"(%{{.*}}, %[[A1]])
// CHECK:         %[[B1:.*]] = memref.alloc() : memref<4x2x16x16xf16, "l1">
// CHECK:         "cce.copy_gm_to_l1"(%{{.*}}, %[[B1]])
// CHECK:         %[[SA0:.*]] = memref.alloc() : memref<2x2x16x16xf16, "l0a">
// CHECK:         %[[SA1:.*]] = memref.alloc() : memref<2x2x16x16xf16, "l0a">
// CHECK:         %[[SB0:.*]] = memref.alloc() : memref<2x2x16x16xf16, "l0b">
// CHECK:         %[[SB1:.*]] = memref.alloc() : memref<2x2x16x16xf16, "l0b">
// CHECK-COUNT-2: "cce.load_l1_to_l0a"
// CHECK-COUNT-2: "cce.load_l1_to_l0b"
// CHECK:         scf.if %[[FIRST]] {
// CHECK-NEXT:      "cce.mad"(%[[SA0]], %[[SB0]], %[[C0]]) {accumulate = false
// CHECK:         } else {
// CHECK-NEXT:      "cce.mad"(%[[SA0]], %[[SB0]], %[[C0]]) {accumulate = true
// CHECK-COUNT-2: "cce.load_l1_to_l0a"
// CHECK-COUNT-2: "cce.load_l1_to_l0b"
// CHECK:         scf.if %[[FIRST]] {
// CHECK-NEXT:      "cce.mad"(%[[SA1]], %[[SB1]], %[[C1]]) {accumulate = false
// CHECK:         scf.if %[[LAST]] {
// CHECK:           memref.collapse_shape %[[C0]]
// CHECK:           "cce.copy_l0c_to_ub"
// CHECK:           "cce.copy_ub_to_gm"
// CHECK:         }
// CHECK:         scf.if %[[LAST]] {
// CHECK:           memref.collapse_shape %[[C1]]
// CHECK:           "cce.copy_l0c_to_ub"
// CHECK:           "cce.copy_ub_to_gm"
// CHECK:       return

// PIECE-LABEL: func.func @mm
// PIECE:         scf.for
// PIECE:           "cce.mad"(%{{.*}}, %{{.*}}, %[[P0:.*]]) {accumulate = false
// PIECE:           scf.if
// PIECE:             memref.collapse_shape %[[P0]]
// PIECE:             "cce.copy_l0c_to_ub"
// PIECE:           "cce.mad"(%{{.*}}, %{{.*}}, %[[P1:.*]]) {accumulate = false
// PIECE:           scf.if
// PIECE:             memref.collapse_shape %[[P1]]
// PIECE:             "cce.copy_l0c_to_ub"
// PIECE:       return

func.func @mm(%a: memref<4x4x16x16xf16, "gm">, %b: memref<4x4x16x16xf16, "gm">, %c: memref<4x4x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<4x4x16x16xf16, "gm">, memref<4x4x16x16xf16, "gm">, memref<4x4x16x16xf32, "gm">) -> ()
  return
}
