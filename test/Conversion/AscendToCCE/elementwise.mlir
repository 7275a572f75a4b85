// RUN: npu-opt %s --split-input-file --npu-lower-elementwise | FileCheck %s
// RUN: npu-opt %s --split-input-file --target=ascend910b --npu-lower-elementwise | FileCheck %s --check-prefix=B910
// RUN: npu-opt %s --split-input-file --npu-lower-elementwise="ub-fraction=0.25" | FileCheck %s --check-prefix=QUARTER

// 100003 fp16 elements, add in place in the lhs buffer: two buffers of
// 2 bytes per element may use half of UB (the other half is for double
// buffering): 256 KiB / 2 / 4 B = 32768 elements per chunk on ascend910,
// 192 KiB / 2 / 4 B = 24576 on ascend910b. The remainder 100003 - 3*32768 =
// 1699 is extended back to 1712 = 107 blocks of 16: the tail starts at 98291
// and re-computes 13 elements of the last chunk.
// CHECK-LABEL: func.func @add_f16_many_chunks
// CHECK: %[[C3:.*]] = arith.constant 3 : index
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %[[C3]]
// CHECK: %[[OFF:.*]] = arith.muli %[[I]], %c32768
// CHECK: memref.alloc() : memref<32768xf16, "ub">
// CHECK: memref.subview %arg0[%[[OFF]]] [32768] [1]
// CHECK: "cce.copy_gm_to_ub"({{.*}}) {burst_len = 2048 : i64
// CHECK: "cce.vadd"({{.*}}) {{{.*}}mask = 128 : i64, repeat = 255 : i64
// CHECK: "cce.vadd"({{.*}}) {{{.*}}mask = 128 : i64, repeat = 1 : i64
// CHECK: "cce.copy_ub_to_gm"
// CHECK: }
// CHECK: memref.alloc() : memref<1712xf16, "ub">
// CHECK: memref.subview %arg0[98291] [1712] [1]
// CHECK: "cce.vadd"({{.*}}) {{{.*}}mask = 128 : i64, repeat = 13 : i64
// CHECK: "cce.vadd"({{.*}}) {{{.*}}mask = 48 : i64, repeat = 1 : i64
// CHECK: memref.subview %arg2[98291] [1712] [1]
// CHECK: "cce.copy_ub_to_gm"({{.*}}) {burst_len = 107 : i64
// B910-LABEL: func.func @add_f16_many_chunks
// B910: arith.constant 4 : index
// B910: memref.alloc() : memref<24576xf16, "ub">
// B910: memref.subview %arg0[98291] [1712] [1]
// QUARTER-LABEL: func.func @add_f16_many_chunks
// QUARTER: memref.alloc() : memref<16384xf16, "ub">
func.func @add_f16_many_chunks(%a: memref<100003xf16, "gm">, %b: memref<100003xf16, "gm">, %c: memref<100003xf16, "gm">) {
  "ascend.add"(%a, %b, %c) : (memref<100003xf16, "gm">, memref<100003xf16, "gm">, memref<100003xf16, "gm">) -> ()
  return
}

// -----

// 1000 fp32 elements (10x100 flattened): one chunk of all 1000 (whole
// blocks of 8), 15 repeats of 64 lanes and a last repeat of 40 lanes.
// CHECK-LABEL: func.func @sub_f32_one_chunk
// CHECK: memref.alloc() : memref<1000xf32, "ub">
// CHECK: "cce.vsub"({{.*}}) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 64 : i64, repeat = 15 : i64
// CHECK: "cce.vsub"({{.*}}) {{{.*}}mask = 40 : i64, repeat = 1 : i64
func.func @sub_f32_one_chunk(%a: memref<10x100xf32, "gm">, %b: memref<10x100xf32, "gm">, %c: memref<10x100xf32, "gm">) {
  "ascend.sub"(%a, %b, %c) : (memref<10x100xf32, "gm">, memref<10x100xf32, "gm">, memref<10x100xf32, "gm">) -> ()
  return
}

// -----

