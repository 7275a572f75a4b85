// RUN: npu-opt %s --npu-lower-conv --npu-double-buffer --npu-prefetch=remarks=true 2>&1 | FileCheck %s
// RUN: npu-opt %s --npu-lower-conv --npu-double-buffer --npu-prefetch=convs=false 2>&1 | FileCheck %s --check-prefix=OFF

// conv2 reads conv1's result: its map copy waits for conv1's last store, and
// its resident weights (host constants, loaded in two pieces: 16 and 2 of
// their 18 K rows) queued on MTE2 behind that map. They now load in conv1's idle MTE2 tail, after conv1's
// last load (its second weight piece), into their buffer moved up there;
// conv1, the first op, has no earlier op whose idle time they could use.
// CHECK:       remark: npu-prefetch: conv weights not prefetched: no earlier op whose idle MTE2 time their loads could use
// CHECK:       remark: npu-prefetch: conv: 2 of 2 resident weight piece(s) (18432 of 18432 bytes) loaded after 'conv1''s last load, ahead of this conv's first wait
// CHECK-LABEL: func.func @two
// CHECK-SAME:  %[[W1:[a-z0-9_]+]]: memref<18x2x16x16xf16, "gm"> {npu.constant
// CHECK-SAME:  %[[W2:[a-z0-9_]+]]: memref<18x2x16x16xf16, "gm"> {npu.constant
// CHECK:       %[[R1:.*]] = memref.alloc() {npu.resident_weights} : memref<9216xf16, "l1">
// CHECK:       "cce.copy_gm_to_l1"(%{{.*}}, %[[P1:.*]]) {{{.*}}} : (memref<1024xf16, strided<[1], offset: 8192>, "gm">
// conv2's pieces go after the first step reading that piece (its L1 -> L0B
// load), not into the run of loads it ends: npu-insert-sync sinks a run's
// flag to its end, so that step would wait for conv2's pieces too.
// CHECK-NOT:   npu.resident_weights
// CHECK:       "cce.load_l1_to_l0b"(%[[P1V:[a-z0-9_]+]],
// CHECK-NOT:   "cce.copy_gm_to_l1"
// CHECK:       %[[R2:.*]] = memref.alloc() {npu.resident_weights} : memref<9216xf16, "l1">
// CHECK:       memref.collapse_shape %[[W2]]
// CHECK:       "cce.copy_gm_to_l1"
// CHECK:       "cce.copy_gm_to_l1"
// CHECK:       "cce.mad"
// conv2: its map copies, then mads, with no weight copy left.
// CHECK:       "cce.copy_ub_to_gm"
// CHECK-NOT:   memref<{{8192|1024}}xf16, {{.*}}"l1">) -> ()
// CHECK:       return
// OFF-NOT:     remark
// OFF:         %[[R2:.*]] = memref.alloc() {npu.resident_weights} : memref<9216xf16, "l1">
// OFF:         "cce.copy_gm_to_l1"(%{{.*}}, %{{.*}}) {{{.*}}} : (memref<1x1x8x8x16xf16
// OFF:         "cce.copy_gm_to_l1"(%{{.*}}, %{{.*}}) {{{.*}}} : (memref<1x1x8x8x16xf16
// OFF-NEXT:    memref.subview %[[R2]]
func.func @two(%x: memref<1x2x8x8x16xf16, "gm">, %w: memref<18x2x16x16xf16, "gm"> {npu.constant = dense<0.5> : tensor<18x2x16x16xf16>},
               %w2: memref<18x2x16x16xf16, "gm"> {npu.constant = dense<0.25> : tensor<18x2x16x16xf16>}, %y: memref<1x2x8x8x16xf16, "gm">) {
  %c = memref.alloc() : memref<1x2x8x8x16xf16, "gm">
  "ascend.conv2d"(%x, %w, %c) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 3, 3>} : (memref<1x2x8x8x16xf16, "gm">, memref<18x2x16x16xf16, "gm">, memref<1x2x8x8x16xf16, "gm">) -> () loc("conv1")
  "ascend.conv2d"(%c, %w2, %y) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 3, 3>} : (memref<1x2x8x8x16xf16, "gm">, memref<18x2x16x16xf16, "gm">, memref<1x2x8x8x16xf16, "gm">) -> () loc("conv2")
  return
}
