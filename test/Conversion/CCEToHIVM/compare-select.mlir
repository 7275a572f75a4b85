// RUN: npu-opt %s --split-input-file --npu-lower-cce-to-hivm | FileCheck %s
// vcmp packs its predicate (index in eq, ne, lt, le, gt, ge) into bits 48-50
// of the compare word; its dtype is the sources' type (dst is i8). vsel's
// select word holds four operands' strides: 4-bit block strides (bits 0-3
// dst, 4-7 cond, 8-11 src0, 12-15 src1), 8-bit repeat strides (16-23 dst,
// 24-31 cond, 32-39 src0, 40-47 src1), repeat at 56-63. vcmin is a vector-word
// reduction like vcmax. All run under the mask register.

// CHECK-LABEL: func.func @compare
// 0x0100_0808_0201_0101 (eq = 0) and 0x0105_0808_0201_0101 (ge = 5)
// CHECK-DAG: %[[EQ:.*]] = arith.constant 72066424524308737 : i64
// CHECK-DAG: %[[GE:.*]] = arith.constant 73473799407862017 : i64
// CHECK: "hivm.set_vector_mask"(%c0_i64, %c-1_i64)
// CHECK: "hivm.vcmp"(%{{.*}}, %{{.*}}, %{{.*}}, %[[EQ]]) {dtype = f32} : (i64, i64, i64, i64) -> ()
// CHECK-NOT: set_vector_mask
// CHECK: "hivm.vcmp"(%{{.*}}, %{{.*}}, %{{.*}}, %[[GE]]) {dtype = f32}
func.func @compare() {
  %m = memref.alloc() {npu.offset = 0 : i64} : memref<64xi8, "ub">
  %x = memref.alloc() {npu.offset = 256 : i64} : memref<64xf32, "ub">
  %y = memref.alloc() {npu.offset = 512 : i64} : memref<64xf32, "ub">
  "cce.vcmp"(%m, %x, %y) {repeat = 1 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 2 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64, predicate = "eq"} : (memref<64xi8, "ub">, memref<64xf32, "ub">, memref<64xf32, "ub">) -> ()
  "cce.vcmp"(%m, %x, %y) {repeat = 1 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 2 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64, predicate = "ge"} : (memref<64xi8, "ub">, memref<64xf32, "ub">, memref<64xf32, "ub">) -> ()
  return
}

// -----

// CHECK-LABEL: func.func @select
// 0x0100_0808_0208_1111: block strides 1, repeat strides dst 8, cond 2, src0 8, src1 8
// CHECK-DAG: %[[SEL:.*]] = arith.constant 72066424524771601 : i64
// CHECK-DAG: %[[D:.*]] = arith.constant 512 : i64
// CHECK-DAG: %[[C:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[X:.*]] = arith.constant 256 : i64
// CHECK: "hivm.vsel"(%[[D]], %[[C]], %[[X]], %[[D]], %[[SEL]]) {dtype = f32} : (i64, i64, i64, i64, i64) -> ()
func.func @select() {
  %c = memref.alloc() {npu.offset = 0 : i64} : memref<64xi8, "ub">
  %x = memref.alloc() {npu.offset = 256 : i64} : memref<64xf32, "ub">
  %y = memref.alloc() {npu.offset = 512 : i64} : memref<64xf32, "ub">
  "cce.vsel"(%y, %c, %x, %y) {repeat = 1 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, cond_blk_stride = 1 : i64, cond_rep_stride = 2 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64} : (memref<64xf32, "ub">, memref<64xi8, "ub">, memref<64xf32, "ub">, memref<64xf32, "ub">) -> ()
  return
}

// -----

// CHECK-LABEL: func.func @reduce_min
// 0x0200_0008_0100_0100: src0 block stride 1, src0 repeat stride 8, dst repeat stride 1, repeat 2
// CHECK-DAG: %[[W:.*]] = arith.constant 144115222452371712 : i64
// CHECK: "hivm.vcmin"(%{{.*}}, %{{.*}}, %[[W]]) {dtype = f16} : (i64, i64, i64) -> ()
func.func @reduce_min() {
  %x = memref.alloc() {npu.offset = 0 : i64} : memref<256xf16, "ub">
  %r = memref.alloc() {npu.offset = 512 : i64} : memref<16xf16, "ub">
  "cce.vcmin"(%r, %x) {repeat = 2 : i64, mask = 128 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64, dst_rep_stride = 1 : i64} : (memref<16xf16, "ub">, memref<256xf16, "ub">) -> ()
  return
}
