// RUN: npu-opt %s --split-input-file --npu-lower-cce-to-hivm | FileCheck %s
// Loop-dependent addresses: each view with a dynamic offset becomes one
// hivm.addr (base + sum(index * bytes per index)), where the cce view op
// was; loops, index arithmetic and synchronisation stay as they are.

// CHECK-LABEL: func.func @streamed
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:   %[[OFF:.*]] = arith.muli %[[I]], %{{.*}} : index
// %b is the second argument: base 2048 (1024 f16 of %a); 2 bytes per element
// CHECK:   %[[SRC:.*]] = "hivm.addr"(%[[OFF]]) {base = 2048 : i64, scales = array<i64: 2>} : (index) -> i64
// CHECK:   "hivm.wait_flag"() {dst = "MTE2", event = 0 : i64, src = "V"}
// CHECK:   "hivm.copy_gm_to_ub"(%{{.*}}, %[[SRC]], %{{.*}})
// CHECK:   "hivm.set_flag"() {dst = "V", event = 0 : i64, src = "MTE2"}
// a 2-D view: row index times 256 bytes plus the column index times 2, in one instruction
// CHECK:   %[[DST:.*]] = "hivm.addr"(%[[I]], %[[OFF]]) {base = 4096 : i64, scales = array<i64: 256, 2>} : (index, index) -> i64
// CHECK:   "hivm.copy_ub_to_gm"(%[[DST]], %{{.*}}, %{{.*}})
// CHECK: }
func.func @streamed(%a: memref<1024xf16, "gm">, %b: memref<1024xf16, "gm">, %c: memref<8x128xf16, "gm">) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %ub = memref.alloc() {npu.offset = 0 : i64} : memref<256xf16, "ub">
  "cce.set_flag"() {src = "V", dst = "MTE2", event = 0 : i64} : () -> ()
  scf.for %i = %c0 to %c4 step %c1 {
    %off = arith.muli %i, %c256 : index
    %src = memref.subview %b[%off] [256] [1] : memref<1024xf16, "gm"> to memref<256xf16, strided<[1], offset: ?>, "gm">
    "cce.wait_flag"() {src = "V", dst = "MTE2", event = 0 : i64} : () -> ()
    "cce.copy_gm_to_ub"(%src, %ub) {n_burst = 1 : i64, burst_len = 16 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<256xf16, strided<[1], offset: ?>, "gm">, memref<256xf16, "ub">) -> ()
    "cce.set_flag"() {src = "MTE2", dst = "V", event = 0 : i64} : () -> ()
    "cce.wait_flag"() {src = "MTE2", dst = "V", event = 0 : i64} : () -> ()
    "cce.set_flag"() {src = "V", dst = "MTE2", event = 0 : i64} : () -> ()
    %dst = memref.subview %c[%i, %off] [1, 128] [1, 1] : memref<8x128xf16, "gm"> to memref<128xf16, strided<[1], offset: ?>, "gm">
    "cce.copy_ub_to_gm"(%ub, %dst) {n_burst = 1 : i64, burst_len = 8 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<256xf16, "ub">, memref<128xf16, strided<[1], offset: ?>, "gm">) -> ()
  }
  "cce.wait_flag"() {src = "V", dst = "MTE2", event = 0 : i64} : () -> ()
  return
}

// -----

// Views without dynamic operands are free and fold into constants, also
// through collapse_shape and reinterpret_cast (whose offset counts from the
// start of the allocation, not of the view).
// CHECK-LABEL: func.func @static_views
// CHECK-NOT: hivm.addr
// row 2 of the 4x64 f32 buffer at ub 4096: 4096 + 2*256
// CHECK-DAG: %[[R:.*]] = arith.constant 4608 : i64
// element 96 from the allocation's start: 4096 + 384
// CHECK-DAG: %[[RC:.*]] = arith.constant 4480 : i64
// CHECK: "hivm.vrelu"(%[[R]], %[[RC]], %{{.*}}) {dtype = f32}
func.func @static_views() {
  %buf = memref.alloc() {npu.offset = 4096 : i64} : memref<4x64xf32, "ub">
  %flat = memref.collapse_shape %buf [[0, 1]] : memref<4x64xf32, "ub"> into memref<256xf32, "ub">
  %row = memref.subview %buf[2, 0] [1, 64] [1, 1] : memref<4x64xf32, "ub"> to memref<64xf32, strided<[1], offset: 128>, "ub">
  %rc = memref.reinterpret_cast %row to offset: [96], sizes: [64], strides: [1] : memref<64xf32, strided<[1], offset: 128>, "ub"> to memref<64xf32, strided<[1], offset: 96>, "ub">
  "cce.vrelu"(%row, %rc) {repeat = 1 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, src_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_rep_stride = 8 : i64} : (memref<64xf32, strided<[1], offset: 128>, "ub">, memref<64xf32, strided<[1], offset: 96>, "ub">) -> ()
  return
}
