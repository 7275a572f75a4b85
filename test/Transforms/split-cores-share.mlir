// RUN: npu-opt %s --npu-split-cores="cores=32 remarks=true" 2>&1 | FileCheck %s
// RUN: npu-opt %s --npu-split-cores="cores=32 remarks=true share=false" 2>&1 | FileCheck %s --check-prefix=APART
// RUN: npu-opt %s --npu-split-cores="cores=32 remarks=true grids=128x768x768:4x2" 2>&1 | FileCheck %s --check-prefix=FORCED
// RUN: not npu-opt %s --npu-split-cores="cores=32 grids=128x768x768:16x1" 2>&1 | FileCheck %s --check-prefix=NO-ROOM
// Three independent projections of one A (BERT's Q, K and V): side by side
// on their own shares of the cores (each slice indexed by the block index
// less its first core), not one after another over all 32 (each a 2 x 16
// grid re-reading half of A). Eight cores each (a 1 x 8 grid) is the least
// slowest share; the 8 cores that leaves idle go to Q and K (6 column parts
// x 2 row parts on 12 cores each), which then end sooner (`share.spread`).

// CHECK: remark: npu-split-cores: 32 of 32 cores, 0 chip barriers; ascend.matmul 6x2 on cores 0-11; ascend.matmul 6x2 on cores 12-23; ascend.matmul 8x1 on cores 24-31
// CHECK-LABEL: func.func @qkv
// CHECK-SAME: %[[BLK:[a-z0-9]+]]: index {npu.block_idx}) attributes {npu.block_dim = 32 : i64}
// CHECK: arith.cmpi ult, %[[BLK]], %c12
// CHECK: "ascend.matmul"
// CHECK: %[[LAST:.*]] = arith.cmpi ult, %[[BLK]], %c24
// CHECK: %[[FIRST:.*]] = arith.cmpi uge, %[[BLK]], %c12
// CHECK: %[[MINE:.*]] = arith.andi %[[FIRST]], %[[LAST]] : i1
// CHECK: scf.if %[[MINE]] {
// CHECK: arith.subi %[[BLK]], %c12
// CHECK: "ascend.matmul"
// CHECK: arith.cmpi uge, %[[BLK]], %c24
// CHECK: arith.subi %[[BLK]], %c24

// A forced grid is each projection's only choice: 4 x 2 on 8 cores side
// by side; 16 x 1 on 16 cores each does not fit three times in 32, so no
// split takes it, and the error lists the core counts tried as runs.
// FORCED: remark: npu-split-cores: 24 of 32 cores, 0 chip barriers; ascend.matmul 4x2 on cores 0-7; ascend.matmul 4x2 on cores 8-15; ascend.matmul 4x2 on cores 16-23
// NO-ROOM: error: npu-split-cores: grids: '128x768x768:16x1' applied to no split (the matmul splits tried, M x N x K on cores: 128x768x768 on 2-16, 32)

// APART: remark: npu-split-cores: 32 of 32 cores, 0 chip barriers; ascend.matmul 16x2; ascend.matmul 16x2; ascend.matmul 16x2
// APART-NOT: arith.subi
func.func @qkv(%a: memref<48x8x16x16xf16, "gm">, %wq: memref<48x48x16x16xf16, "gm">, %wk: memref<48x48x16x16xf16, "gm">, %wv: memref<48x48x16x16xf16, "gm">, %q: memref<48x8x16x16xf32, "gm">, %k: memref<48x8x16x16xf32, "gm">, %v: memref<48x8x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %wq, %q) : (memref<48x8x16x16xf16, "gm">, memref<48x48x16x16xf16, "gm">, memref<48x8x16x16xf32, "gm">) -> ()
  "ascend.matmul"(%a, %wk, %k) : (memref<48x8x16x16xf16, "gm">, memref<48x48x16x16xf16, "gm">, memref<48x8x16x16xf32, "gm">) -> ()
  "ascend.matmul"(%a, %wv, %v) : (memref<48x8x16x16xf16, "gm">, memref<48x48x16x16xf16, "gm">, memref<48x8x16x16xf32, "gm">) -> ()
  return
}
