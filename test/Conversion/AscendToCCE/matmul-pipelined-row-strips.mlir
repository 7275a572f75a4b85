// RUN: npu-opt %s --split-input-file --npu-lower-matmul="m=32 k=32 schedule=pipelined timed-residency=false" 2>/dev/null | FileCheck %s
// RUN: npu-opt %s --split-input-file --npu-lower-matmul="m=32 k=32 schedule=pipelined timed-residency=false" 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// RUN: npu-opt %s --split-input-file --npu-lower-matmul="m=32 k=32 schedule=pipelined resident-a=false" 2>/dev/null | FileCheck %s --check-prefix=OFF

// Two rows and two columns of 32x32 C tiles (M = K = 64, N = 64): A's row
// strip (32 x 64) in two parts of 32 reduction elements, each its own L1
// buffer live across the loop, and B's parts in two turns. The loop runs
// over C tiles; its body unrolls the parts: the row's first column tile
// (scf.if) copies A's part p, every tile copies B's part p, then the part's
// mads (the first part overwrites C). A is read once, B once per row.

// REMARK: remark: matmul tiling: strategy=os tiles (m=32, n=64, k=32) with each row strip of A resident in L1 across its column tiles; modelled GM traffic: read 12288 elements (A 4096, B 8192) = 24576 bytes, {{.*}}; pipelined schedule: L1 chunk n=32 (A row strips in parts, each kept in L1 for its row), L0 sub-step n=32, 2 C piece(s) in L0C

// CHECK-LABEL: func.func @rows
// CHECK-COUNT-2: memref.alloc() : memref<1x2x16x16xf32, "l0c">
// CHECK:       %[[A0:.*]] = memref.alloc() : memref<2x2x16x16xf16, "l1">
// CHECK-NEXT:  %[[A1:.*]] = memref.alloc() : memref<2x2x16x16xf16, "l1">
// CHECK-NEXT:  %[[B0:.*]] = memref.alloc() : memref<2x2x16x16xf16, "l1">
// CHECK-NEXT:  %[[B1:.*]] = memref.alloc() : memref<2x2x16x16xf16, "l1">
// CHECK:       scf.for %[[T:.*]] = %{{.*}} to %c4 step %c1 {
// CHECK:         %[[COL:.*]] = arith.remui %[[T]], %c2
// CHECK:         %[[START:.*]] = arith.cmpi eq, %[[COL]], %{{.*}} : index
// CHECK:         scf.if %[[START]] {
// CHECK:           "cce.copy_gm_to_l1"(%{{.*}}, %[[A0]]){{.*}}
// CHECK-NEXT:    }
// CHECK-NEXT:    memref.subview %arg1
// CHECK-NEXT:    "cce.copy_gm_to_l1"(%{{.*}}, %[[B0]])
// CHECK:         "cce.mad"({{.*}}) {accumulate = false
// CHECK:         "cce.mad"({{.*}}) {accumulate = false
// CHECK:         scf.if %[[START]] {
// CHECK:           "cce.copy_gm_to_l1"(%{{.*}}, %[[A1]]){{.*}}
// CHECK-NEXT:    }
// CHECK-NEXT:    memref.subview %arg1
// CHECK-NEXT:    "cce.copy_gm_to_l1"(%{{.*}}, %[[B1]])
// CHECK:         "cce.mad"({{.*}}) {accumulate = true
// CHECK:         "cce.mad"({{.*}}) {accumulate = true
// CHECK:         "cce.copy_l0c_to_ub"
// CHECK:       return

// Without residency A streams with B, chunk by chunk, in the flat loop over
// (tile, chunk): no copy is guarded.
// OFF-LABEL:   func.func @rows
// OFF:         scf.for
// OFF-NOT:     scf.if
// OFF:         "cce.copy_gm_to_l1"
// OFF:         "cce.copy_gm_to_l1"
func.func @rows(%a: memref<4x4x16x16xf16, "gm">, %b: memref<4x4x16x16xf16, "gm">, %c: memref<4x4x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<4x4x16x16xf16, "gm">, memref<4x4x16x16xf16, "gm">, memref<4x4x16x16xf32, "gm">) -> ()
  return
}

// -----

// One row of C tiles: the one strip is loaded before the loop
// (matmul-pipelined-resident.mlir), not in parts.
// REMARK: remark: matmul tiling: strategy=os tiles (m=32, n=64, k=32) with the A row strip resident in L1;
// CHECK-LABEL: func.func @one_row
// CHECK-NOT:   scf.if
// CHECK:       scf.for
func.func @one_row(%a: memref<4x2x16x16xf16, "gm">, %b: memref<4x4x16x16xf16, "gm">, %c: memref<4x2x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<4x2x16x16xf16, "gm">, memref<4x4x16x16xf16, "gm">, memref<4x2x16x16xf32, "gm">) -> ()
  return
}
