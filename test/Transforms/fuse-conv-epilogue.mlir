// RUN: npu-opt %s --split-input-file --npu-fuse 2>/dev/null | FileCheck %s
// RUN: npu-opt %s --split-input-file --npu-fuse --npu-plan-gm --npu-lower-conv 2>/dev/null | FileCheck %s --check-prefix=KERNEL
// RUN: npu-opt %s --split-input-file --npu-fuse=epilogues=false 2>/dev/null | FileCheck %s --check-prefix=OFF

// A residual Add and the ReLU after a conv (ResNet's block end) join its
// drain: the conv's result and the sum never reach GM (their allocs move
// into the group), and the group stands where the ReLU was, after the
// residual's own conv (made after this one, as ResNet-50's downsample is).
// CHECK-LABEL: func.func @residual_relu
// CHECK:       "ascend.conv2d"(%arg4,
// CHECK-NEXT:  scf.execute_region {
// CHECK-COUNT-2: memref.alloc() : memref<1x2x8x8x16xf16, "gm">
// CHECK-NEXT:    "ascend.conv2d"(%arg0,
// CHECK-NEXT:    "ascend.add"
// CHECK-NEXT:    "ascend.maxs"
// CHECK-NEXT:    scf.yield
// CHECK-NEXT:  } {npu.conv_epilogue = {members = 2 : i64}}
// CHECK-NEXT:  return
// Per drained tile the residual's tile is loaded, added and clamped in UB;
// only the ReLU's result is stored.
// KERNEL-LABEL: func.func @residual_relu
// KERNEL-NOT:   memref.alloc() : memref<{{.*}}"gm">
// KERNEL:       cce.copy_l0c_to_ub
// KERNEL:       cce.copy_gm_to_ub
// KERNEL:       cce.vadd
// KERNEL:       cce.vmaxs
// KERNEL:       cce.copy_ub_to_gm
// KERNEL-NOT:   ascend.
// KERNEL:       return
// OFF-LABEL: func.func @residual_relu
// OFF-NOT:   npu.conv_epilogue
func.func @residual_relu(%x: memref<1x2x8x8x16xf16, "gm">, %w: memref<18x2x16x16xf16, "gm">,
                         %b: memref<32xf16, "gm">, %y: memref<1x2x8x8x16xf16, "gm">,
                         %x2: memref<1x2x8x8x16xf16, "gm">, %w2: memref<2x2x16x16xf16, "gm">) {
  %c = memref.alloc() : memref<1x2x8x8x16xf16, "gm">
  "ascend.conv2d"(%x, %w, %b, %c) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 3, 3>} : (memref<1x2x8x8x16xf16, "gm">, memref<18x2x16x16xf16, "gm">, memref<32xf16, "gm">, memref<1x2x8x8x16xf16, "gm">) -> ()
  %r = memref.alloc() : memref<1x2x8x8x16xf16, "gm">
  "ascend.conv2d"(%x2, %w2, %r) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 1, 1>} : (memref<1x2x8x8x16xf16, "gm">, memref<2x2x16x16xf16, "gm">, memref<1x2x8x8x16xf16, "gm">) -> ()
  %s = memref.alloc() : memref<1x2x8x8x16xf16, "gm">
  "ascend.add"(%c, %r, %s) : (memref<1x2x8x8x16xf16, "gm">, memref<1x2x8x8x16xf16, "gm">, memref<1x2x8x8x16xf16, "gm">) -> ()
  "ascend.maxs"(%s, %y) {scalar = 0.0 : f64} : (memref<1x2x8x8x16xf16, "gm">, memref<1x2x8x8x16xf16, "gm">) -> ()
  return
}

// -----

// A conv result read twice (the ReLU and a residual Add later) stays a
// plain conv: its tensor must reach GM anyway.
// CHECK-LABEL: func.func @read_twice
// CHECK-NOT:   npu.conv_epilogue
// CHECK:       return
func.func @read_twice(%x: memref<1x1x8x8x16xf16, "gm">, %w: memref<9x1x16x16xf16, "gm">,
                      %y: memref<1x1x8x8x16xf16, "gm">, %z: memref<1x1x8x8x16xf16, "gm">) {
  %c = memref.alloc() : memref<1x1x8x8x16xf16, "gm">
  "ascend.conv2d"(%x, %w, %c) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 3, 3>} : (memref<1x1x8x8x16xf16, "gm">, memref<9x1x16x16xf16, "gm">, memref<1x1x8x8x16xf16, "gm">) -> ()
  "ascend.maxs"(%c, %y) {scalar = 0.0 : f64} : (memref<1x1x8x8x16xf16, "gm">, memref<1x1x8x8x16xf16, "gm">) -> ()
  "ascend.add"(%c, %y, %z) : (memref<1x1x8x8x16xf16, "gm">, memref<1x1x8x8x16xf16, "gm">, memref<1x1x8x8x16xf16, "gm">) -> ()
  return
}

// -----

// An operand of another shape (a per-channel scale) does not join: the
// drained tile only meets whole tensors of the result's shape.
// CHECK-LABEL: func.func @broadcast_operand
// CHECK-NOT:   npu.conv_epilogue
// CHECK:       return
func.func @broadcast_operand(%x: memref<1x1x8x8x16xf16, "gm">, %w: memref<9x1x16x16xf16, "gm">,
                             %s: memref<1x1x1x1x16xf16, "gm">, %y: memref<1x1x8x8x16xf16, "gm">) {
  %c = memref.alloc() : memref<1x1x8x8x16xf16, "gm">
  "ascend.conv2d"(%x, %w, %c) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 3, 3>} : (memref<1x1x8x8x16xf16, "gm">, memref<9x1x16x16xf16, "gm">, memref<1x1x8x8x16xf16, "gm">) -> ()
  "ascend.mul"(%c, %s, %y) : (memref<1x1x8x8x16xf16, "gm">, memref<1x1x1x1x16xf16, "gm">, memref<1x1x8x8x16xf16, "gm">) -> ()
  return
}
