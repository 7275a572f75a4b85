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

// A per-channel operand [1, C1, 1, 1, 16] (a dequantising scale, an
// unfolded BatchNorm) joins a binary member, on either side: the conv, the
// mul and the sub (the per-channel value on its left) are one group.
// CHECK-LABEL: func.func @per_channel_operands
// CHECK:       scf.execute_region {
// CHECK:         "ascend.conv2d"
// CHECK-NEXT:    "ascend.mul"
// CHECK-NEXT:    "ascend.sub"
// CHECK-NEXT:    scf.yield
// CHECK-NEXT:  } {npu.conv_epilogue = {members = 2 : i64}}
// Each is staged once, before the conv's tiles, as a pattern of 8 rows of
// 16 f16 per Cout block (one GM copy of C1 bursts for row 0; once the first
// loads are out, three UB copies each double the rows filled), and read with
// repeat stride 0: as the vmul's src1, as the vsub's src0. Nothing is loaded per tile.
// KERNEL-LABEL: func.func @per_channel_operands
// KERNEL-COUNT-2: cce.copy_gm_to_ub{{.*}}n_burst = 2
// KERNEL:       cce.copy_gm_to_l1
// KERNEL-COUNT-6: cce.copy_ub_to_ub{{.*}}n_burst = 2
// KERNEL:       cce.mad
// KERNEL:       cce.copy_l0c_to_ub
// KERNEL-NOT:   cce.copy_gm_to_ub
// KERNEL:       cce.vmul{{.*}}src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 0
// KERNEL-NOT:   cce.copy_gm_to_ub
// KERNEL:       cce.vsub{{.*}}src0_rep_stride = 0 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8
// KERNEL:       cce.copy_ub_to_gm
// KERNEL-NOT:   ascend.
// KERNEL:       return
func.func @per_channel_operands(%x: memref<1x2x8x8x16xf16, "gm">, %w: memref<18x2x16x16xf16, "gm">,
                                %s: memref<1x2x1x1x16xf16, "gm">, %t: memref<1x2x1x1x16xf16, "gm">,
                                %y: memref<1x2x8x8x16xf16, "gm">) {
  %c = memref.alloc() : memref<1x2x8x8x16xf16, "gm">
  "ascend.conv2d"(%x, %w, %c) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 3, 3>} : (memref<1x2x8x8x16xf16, "gm">, memref<18x2x16x16xf16, "gm">, memref<1x2x8x8x16xf16, "gm">) -> ()
  %m = memref.alloc() : memref<1x2x8x8x16xf16, "gm">
  "ascend.mul"(%c, %s, %m) : (memref<1x2x8x8x16xf16, "gm">, memref<1x2x1x1x16xf16, "gm">, memref<1x2x8x8x16xf16, "gm">) -> ()
  "ascend.sub"(%t, %m, %y) : (memref<1x2x1x1x16xf16, "gm">, memref<1x2x8x8x16xf16, "gm">, memref<1x2x8x8x16xf16, "gm">) -> ()
  return
}

// -----

// An operand broadcast another way (one value per pixel, [1, 1, 1, 8, 16])
// does not join: the drained tile meets whole tensors of the result's
// shape and per-channel vectors only.
// CHECK-LABEL: func.func @broadcast_operand
// CHECK-NOT:   npu.conv_epilogue
// CHECK:       return
func.func @broadcast_operand(%x: memref<1x1x8x8x16xf16, "gm">, %w: memref<9x1x16x16xf16, "gm">,
                             %s: memref<1x1x1x8x16xf16, "gm">, %y: memref<1x1x8x8x16xf16, "gm">) {
  %c = memref.alloc() : memref<1x1x8x8x16xf16, "gm">
  "ascend.conv2d"(%x, %w, %c) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 3, 3>} : (memref<1x1x8x8x16xf16, "gm">, memref<9x1x16x16xf16, "gm">, memref<1x1x8x8x16xf16, "gm">) -> ()
  "ascend.mul"(%c, %s, %y) : (memref<1x1x8x8x16xf16, "gm">, memref<1x1x1x8x16xf16, "gm">, memref<1x1x8x8x16xf16, "gm">) -> ()
  return
}

// -----

// A per-channel operand of a unary-like op that is not binary (a select's
// branch) does not join either.
// CHECK-LABEL: func.func @per_channel_select
// CHECK-NOT:   npu.conv_epilogue
// CHECK:       return
func.func @per_channel_select(%x: memref<1x1x8x8x16xf16, "gm">, %w: memref<9x1x16x16xf16, "gm">,
                              %k: memref<1x1x8x8x16xi8, "gm">, %s: memref<1x1x1x1x16xf16, "gm">,
                              %y: memref<1x1x8x8x16xf16, "gm">) {
  %c = memref.alloc() : memref<1x1x8x8x16xf16, "gm">
  "ascend.conv2d"(%x, %w, %c) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 3, 3>} : (memref<1x1x8x8x16xf16, "gm">, memref<9x1x16x16xf16, "gm">, memref<1x1x8x8x16xf16, "gm">) -> ()
  "ascend.select"(%k, %c, %s, %y) : (memref<1x1x8x8x16xi8, "gm">, memref<1x1x8x8x16xf16, "gm">, memref<1x1x1x1x16xf16, "gm">, memref<1x1x8x8x16xf16, "gm">) -> ()
  return
}
