// RUN: npu-opt %s --npu-lower-matmul="m=256 k=256 c-pieces=4 schedule=pipelined resident-a=false" 2>/dev/null | FileCheck %s
// RUN: npu-opt %s --npu-lower-matmul="m=256 k=256 c-pieces=4 schedule=pipelined resident-a=false" 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// RUN: npu-opt %s --npu-lower-matmul="m=256 k=256 c-pieces=4 c-piece-rows=1 schedule=pipelined resident-a=false" 2>&1 >/dev/null | FileCheck %s --check-prefix=SLABS
// RUN: not npu-opt %s --npu-lower-matmul="m=256 k=256 c-pieces=4 c-piece-rows=3 schedule=pipelined resident-a=false" 2>&1 | FileCheck %s --check-prefix=BAD

// A 256x256 C tile in four L0C pieces, 512x768x768 (cube-bound: the mads'
// completion stalls bind). As column slabs (256x64) two L0A slots of 256
// rows allow a sub-step of 64, so each mad is 256 blocks; in a 2 x 2 grid of
// 128x128 pieces both L0A and L0B slots hold 128x128 and each mad is 512
// blocks: half as many mads, and half as many slot releases. Pieces go
// row-major: piece 1 is the top right one (columns +8 blocks), piece 2 the
// bottom left one (rows +8 blocks).

// REMARK: remark: matmul tiling: strategy=os tiles (m=256, n=128, k=256); {{.*}}; pipelined schedule: L1 chunk n=384, L0 sub-step n=128, 4 C piece(s) in L0C (2 x 2: 128x128 each)
// SLABS: remark: {{.*}}; pipelined schedule: L1 chunk n=384, L0 sub-step n=64, 4 C piece(s) in L0C; estimated {{[0-9]+}} cycles{{$}}
// BAD: error: c-piece-rows=3 must divide c-pieces=4 and the C tile's 16 row blocks

// CHECK-LABEL: func.func @tall
// CHECK-COUNT-4: memref.alloc() : memref<8x8x16x16xf32, "l0c">
// CHECK:       scf.for
// CHECK:         %[[SA0:.*]] = memref.alloc() : memref<8x8x16x16xf16, "l0a">
// CHECK:         %[[SA1:.*]] = memref.alloc() : memref<8x8x16x16xf16, "l0a">
// CHECK:         memref.alloc() : memref<8x8x16x16xf16, "l0b">
// CHECK:         memref.alloc() : memref<8x8x16x16xf16, "l0b">
// CHECK:         "cce.mad"(%[[SA0]], {{.*}}) {accumulate = false, k = 128 : i64, m = 128 : i64, n = 128 : i64}
// The bottom pieces' A sub-tiles start 8 row blocks into the chunk's first
// column (block 8: element offset 2048), into the slot's first block.
// CHECK:         "cce.load_l1_to_l0a"({{.*}} : (memref<376x16x16xf16, strided<[256, 16, 1], offset: 2048>, "l1">, memref<64x16x16xf16, strided<[256, 16, 1]>, "l0a">)
// The drains: piece 1 at column + 8, piece 2 at row + 8, piece 3 at both.
// CHECK:         scf.if
// CHECK:           memref.subview %arg2[%[[Y:.*]], %[[X:.*]], 0, 0] [4, 8, 16, 16]
// CHECK:         scf.if
// CHECK:           %[[Y1:.*]] = arith.addi %[[Y]], %c8
// CHECK:           memref.subview %arg2[%[[Y1]], %[[X]], 0, 0] [4, 8, 16, 16]
// CHECK:         scf.if
// CHECK:           %[[X2:.*]] = arith.addi %[[X]], %c8
// CHECK:           memref.subview %arg2[%[[Y]], %[[X2]], 0, 0] [4, 8, 16, 16]
// CHECK:         scf.if
// CHECK:           %[[Y3:.*]] = arith.addi %[[Y]], %c8
// CHECK:           %[[X3:.*]] = arith.addi %[[X]], %c8
// CHECK:           memref.subview %arg2[%[[Y3]], %[[X3]], 0, 0] [4, 8, 16, 16]
func.func @tall(%a: memref<48x32x16x16xf16, "gm">, %b: memref<48x48x16x16xf16, "gm">, %c: memref<48x32x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<48x32x16x16xf16, "gm">, memref<48x48x16x16xf16, "gm">, memref<48x32x16x16xf32, "gm">) -> ()
  return
}