// 129 fp16 elements: one chunk of 128 (full mask) and a tail of one block at
// 113 that re-computes 15 elements.
// CHECK-LABEL: func.func @exp_129
// CHECK: "cce.vexp"({{.*}}) {{{.*}}mask = 128 : i64, repeat = 1 : i64
// CHECK: memref.subview %arg0[113] [16] [1]
// CHECK: "cce.vexp"({{.*}}) {{{.*}}mask = 16 : i64, repeat = 1 : i64
// CHECK: memref.subview %arg1[113] [16] [1]
func.func @exp_129(%a: memref<129xf16, "gm">, %c: memref<129xf16, "gm">) {
  "ascend.exp"(%a, %c) : (memref<129xf16, "gm">, memref<129xf16, "gm">) -> ()
  return
}

// -----

// Fewer elements than one block: one padded block, computed on 5 lanes.
// CHECK-LABEL: func.func @relu_tiny
// CHECK: "cce.copy_gm_to_ub"(%arg0, %{{.*}}) {burst_len = 1 : i64
// CHECK: "cce.vrelu"({{.*}}) {{{.*}}mask = 5 : i64, repeat = 1 : i64
// CHECK: "cce.copy_ub_to_gm"(%{{.*}}, %arg1) {burst_len = 1 : i64
func.func @relu_tiny(%a: memref<5xf16, "gm">, %c: memref<5xf16, "gm">) {
  "ascend.relu"(%a, %c) : (memref<5xf16, "gm">, memref<5xf16, "gm">) -> ()
  return
}

// -----

// Composed activations: the first step reads the input buffer, the others
// run in place in the output buffer (a separate one, so that double
// buffering can load the next input while this one is still stored).
// CHECK-LABEL: func.func @sigmoid
// CHECK: "cce.vmuls"(%[[B:.*]], %[[IN:.*]]) {{{.*}}scalar = -1.000000e+00 : f64
// CHECK-NEXT: "cce.vexp"(%[[B]], %[[B]])
// CHECK-NEXT: "cce.vadds"(%[[B]], %[[B]]) {{{.*}}scalar = 1.000000e+00 : f64
// CHECK-NEXT: "cce.vrec"(%[[B]], %[[B]])
// f16 tanh runs in f32: convert in, six f32 steps (64 lanes), one rounding back.
// CHECK-LABEL: func.func @tanh
// CHECK: memref.alloc() : memref<256xf32, "ub">
// CHECK: "cce.vconv"({{.*}}) {{{.*}}mask = 64 : i64, repeat = 4 : i64, round_mode = "none"{{.*}} -> ()
// CHECK-NEXT: "cce.vmuls"({{.*}}) {{{.*}}scalar = 2.000000e+00 : f64{{.*}} : (memref<256xf32
// CHECK-NEXT: "cce.vexp"
// CHECK-NEXT: "cce.vadds"
// CHECK-NEXT: "cce.vrec"
// CHECK-NEXT: "cce.vmuls"({{.*}}) {{{.*}}scalar = -2.000000e+00 : f64
// CHECK-NEXT: "cce.vadds"({{.*}}) {{{.*}}scalar = 1.000000e+00 : f64
// CHECK-NEXT: "cce.vconv"({{.*}}) {{{.*}}round_mode = "rint"{{.*}} : (memref<256xf16, "ub">, memref<256xf32, "ub">) -> ()
// CHECK-LABEL: func.func @neg
// CHECK: "cce.vmuls"({{.*}}) {{{.*}}scalar = -1.000000e+00 : f64
// CHECK-LABEL: func.func @clamp
// CHECK: "cce.vmaxs"({{.*}}) {{{.*}}scalar = -1.500000e+00 : f64
// CHECK-NEXT: "cce.vmins"({{.*}}) {{{.*}}scalar = 2.500000e+00 : f64
// CHECK-LABEL: func.func @muls
// CHECK: "cce.vmuls"({{.*}}) {{{.*}}scalar = 3.000000e+00 : f64
func.func @sigmoid(%a: memref<256xf32, "gm">, %c: memref<256xf32, "gm">) {
  "ascend.sigmoid"(%a, %c) : (memref<256xf32, "gm">, memref<256xf32, "gm">) -> ()
  return
}
func.func @tanh(%a: memref<256xf16, "gm">, %c: memref<256xf16, "gm">) {
  "ascend.tanh"(%a, %c) : (memref<256xf16, "gm">, memref<256xf16, "gm">) -> ()
  return
}
func.func @neg(%a: memref<256xf16, "gm">, %c: memref<256xf16, "gm">) {
  "ascend.neg"(%a, %c) : (memref<256xf16, "gm">, memref<256xf16, "gm">) -> ()
  return
}
func.func @clamp(%a: memref<256xf16, "gm">, %c: memref<256xf16, "gm">) {
  "ascend.clamp"(%a, %c) {min = -1.5 : f64, max = 2.5 : f64} : (memref<256xf16, "gm">, memref<256xf16, "gm">) -> ()
  return
}
func.func @muls(%a: memref<256xf16, "gm">, %c: memref<256xf16, "gm">) {
  "ascend.muls"(%a, %c) {scalar = 3.0 : f64} : (memref<256xf16, "gm">, memref<256xf16, "gm">) -> ()
  return
}

