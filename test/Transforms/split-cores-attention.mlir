// RUN: npu-opt %s --npu-fuse-attention --npu-split-cores="cores=8 remarks=true" 2>&1 | FileCheck %s
// RUN: npu-opt %s -p 'builtin.module(npu-lower{cores=8 emit=cce})' | FileCheck %s --check-prefix=LOWERED
// RUN: npu-opt %s --npu-fuse-attention --npu-split-cores="cores=8 remarks=true grids=attention:2x2" 2>&1 | FileCheck %s --check-prefix=FORCED
// FORCED: remark: npu-split-cores: 4 of 8 cores, 0 chip barriers; attention 2x2
// Two heads over eight cores: a grid of 2 head parts x 4 runs of query rows.
// Q, K and V are cut by heads (subviews from the block index / 4); the rows
// stay whole in the IR and the group says which run a core computes
// (npu.core_part = [runs, inner]); npu-lower-attention walks that run's
// query tiles from a row offset of (block index % 4) * 2 blocks.

// CHECK: remark: npu-split-cores: 8 of 8 cores, 0 chip barriers; attention 2x4
// CHECK-LABEL: func.func @attention
// CHECK-SAME: %[[BLK:[a-z0-9]+]]: index {npu.block_idx}) attributes {npu.block_dim = 8 : i64}
// CHECK: %[[HEAD:.*]] = arith.divui %[[BLK]], %{{.*}} : index
// CHECK: memref.subview %arg0[0, 0, %{{.*}}, 0] [1, 128, 1, 64]
// CHECK: memref.subview %arg3[%{{.*}}, 0, 0, 0] [4, 8, 16, 16]
// CHECK: scf.execute_region {
// CHECK: } {npu.attention = {{{.*}}heads = 1 : i64{{.*}}}, npu.core_part = array<i64: 4, 1>}

