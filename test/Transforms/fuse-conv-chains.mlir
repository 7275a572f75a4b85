// RUN: npu-opt %s --split-input-file --npu-fuse="remarks=false conv-chains=true" | FileCheck %s
// RUN: npu-opt %s --split-input-file --npu-fuse=conv-chains=true 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: npu-opt %s --split-input-file --npu-fuse=conv-chains=false 2>&1 | FileCheck %s --check-prefix=OFF
// RUN: npu-opt %s --split-input-file --npu-fuse="remarks=false conv-chains=true" --npu-plan-gm --npu-lower-conv | FileCheck %s --check-prefix=KERNEL

// ResNet's conv3 -> next block's conv1 (1x1 64 -> 256 -> 64 at 28x28): the
// producer's result, read only as the consumer's input map, stays on chip.
// npu-fuse marks both convs (the same id, the bands both take, the
// producer's UB share in per mille) and the map's GM alloc (gm = 0: never
// stored to GM; npu-plan-gm leaves it alone).
// CHECK-LABEL: func.func @pair
// CHECK:       memref.alloc() {npu.conv_chain = {gm = 0 : i64}} : memref<1x16x28x28x16xf16, "gm">
// CHECK:       "ascend.conv2d"(%arg0, {{.*}}npu.conv_chain = {gm = 0 : i64, id = 1 : i64, role = "producer", rows = 4 : i64, ub = 500 : i64}
// CHECK:       "ascend.conv2d"(%alloc, {{.*}}npu.conv_chain = {gm = 0 : i64, id = 1 : i64, role = "consumer", rows = 4 : i64, ub = 500 : i64}
// REMARK: fuse-conv-chains.mlir:[[@LINE+17]]:3: remark: conv chain: its 401408-byte result stays on chip, bands of 4 rows copied UB -> L1 as the input map of the next 1x1 conv (never stored to GM; the producer takes 50% of UB, the consumer the rest)
// OFF: fuse-conv-chains.mlir:[[@LINE+16]]:3: remark: conv chain not formed: conv-chains=false
// OFF-NOT: npu.conv_chain =
// Lowered at the consumer, band by band: producer band i copies its result
// UB -> L1 into the consumer's map of band i (three maps in turn: the
// producer runs two bands ahead), the consumer's img2col reads it there; the
// map is never in GM, only the consumer's result is stored.
// KERNEL-LABEL: func.func @pair
// KERNEL-NOT:   memref<1x16x28x28x16xf16, "gm">
// KERNEL-COUNT-3: "cce.copy_ub_to_l1"
// KERNEL-NOT:   memref<1x16x28x28x16xf16, "gm">
// KERNEL:       "cce.img2col_l1_to_l0a"
// KERNEL:       "cce.copy_ub_to_gm"
// KERNEL-NOT:   "ascend.
// KERNEL:       return
func.func @pair(%x: memref<1x4x28x28x16xf16, "gm">, %w1: memref<4x16x16x16xf16, "gm">, %b1: memref<256xf16, "gm">, %w2: memref<16x4x16x16xf16, "gm">, %y: memref<1x4x28x28x16xf16, "gm">) {
  %m = memref.alloc() : memref<1x16x28x28x16xf16, "gm">
  "ascend.conv2d"(%x, %w1, %b1, %m) {dilations = array<i64: 1, 1>, groups = 1 : i64, kernel = array<i64: 1, 1>, layout = "nc1hwc0", pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (memref<1x4x28x28x16xf16, "gm">, memref<4x16x16x16xf16, "gm">, memref<256xf16, "gm">, memref<1x16x28x28x16xf16, "gm">) -> ()
  "ascend.conv2d"(%m, %w2, %y) {dilations = array<i64: 1, 1>, groups = 1 : i64, kernel = array<i64: 1, 1>, layout = "nc1hwc0", pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (memref<1x16x28x28x16xf16, "gm">, memref<16x4x16x16xf16, "gm">, memref<1x4x28x28x16xf16, "gm">) -> ()
  return
}

// -----

// Another op reads the map: it must still reach GM, and the cost model
// finds the pair slower chained (the copies UB -> L1 on top of the stores).
// REMARK: fuse-conv-chains.mlir:[[@LINE+5]]:3: remark: conv chain not formed: the cost model estimates the pair {{[0-9]+}} cycles slower chained (at best: the producer on {{[0-9]+}}% of UB, bands of {{[0-9]+}} rows)
// CHECK-LABEL: func.func @pair_read
// CHECK-NOT:   npu.conv_chain
func.func @pair_read(%x: memref<1x4x28x28x16xf16, "gm">, %w1: memref<4x16x16x16xf16, "gm">, %b1: memref<256xf16, "gm">, %w2: memref<16x4x16x16xf16, "gm">, %y: memref<1x4x28x28x16xf16, "gm">, %z: memref<1x16x28x28x16xf16, "gm">) {
  %m = memref.alloc() : memref<1x16x28x28x16xf16, "gm">
  "ascend.conv2d"(%x, %w1, %b1, %m) {dilations = array<i64: 1, 1>, groups = 1 : i64, kernel = array<i64: 1, 1>, layout = "nc1hwc0", pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (memref<1x4x28x28x16xf16, "gm">, memref<4x16x16x16xf16, "gm">, memref<256xf16, "gm">, memref<1x16x28x28x16xf16, "gm">) -> ()
  "ascend.conv2d"(%m, %w2, %y) {dilations = array<i64: 1, 1>, groups = 1 : i64, kernel = array<i64: 1, 1>, layout = "nc1hwc0", pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (memref<1x16x28x28x16xf16, "gm">, memref<16x4x16x16xf16, "gm">, memref<1x4x28x28x16xf16, "gm">) -> ()
  "ascend.maxs"(%m, %z) {scalar = 0.0 : f64} : (memref<1x16x28x28x16xf16, "gm">, memref<1x16x28x28x16xf16, "gm">) -> ()
  return
}