// -----

// In place (output = lhs) with a tail: the tail's input is loaded before the
// loop, so the overlap does not re-read already-written results.
// CHECK-LABEL: func.func @in_place
// CHECK: memref.subview %arg0[113] [16] [1]
// CHECK: "cce.copy_gm_to_ub"
// CHECK: scf.for
// CHECK: }
// CHECK: "cce.vadd"({{.*}}) {{{.*}}mask = 16 : i64
func.func @in_place(%a: memref<129xf16, "gm">, %b: memref<129xf16, "gm">) {
  "ascend.add"(%a, %b, %a) : (memref<129xf16, "gm">, memref<129xf16, "gm">, memref<129xf16, "gm">) -> ()
  return
}

// -----

// Bias add (row vector): the bias is loaded once; one instruction per
// 128-column segment repeats over the rows with a repeat stride of one row
// (768 fp16 = 48 blocks) and the bias repeat stride 0.
// CHECK-LABEL: func.func @bias_row
// CHECK: %[[BIAS:.*]] = memref.alloc() : memref<768xf16, "ub">
// CHECK: "cce.copy_gm_to_ub"(%arg1, %[[BIAS]]) {burst_len = 48 : i64
// CHECK: memref.alloc() : memref<21504xf16, "ub">
// CHECK: "cce.vadd"({{.*}}) {{{.*}}dst_rep_stride = 48 : i64, mask = 128 : i64, repeat = 28 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 48 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 0 : i64}
// CHECK-COUNT-5: "cce.vadd"
func.func @bias_row(%a: memref<28x768xf16, "gm">, %b: memref<768xf16, "gm">, %c: memref<28x768xf16, "gm">) {
  "ascend.add"(%a, %b, %c) : (memref<28x768xf16, "gm">, memref<768xf16, "gm">, memref<28x768xf16, "gm">) -> ()
  return
}

// -----

// Column vector: each of 16 values is expanded to a whole block by
// vnchwconv (all source rows the same block), read with block stride 0 and
// repeat stride 1 (one block per row). 40 rows = 32 + a tail of 16 rows at
// row 24 (8 rows re-computed).
// CHECK-LABEL: func.func @column
// CHECK: "cce.vnchwconv"({{.*}}) {dst_offsets = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15>, dst_rep_stride = 16 : i64, repeat = 2 : i64, src_offsets = array<i64: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, src_rep_stride = 1 : i64}
// CHECK: "cce.vsub"({{.*}}) {{{.*}}src1_blk_stride = 0 : i64, src1_rep_stride = 1 : i64}
// CHECK: memref.subview %{{.*}}[24] [16] [1]
// CHECK: "cce.vsub"({{.*}}) {{{.*}}repeat = 16 : i64
func.func @column(%a: memref<40x64xf16, "gm">, %b: memref<40x1xf16, "gm">, %c: memref<40x64xf16, "gm">) {
  "ascend.sub"(%a, %b, %c) : (memref<40x64xf16, "gm">, memref<40x1xf16, "gm">, memref<40x64xf16, "gm">) -> ()
  return
}

