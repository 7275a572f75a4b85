// RUN: npu-opt %s --npu-lower-elementwise --npu-lower-matmul=schedule=pipelined --npu-double-buffer --npu-prefetch=remarks=true 2>&1 | FileCheck %s

// The cast of A shares the matmul's location (the frontend gives an op's
// preparation its node's name): it is this op's preparation, the exp the
// previous op. No single MTE2 idle gap holds a 160 KiB weight chunk (2560
// cycles), so the first slot is cut at its bursts (column blocks) over the
// exp's tail and the cast's first gap; the second slot no longer fits and
// stays in the loop.
// CHECK:       remark: npu-prefetch: 1 of 2 weight slot(s) (163840 bytes, 2 copies) loaded after 'exp' step #2 (of 2), after this op's preparation step #1, ahead of this op's first wait (estimated MTE2 idle gaps from 'exp' on: 0, 3072, 1023, 0 cycles; a chunk of 163840 bytes takes 2560)
// CHECK-LABEL: func.func @split
// CHECK-SAME:  %[[W:[a-z0-9_]+]]: memref<80x64x16x16xf16, "gm"> {npu.constant
// CHECK:       cce.vexp
// CHECK:       %[[SLOT0:.*]] = memref.alloc() {npu.slot = 0 : i64} : memref<80x4x16x16xf16, "l1">
// CHECK:       %[[PART0:.*]] = memref.subview %[[SLOT0]][32, 0, 0, 0] [48, 4, 16, 16]
// CHECK:       "cce.copy_gm_to_l1"(%{{.*}}, %[[PART0]]) {{{.*}}n_burst = 48
// CHECK:       cce.vconv
// CHECK:       %[[PART1:.*]] = memref.subview %[[SLOT0]][0, 0, 0, 0] [32, 4, 16, 16]
// CHECK:       "cce.copy_gm_to_l1"(%{{.*}}, %[[PART1]]) {{{.*}}n_burst = 32
// CHECK:       cce.vconv
// CHECK:       scf.for %[[I:[a-z0-9_]+]] = %[[LB:[a-z0-9_]+]] to
// CHECK:         %[[LATER:.*]] = arith.cmpi ne, %[[I]], %[[LB]] : index
// CHECK-NEXT:    scf.if %[[LATER]] {
// CHECK-NEXT:      "cce.copy_gm_to_l1"
// CHECK-NEXT:      "cce.copy_gm_to_l1"(%{{.*}}, %[[SLOT0]])
// CHECK-NEXT:    } else {
// CHECK-NEXT:      "cce.copy_gm_to_l1"
// CHECK-NEXT:    {{^ +}}}{{$}}
// CHECK:         %[[SLOT1:.*]] = memref.alloc() {npu.slot = 1 : i64} : memref<80x4x16x16xf16, "l1">
// CHECK-NEXT:    "cce.copy_gm_to_l1"(%{{.*}}, %[[SLOT1]])
func.func @split(%x: memref<64x3x16x16xf32, "gm">, %e: memref<64x3x16x16xf32, "gm">, %a: memref<64x3x16x16xf16, "gm">, %w: memref<80x64x16x16xf16, "gm"> {npu.constant = dense<0.5> : tensor<80x64x16x16xf16>}, %c: memref<80x3x16x16xf32, "gm">) {
  "ascend.exp"(%x, %e) : (memref<64x3x16x16xf32, "gm">, memref<64x3x16x16xf32, "gm">) -> () loc("exp")
  "ascend.cast"(%e, %a) {round_mode = "rint"} : (memref<64x3x16x16xf32, "gm">, memref<64x3x16x16xf16, "gm">) -> () loc("mm")
  "ascend.matmul"(%a, %w, %c) {npu.options = {"l1-chunk" = 64 : i64}} : (memref<64x3x16x16xf16, "gm">, memref<80x64x16x16xf16, "gm">, memref<80x3x16x16xf32, "gm">) -> () loc("mm")
  return
}
