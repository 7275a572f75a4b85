// RUN: npu-opt %s --npu-split-cores="cores=32 remarks=true" 2>&1 | FileCheck %s
// A 3x3 conv and the 1x1 conv of its output (a ResNet bottleneck's conv2 and
// conv3) on the same runs of rows, every channel on each core: each core's
// 1x1 conv reads only the rows it wrote, so no chip barrier between them
// (before: 1 x 8 and 1 x 16 grids, with a barrier between).

// CHECK: remark: npu-split-cores: 8 of 32 cores, 0 chip barriers; ascend.conv2d 1x8; ascend.conv2d 1x8
// CHECK-LABEL: func.func @bottleneck
// CHECK-NOT: cce.sync_all
// CHECK: npu.core_part = array<i64: 8, 1>
// CHECK-NOT: cce.sync_all
// CHECK: npu.core_part = array<i64: 8, 1>
func.func @bottleneck(%x: memref<1x4x32x32x16xf16, "gm">, %w1: memref<36x4x16x16xf16, "gm">, %w2: memref<4x8x16x16xf16, "gm">, %y: memref<1x8x32x32x16xf32, "gm">) {
  %d = memref.alloc() : memref<1x4x32x32x16xf16, "gm">
  "ascend.conv2d"(%x, %w1, %d) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 3, 3>} : (memref<1x4x32x32x16xf16, "gm">, memref<36x4x16x16xf16, "gm">, memref<1x4x32x32x16xf16, "gm">) -> ()
  "ascend.conv2d"(%d, %w2, %y) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 1, 1>} : (memref<1x4x32x32x16xf16, "gm">, memref<4x8x16x16xf16, "gm">, memref<1x8x32x32x16xf32, "gm">) -> ()
  return
}