// LOWERED-LABEL: func.func @attention
// LOWERED-SAME: npu.block_dim = 8
// LOWERED: arith.remui %{{.*}}, %c4{{.*}} : index
// LOWERED-NOT: npu.attention
func.func @attention(%q: memref<1x128x2x64xf32, "gm">, %kt: memref<1x128x2x64xf32, "gm">, %v: memref<1x128x2x64xf32, "gm">, %y: memref<8x8x16x16xf16, "gm">) {
  %t1 = memref.alloc() : memref<1x2x128x64xf32, "gm">
  "ascend.transpose"(%q, %t1) {permutation = array<i64: 0, 2, 1, 3>} : (memref<1x128x2x64xf32, "gm">, memref<1x2x128x64xf32, "gm">) -> ()
  %v2 = memref.collapse_shape %t1 [[0, 1], [2], [3]] : memref<1x2x128x64xf32, "gm"> into memref<2x128x64xf32, "gm">
  %t2 = memref.alloc() : memref<1x2x64x128xf32, "gm">
  "ascend.transpose"(%kt, %t2) {permutation = array<i64: 0, 2, 3, 1>} : (memref<1x128x2x64xf32, "gm">, memref<1x2x64x128xf32, "gm">) -> ()
  %v5 = memref.collapse_shape %t2 [[0, 1], [2], [3]] : memref<1x2x64x128xf32, "gm"> into memref<2x64x128xf32, "gm">
  %t3 = memref.alloc() : memref<1x2x128x64xf32, "gm">
  "ascend.transpose"(%v, %t3) {permutation = array<i64: 0, 2, 1, 3>} : (memref<1x128x2x64xf32, "gm">, memref<1x2x128x64xf32, "gm">) -> ()
  %v8 = memref.collapse_shape %t3 [[0, 1], [2], [3]] : memref<1x2x128x64xf32, "gm"> into memref<2x128x64xf32, "gm">
  %t4 = memref.alloc() : memref<2x128x64xf16, "gm">
  "ascend.cast"(%v2, %t4) {round_mode = "rint"} : (memref<2x128x64xf32, "gm">, memref<2x128x64xf16, "gm">) -> ()
  %t5 = memref.alloc() : memref<2x4x8x16x16xf16, "gm">
  "ascend.fractalize"(%t4, %t5) : (memref<2x128x64xf16, "gm">, memref<2x4x8x16x16xf16, "gm">) -> ()
  %t6 = memref.alloc() : memref<2x64x128xf16, "gm">
  "ascend.cast"(%v5, %t6) {round_mode = "rint"} : (memref<2x64x128xf32, "gm">, memref<2x64x128xf16, "gm">) -> ()
  %t7 = memref.alloc() : memref<2x8x4x16x16xf16, "gm">
  "ascend.fractalize"(%t6, %t7) : (memref<2x64x128xf16, "gm">, memref<2x8x4x16x16xf16, "gm">) -> ()
  %t8 = memref.alloc() : memref<2x8x8x16x16xf32, "gm">
  "ascend.batch_matmul"(%t5, %t7, %t8) : (memref<2x4x8x16x16xf16, "gm">, memref<2x8x4x16x16xf16, "gm">, memref<2x8x8x16x16xf32, "gm">) -> ()
  %t9 = memref.alloc() : memref<2x128x128xf32, "gm">
  "ascend.defractalize"(%t8, %t9) : (memref<2x8x8x16x16xf32, "gm">, memref<2x128x128xf32, "gm">) -> ()
  %t10 = memref.alloc() : memref<2x128x128xf32, "gm">
  "ascend.muls"(%t9, %t10) {scalar = 1.25000000000000000e-01 : f64} : (memref<2x128x128xf32, "gm">, memref<2x128x128xf32, "gm">) -> ()
  %t11 = memref.alloc() : memref<2x128x1xf32, "gm">
  "ascend.reduce_max"(%t10, %t11) : (memref<2x128x128xf32, "gm">, memref<2x128x1xf32, "gm">) -> ()
  %t12 = memref.alloc() : memref<2x128x128xf32, "gm">
  "ascend.sub"(%t10, %t11, %t12) : (memref<2x128x128xf32, "gm">, memref<2x128x1xf32, "gm">, memref<2x128x128xf32, "gm">) -> ()
  %t13 = memref.alloc() : memref<2x128x128xf32, "gm">
  "ascend.exp"(%t12, %t13) : (memref<2x128x128xf32, "gm">, memref<2x128x128xf32, "gm">) -> ()
  %t14 = memref.alloc() : memref<2x128x1xf32, "gm">
  "ascend.reduce_sum"(%t13, %t14) : (memref<2x128x128xf32, "gm">, memref<2x128x1xf32, "gm">) -> ()
  %t15 = memref.alloc() : memref<2x128x128xf32, "gm">
  %t16 = memref.alloc() : memref<2x128x1xf32, "gm">
  "ascend.reciprocal"(%t14, %t16) : (memref<2x128x1xf32, "gm">, memref<2x128x1xf32, "gm">) -> ()
  "ascend.mul"(%t13, %t16, %t15) : (memref<2x128x128xf32, "gm">, memref<2x128x1xf32, "gm">, memref<2x128x128xf32, "gm">) -> ()
  %t17 = memref.alloc() : memref<2x128x128xf16, "gm">
  "ascend.cast"(%t15, %t17) {round_mode = "rint"} : (memref<2x128x128xf32, "gm">, memref<2x128x128xf16, "gm">) -> ()
  %t18 = memref.alloc() : memref<2x8x8x16x16xf16, "gm">
  "ascend.fractalize"(%t17, %t18) : (memref<2x128x128xf16, "gm">, memref<2x8x8x16x16xf16, "gm">) -> ()
  %t19 = memref.alloc() : memref<2x128x64xf16, "gm">
  "ascend.cast"(%v8, %t19) {round_mode = "rint"} : (memref<2x128x64xf32, "gm">, memref<2x128x64xf16, "gm">) -> ()
  %t20 = memref.alloc() : memref<2x4x8x16x16xf16, "gm">
  "ascend.fractalize"(%t19, %t20) : (memref<2x128x64xf16, "gm">, memref<2x4x8x16x16xf16, "gm">) -> ()
  %t21 = memref.alloc() : memref<2x4x8x16x16xf32, "gm">
  "ascend.batch_matmul"(%t18, %t20, %t21) : (memref<2x8x8x16x16xf16, "gm">, memref<2x4x8x16x16xf16, "gm">, memref<2x4x8x16x16xf32, "gm">) -> ()
  %t22 = memref.alloc() : memref<2x128x64xf32, "gm">
  "ascend.defractalize"(%t21, %t22) : (memref<2x4x8x16x16xf32, "gm">, memref<2x128x64xf32, "gm">) -> ()
  %v47 = memref.expand_shape %t22 [[0, 1], [2], [3]] output_shape [1, 2, 128, 64] : memref<2x128x64xf32, "gm"> into memref<1x2x128x64xf32, "gm">
  %t23 = memref.alloc() : memref<1x128x2x64xf32, "gm">
  "ascend.transpose"(%v47, %t23) {permutation = array<i64: 0, 2, 1, 3>} : (memref<1x2x128x64xf32, "gm">, memref<1x128x2x64xf32, "gm">) -> ()
  %v50 = memref.collapse_shape %t23 [[0, 1], [2, 3]] : memref<1x128x2x64xf32, "gm"> into memref<128x128xf32, "gm">
  %t24 = memref.alloc() : memref<128x128xf16, "gm">
  "ascend.cast"(%v50, %t24) {round_mode = "rint"} : (memref<128x128xf32, "gm">, memref<128x128xf16, "gm">) -> ()
  "ascend.fractalize"(%t24, %y) : (memref<128x128xf16, "gm">, memref<8x8x16x16xf16, "gm">) -> ()
  return
}
