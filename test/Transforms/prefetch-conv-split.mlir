// RUN: npu-opt %s --npu-lower-conv --npu-double-buffer --npu-prefetch=remarks=true 2>&1 | FileCheck %s

// A GM-bound 1x1 256->1024 conv (512 KB of resident weights, ResNet-50's
// conv3 at 14x14) after a cube-bound 3x3 256->256 one, whose tail leaves MTE2
// idle with less than 512 KB of L1 free beside it. The whole buffer does not
// fit there, so its first four pieces (its first four super tiles, 448 KB)
// get a buffer of their own, which loads after the 3x3's last load; the
// last tile stays in the conv's own buffer, copied in the conv as before.
// (Before, no piece loaded early: "the resident weights do not fit in L1".)
// CHECK:       remark: npu-prefetch: conv: 4 of 5 resident weight piece(s) (458752 of 524288 bytes) (cut from its 524288-byte buffer) loaded after 'conv3x3''s last load
// CHECK-LABEL: func.func @chain
// CHECK-SAME:  %[[W2:[a-z0-9_]+]]: memref<16x64x16x16xf16, "gm"> {npu.constant
// CHECK:       %[[HEAD:.*]] = memref.alloc() {npu.resident_weights} : memref<229376xf16, "l1">
// CHECK:       %[[H0:.*]] = memref.subview %[[HEAD]][0] [57344] [1]
// CHECK:       "cce.copy_gm_to_l1"(%{{.*}}, %[[H0]])
// CHECK:       "cce.copy_gm_to_l1"
// CHECK:       "cce.copy_gm_to_l1"
// CHECK:       "cce.copy_gm_to_l1"(%{{.*}}, %{{.*}}) {{{.*}}} : (memref<16x14x16x16xf16, strided<[16384, 256, 16, 1], offset: 10752>, "gm">
// The 3x3's own steps go on, then the 1x1 with the rest of its buffer.
// CHECK:       "cce.mad"
// CHECK:       %[[REST:.*]] = memref.alloc() {npu.resident_weights} : memref<32768xf16, "l1">
// CHECK:       "cce.load_l1_to_l0b"(%{{.*}}, %{{.*}}) {{{.*}}} : (memref<1792xf16, strided<[1]>, "l1">
// CHECK:       %[[R0:.*]] = memref.subview %[[REST]][0] [32768] [1]
// CHECK-NEXT:  memref.subview %[[W2]][0, 56, 0, 0] [16, 8, 16, 16]
// CHECK-NEXT:  "cce.copy_gm_to_l1"(%{{.*}}, %[[R0]])
// CHECK-NOT:   memref<16x14x16x16xf16, {{.*}}"gm">, memref<57344xf16
// CHECK:       return
func.func @chain(%x: memref<1x16x14x14x16xf16, "gm">, %w: memref<144x16x16x16xf16, "gm"> {npu.constant = dense<0.5> : tensor<144x16x16x16xf16>},
                 %w2: memref<16x64x16x16xf16, "gm"> {npu.constant = dense<0.25> : tensor<16x64x16x16xf16>}, %y: memref<1x64x14x14x16xf16, "gm">) {
  %c = memref.alloc() : memref<1x16x14x14x16xf16, "gm">
  "ascend.conv2d"(%x, %w, %c) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 3, 3>} : (memref<1x16x14x14x16xf16, "gm">, memref<144x16x16x16xf16, "gm">, memref<1x16x14x14x16xf16, "gm">) -> () loc("conv3x3")
  "ascend.conv2d"(%c, %w2, %y) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 1, 1>} : (memref<1x16x14x14x16xf16, "gm">, memref<16x64x16x16xf16, "gm">, memref<1x64x14x14x16xf16, "gm">) -> () loc("conv1x1")
  return
}