// -----

// Scalar operand (rank 0): one block loaded, element 0 broadcast to a whole
// block by one vnchwconv (every row pointer on the loaded block; row 0 of
// the transpose is kept in block 0, the others go to a scratch block), then
// read with block and repeat stride 0.
// CHECK-LABEL: func.func @scalar
// CHECK: "cce.vnchwconv"({{.*}}) {dst_offsets = array<i64: 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1>, dst_rep_stride = 0 : i64, repeat = 1 : i64, src_offsets = array<i64: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, src_rep_stride = 0 : i64}
// CHECK: "cce.vmax"({{.*}}) {{{.*}}src1_blk_stride = 0 : i64, src1_rep_stride = 0 : i64}
func.func @scalar(%a: memref<300xf16, "gm">, %b: memref<f16, "gm">, %c: memref<300xf16, "gm">) {
  "ascend.max"(%a, %b, %c) : (memref<300xf16, "gm">, memref<f16, "gm">, memref<300xf16, "gm">) -> ()
  return
}

// -----

// i32 with a scalar operand: the same broadcast (vnchwconv moves any 4-byte
// type; the two halves of row 0 both go to block 0), then an i32 vadd.
// CHECK-LABEL: func.func @scalar_i32
// CHECK: "cce.vnchwconv"({{.*}}) {dst_offsets = array<i64: 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1>
// CHECK: "cce.vadd"({{.*}}) {{{.*}}src1_blk_stride = 0 : i64, src1_rep_stride = 0 : i64} : (memref<{{.*}}xi32
func.func @scalar_i32(%a: memref<300xi32, "gm">, %b: memref<1xi32, "gm">, %c: memref<300xi32, "gm">) {
  "ascend.add"(%a, %b, %c) : (memref<300xi32, "gm">, memref<1xi32, "gm">, memref<300xi32, "gm">) -> ()
  return
}

// -----

// Bias row of 100 fp16 (not whole blocks): each row is its 96-element whole
// blocks plus the block ending at the row's end (elements 84..99), computed
// with the bias's last block; the store of that block rewrites 12 elements
// of the main part with the same values. Two copies per row and part.
// CHECK-LABEL: func.func @bias_row_unaligned
// CHECK: "cce.copy_gm_to_ub"(%{{.*}}, %{{.*}}) {burst_len = 6 : i64
// CHECK: memref.subview %arg1[84] [16] [1]
// CHECK: scf.for
// CHECK: "cce.copy_gm_to_ub"({{.*}}) {burst_len = 6 : i64
// CHECK: "cce.copy_gm_to_ub"({{.*}}) {burst_len = 1 : i64
// CHECK: }
// CHECK: "cce.vadd"({{.*}}) {dst_blk_stride = 1 : i64, dst_rep_stride = 6 : i64, mask = 96 : i64, repeat = 5 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 6 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 0 : i64}
// CHECK: "cce.vadd"({{.*}}) {dst_blk_stride = 1 : i64, dst_rep_stride = 1 : i64, mask = 16 : i64, repeat = 5 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 1 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 0 : i64}
// CHECK: scf.for
// CHECK: "cce.copy_ub_to_gm"({{.*}}) {burst_len = 6 : i64
// CHECK: "cce.copy_ub_to_gm"({{.*}}) {burst_len = 1 : i64
func.func @bias_row_unaligned(%a: memref<5x100xf16, "gm">, %b: memref<100xf16, "gm">, %c: memref<5x100xf16, "gm">) {
  "ascend.add"(%a, %b, %c) : (memref<5x100xf16, "gm">, memref<100xf16, "gm">, memref<5x100xf16, "gm">) -> ()
  return
}
