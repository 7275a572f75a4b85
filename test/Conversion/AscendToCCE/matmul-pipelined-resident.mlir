// RUN: npu-opt %s --split-input-file --npu-lower-matmul="m=32 k=64 schedule=pipelined timed-residency=false" 2>/dev/null | FileCheck %s
// RUN: npu-opt %s --split-input-file --npu-lower-matmul="m=32 k=64 schedule=pipelined timed-residency=false" 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// RUN: npu-opt %s --split-input-file --npu-lower-matmul="m=32 k=64 schedule=pipelined resident-a=false" 2>/dev/null | FileCheck %s --check-prefix=OFF

// One row of C tiles (m = M = 32), two column tiles (K = 128): A's row
// strip (32 x 96, all of A) is copied to L1 once, before the flat loop, and
// the loop over (column tile, B chunk) copies only B chunks of at most half
// the reduction (48 = 3 blocks of N1 = 6), its L0A loads reading the strip
// at the chunk's offset (a view of the 5 blocks a load of block row 0
// touches: 3 repeats, 2 apart). No scf.if guards the strip's copy.
// (timed-residency=false: the strip wherever it fits; a reduction this short
// streams A by the time estimate, matmul-pipelined-residency.mlir.)

// REMARK: remark: matmul tiling: strategy=os tiles (m=32, n=96, k=64) with the A row strip resident in L1; modelled GM traffic: read 15360 elements (A 3072, B 12288) = 30720 bytes, {{.*}}; pipelined schedule: L1 chunk n=48 (B only: the A row strip stays in L1), L0 sub-step n=48, 2 C piece(s) in L0C

// CHECK-LABEL: func.func @one_row
// CHECK:       memref.alloc() : memref<2x2x16x16xf32, "l0c">
// CHECK:       memref.alloc() : memref<2x2x16x16xf32, "l0c">
// CHECK:       %[[STRIP:.*]] = memref.alloc() : memref<6x2x16x16xf16, "l1">
// CHECK-NEXT:  "cce.copy_gm_to_l1"(%{{.*}}, %[[STRIP]]) {burst_len = 32 : i64, dst_gap = 0 : i64, n_burst = 6 : i64
// CHECK-NOT:   scf.if
// CHECK:       scf.for %[[I:.*]] = %{{.*}} to %[[TRIPS:.*]] step
// CHECK:         %[[CHUNK:.*]] = arith.remui %[[I]]
// CHECK:         %[[S0:.*]] = arith.muli %[[CHUNK]]
// CHECK:         %[[BASE:.*]] = arith.muli %[[S0]], %{{.*}} : index
// CHECK:         %[[B1:.*]] = memref.alloc() : memref<4x3x16x16xf16, "l1">
// CHECK-NEXT:    "cce.copy_gm_to_l1"(%{{.*}}, %[[B1]])
// CHECK-NOT:     "cce.copy_gm_to_l1"
// CHECK:         %[[FLAT:.*]] = memref.collapse_shape %[[STRIP]] {{.*}} into memref<12x16x16xf16, "l1">
// CHECK:         memref.subview %[[FLAT]][%[[BASE]], 0, 0] [5, 16, 16]
// CHECK:         "cce.load_l1_to_l0a"({{.*}}) {dst_stride = 1 : i64, repeat = 3 : i64, src_stride = 2 : i64
// CHECK:         "cce.mad"
// CHECK-NOT:     "cce.copy_gm_to_l1"
// CHECK:       return
// OFF-LABEL:   func.func @one_row
// OFF-NOT:     "l1">
// OFF:         scf.for
// OFF-COUNT-2:   "cce.copy_gm_to_l1"
func.func @one_row(%a: memref<6x2x16x16xf16, "gm">, %b: memref<8x6x16x16xf16, "gm">, %c: memref<8x2x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<6x2x16x16xf16, "gm">, memref<8x6x16x16xf16, "gm">, memref<8x2x16x16xf32, "gm">) -> ()
  return
}

// -----

// Two rows of C tiles (M = 64): A streams with B (a loop per row would
// fill and drain the pipeline once per row behind its strip's copy).
// REMARK: remark: matmul tiling: strategy=os tiles (m=32, n=96, k=64); modelled GM traffic: read 18432 elements (A 6144, B 12288)
// CHECK-LABEL: func.func @two_rows
// CHECK-NOT:   "l1">
// CHECK:       scf.for
// CHECK-COUNT-2: "cce.copy_gm_to_l1"
func.func @two_rows(%a: memref<6x4x16x16xf16, "gm">, %b: memref<4x6x16x16xf16, "gm">, %c: memref<4x4x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<6x4x16x16xf16, "gm">, memref<4x6x16x16xf16, "gm">, memref<4x4x16x16xf32, "gm">) -> ()
  return
}

// -----

// One column tile (K = k = 64): A is read once anyway, so it streams.
// REMARK: remark: matmul tiling: strategy=os tiles (m=32, n=96, k=64); modelled GM traffic: read 9216 elements (A 3072, B 6144)
// CHECK-LABEL: func.func @one_column
// CHECK-NOT:   "l1">
// CHECK:       scf.for
// CHECK-COUNT-2: "cce.copy_gm_to_l1"
func.func @one_column(%a: memref<6x2x16x16xf16, "gm">, %b: memref<4x6x16x16xf16, "gm">, %c: memref<4x2x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<6x2x16x16xf16, "gm">, memref<4x6x16x16xf16, "gm">, memref<4x2x16x16xf32, "gm">) -> ()
  return
}

// -----

// The strip and two B chunks of half the reduction would exceed L1
// ((32 + 64) x 5632 f16 = 1056 KiB > 1 MiB): A streams.
// REMARK: remark: matmul tiling: strategy=os tiles (m=32, n={{[0-9]+}}, k=64); modelled GM traffic: read 1081344 elements (A 360448, B 720896)
// CHECK-LABEL: func.func @no_room
// CHECK-NOT:   "l1">
// CHECK:       scf.for
// CHECK-COUNT-2: "cce.copy_gm_to_l1"
func.func @no_room(%a: memref<352x2x16x16xf16, "gm">, %b: memref<8x352x16x16xf16, "gm">, %c: memref<8x2x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<352x2x16x16xf16, "gm">, memref<8x352x16x16xf16, "gm">, memref<8x2x16x16xf32, "gm">) -> ()
  return
}
