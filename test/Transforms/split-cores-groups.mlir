// RUN: npu-opt %s --npu-fuse --npu-split-cores="cores=8 remarks=true" 2>&1 | FileCheck %s
// A fused row group is cut into chunks of whole rows: its outside tensors
// become the core's row subviews, its own tensors allocs of 32 rows, rows = 32.

// CHECK: remark: npu-split-cores: 8 of 8 cores, 0 chip barriers; fused rows 8
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: %[[BLK:[a-z0-9]+]]: index {npu.block_idx}) attributes {npu.block_dim = 8 : i64}
// CHECK: %[[OFF:.*]] = arith.muli %[[BLK]], %{{.*}} : index
// CHECK: %[[X:.*]] = memref.subview %arg0[%[[OFF]], 0] [32, 512] [1, 1]
// CHECK: scf.execute_region {
// CHECK: memref.alloc() : memref<32x1xf32, "gm">
// CHECK: "ascend.reduce_max"(%[[X]], %{{.*}})
// CHECK: } {npu.fused = {{{.*}}rows = 32 : i64
func.func @softmax(%x: memref<256x512xf32, "gm">, %y: memref<256x512xf32, "gm">) {
  %m = memref.alloc() : memref<256x1xf32, "gm">
  %d = memref.alloc() : memref<256x512xf32, "gm">
  %e = memref.alloc() : memref<256x512xf32, "gm">
  %s = memref.alloc() : memref<256x1xf32, "gm">
  "ascend.reduce_max"(%x, %m) {axis = -1 : i64} : (memref<256x512xf32, "gm">, memref<256x1xf32, "gm">) -> ()
  "ascend.sub"(%x, %m, %d) : (memref<256x512xf32, "gm">, memref<256x1xf32, "gm">, memref<256x512xf32, "gm">) -> ()
  "ascend.exp"(%d, %e) : (memref<256x512xf32, "gm">, memref<256x512xf32, "gm">) -> ()
  "ascend.reduce_sum"(%e, %s) {axis = -1 : i64} : (memref<256x512xf32, "gm">, memref<256x1xf32, "gm">) -> ()
  "ascend.div"(%e, %s, %y) : (memref<256x512xf32, "gm">, memref<256x1xf32, "gm">, memref<256x512xf32, "gm">) -> ()
  return
}
