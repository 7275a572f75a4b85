// RUN: npu-opt %s --npu-lower-pool | FileCheck %s

// A 40000-wide f32 map: one output row of a 16-plane tile does not fit UB,
// so the 39998 output columns go in slices of 369 (109 slices, the last
// moved back to end at Wo), each slice's 371 input columns copied to a GM
// temporary, pooled there into a second one and inserted into the output
// (both temporaries npu.core_private: each core's own on a multi-core kernel).
// CHECK-LABEL: func.func @too_wide
// CHECK: %[[IN:.*]] = memref.alloc() {npu.core_private} : memref<1x16x3x371xf32, "gm">
// CHECK: "cce.copy_gm_to_ub"
// CHECK: "cce.copy_ub_to_gm"
// CHECK: %[[OUT:.*]] = memref.alloc() {npu.core_private} : memref<1x16x1x369xf32, "gm">
// CHECK: "cce.vnchwconv"
// CHECK: "cce.vmax"
// CHECK: memref.alloc() {npu.core_private} : memref<1x16x3x371xf32, "gm">
// CHECK-NOT: ascend.
func.func @too_wide(%x: memref<1x16x3x40000xf32, "gm">, %y: memref<1x16x1x39998xf32, "gm">) {
  "ascend.pool2d"(%x, %y) {kind = "max", kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, count_include_pad = 1 : i64} : (memref<1x16x3x40000xf32, "gm">, memref<1x16x1x39998xf32, "gm">) -> ()
  return
}
