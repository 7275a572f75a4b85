// RUN: npu-opt %s --split-input-file --npu-fuse --npu-lower-fused=remarks=true -o %t 2>&1 | FileCheck %s
// RUN: npu-opt %s --split-input-file --npu-fuse "--npu-lower-fused=remarks=true layouts=false" -o %t 2>&1 | FileCheck %s --check-prefix=PLAIN
// RUN: npu-opt %s --split-input-file --npu-fuse "--npu-lower-fused=remarks=true steps=false" -o %t 2>&1 | FileCheck %s --check-prefix=STEPS
// RUN: npu-opt %s --split-input-file --npu-fuse --npu-lower-fused | FileCheck %s --check-prefix=KERNEL

// The chunk layout npu-lower-fused chooses with its pipeline model, as the
// remark says (rows per chunk, slots, what is stored from a loaded buffer,
// which buffers have one set, the combined steps, the modelled cycles).

// Residual add + layernorm over BERT's 128 x 768 (ln2): the sum x + r is
// computed in x's buffer and the normalised rows stay there, stored from
// it; 16 rows a chunk (loads of two f32 rows, twice: 192 KiB), 8 chunks in
// two slots. The variance folds its squares (square_sum); the scale and
// shift is one vmadd. Every streamed buffer in both slots (layouts=false):
// 12 rows. Without the combined steps: 8 rows, the squares a pass of their own.
// CHECK: remark: npu-lower-fused: 16 rows per chunk in 2 slot(s); add stored from its loaded buffer; steps square_sum, multiply_add; model {{[0-9]+}} cycles
// PLAIN: remark: npu-lower-fused: 12 rows per chunk in 2 slot(s); steps square_sum, multiply_add{{$}}
// STEPS: remark: npu-lower-fused: 8 rows per chunk in 2 slot(s); {{.*}}steps multiply_add; model {{[0-9]+}} cycles
// The chunk loop runs two chunks (one per slot) and is left alone by
// npu-double-buffer.
// KERNEL-LABEL: func.func @add_layernorm
// KERNEL:       scf.for
// KERNEL-COUNT-2: "cce.vrsqrt"
// KERNEL:       } {npu.double_buffer = false}
func.func @add_layernorm(%x: memref<1x128x768xf32, "gm">, %r: memref<1x128x768xf32, "gm">, %g: memref<768xf32, "gm">, %b: memref<768xf32, "gm">, %y: memref<1x128x768xf32, "gm">) {
  %t1 = memref.alloc() : memref<1x128x768xf32, "gm">
  "ascend.add"(%x, %r, %t1) : (memref<1x128x768xf32, "gm">, memref<1x128x768xf32, "gm">, memref<1x128x768xf32, "gm">) -> ()
  %t2 = memref.alloc() : memref<1x128x1xf32, "gm">
  "ascend.reduce_sum"(%t1, %t2) : (memref<1x128x768xf32, "gm">, memref<1x128x1xf32, "gm">) -> ()
  %t3 = memref.alloc() : memref<1x128x1xf32, "gm">
  "ascend.muls"(%t2, %t3) {scalar = 1.30208333333333326e-03 : f64} : (memref<1x128x1xf32, "gm">, memref<1x128x1xf32, "gm">) -> ()
  %t4 = memref.alloc() : memref<1x128x768xf32, "gm">
  "ascend.sub"(%t1, %t3, %t4) : (memref<1x128x768xf32, "gm">, memref<1x128x1xf32, "gm">, memref<1x128x768xf32, "gm">) -> ()
  %t5 = memref.alloc() : memref<1x128x768xf32, "gm">
  "ascend.mul"(%t4, %t4, %t5) : (memref<1x128x768xf32, "gm">, memref<1x128x768xf32, "gm">, memref<1x128x768xf32, "gm">) -> ()
  %t6 = memref.alloc() : memref<1x128x1xf32, "gm">
  "ascend.reduce_sum"(%t5, %t6) : (memref<1x128x768xf32, "gm">, memref<1x128x1xf32, "gm">) -> ()
  %t7 = memref.alloc() : memref<1x128x1xf32, "gm">
  "ascend.muls"(%t6, %t7) {scalar = 1.30208333333333326e-03 : f64} : (memref<1x128x1xf32, "gm">, memref<1x128x1xf32, "gm">) -> ()
  %t8 = memref.alloc() : memref<1x128x1xf32, "gm">
  "ascend.adds"(%t7, %t8) {scalar = 1.00000000000000008e-05 : f64} : (memref<1x128x1xf32, "gm">, memref<1x128x1xf32, "gm">) -> ()
  %t9 = memref.alloc() : memref<1x128x1xf32, "gm">
  "ascend.rsqrt"(%t8, %t9) : (memref<1x128x1xf32, "gm">, memref<1x128x1xf32, "gm">) -> ()
  %t10 = memref.alloc() : memref<1x128x768xf32, "gm">
  "ascend.mul"(%t4, %t9, %t10) : (memref<1x128x768xf32, "gm">, memref<1x128x1xf32, "gm">, memref<1x128x768xf32, "gm">) -> ()
  %t11 = memref.alloc() : memref<1x128x768xf32, "gm">
  "ascend.mul"(%t10, %g, %t11) : (memref<1x128x768xf32, "gm">, memref<768xf32, "gm">, memref<1x128x768xf32, "gm">) -> ()
  "ascend.add"(%t11, %b, %y) : (memref<1x128x768xf32, "gm">, memref<768xf32, "gm">, memref<1x128x768xf32, "gm">) -> ()
  return
}

// -----

// The layer input's cast to f16 Nz (q_proj's A): the f16 rows have one
// set (each chunk's are stored well before the next writes them), the f32
// input two: 26 rows a chunk, the short piece of 24 first.
// CHECK: remark: npu-lower-fused: 26 rows per chunk in 2 slot(s); one set of the stored-only buffers; steps nz_cast; model {{[0-9]+}} cycles
// PLAIN: remark: npu-lower-fused: 25 rows per chunk in 2 slot(s); steps nz_cast{{$}}
// STEPS: remark: npu-lower-fused: 16 rows per chunk in 2 slot(s); model {{[0-9]+}} cycles
// KERNEL-LABEL: func.func @nz_operand
// KERNEL:       "cce.vconv"{{.*}}dst_blk_stride = 24 : i64, dst_rep_stride = 1 : i64
// KERNEL:       scf.for
// KERNEL:       "cce.vconv"{{.*}}dst_blk_stride = 26 : i64, dst_rep_stride = 1 : i64
func.func @nz_operand(%x: memref<1x128x768xf32, "gm">, %a: memref<48x8x16x16xf16, "gm">) {
  %t1 = memref.alloc() : memref<128x768xf16, "gm">
  %flat1 = memref.collapse_shape %x [[0, 1], [2]] : memref<1x128x768xf32, "gm"> into memref<128x768xf32, "gm">
  "ascend.cast"(%flat1, %t1) {round_mode = "rint"} : (memref<128x768xf32, "gm">, memref<128x768xf16, "gm">) -> ()
  "ascend.fractalize"(%t1, %a) : (memref<128x768xf16, "gm">, memref<48x8x16x16xf16, "gm">) -> ()
  return
}

// -----

// Layernorm with an f16 Nz copy of its result (ln1's shape, 40 rows): the
// f32 result leaves and so does the Nz copy, converted as it is gathered.
// CHECK: remark: npu-lower-fused: 11 rows per chunk in 2 slot(s); the short piece last; steps square_sum, multiply_add, nz_cast; model {{[0-9]+}} cycles
// PLAIN: remark: npu-lower-fused: 14 rows per chunk in 2 slot(s); steps square_sum, multiply_add, nz_cast{{$}}
// STEPS: remark: npu-lower-fused: 10 rows per chunk in 2 slot(s); steps multiply_add; model {{[0-9]+}} cycles
func.func @nz_operand_layernorm(%x: memref<1x40x768xf32, "gm">, %g: memref<768xf32, "gm">, %b: memref<768xf32, "gm">, %y: memref<1x40x768xf32, "gm">, %a: memref<48x3x16x16xf16, "gm">) {
  %t1 = memref.alloc() : memref<1x40x1xf32, "gm">
  "ascend.reduce_sum"(%x, %t1) : (memref<1x40x768xf32, "gm">, memref<1x40x1xf32, "gm">) -> ()
  %t2 = memref.alloc() : memref<1x40x1xf32, "gm">
  "ascend.muls"(%t1, %t2) {scalar = 1.30208333333333326e-03 : f64} : (memref<1x40x1xf32, "gm">, memref<1x40x1xf32, "gm">) -> ()
  %t3 = memref.alloc() : memref<1x40x768xf32, "gm">
  "ascend.sub"(%x, %t2, %t3) : (memref<1x40x768xf32, "gm">, memref<1x40x1xf32, "gm">, memref<1x40x768xf32, "gm">) -> ()
  %t4 = memref.alloc() : memref<1x40x768xf32, "gm">
  "ascend.mul"(%t3, %t3, %t4) : (memref<1x40x768xf32, "gm">, memref<1x40x768xf32, "gm">, memref<1x40x768xf32, "gm">) -> ()
  %t5 = memref.alloc() : memref<1x40x1xf32, "gm">
  "ascend.reduce_sum"(%t4, %t5) : (memref<1x40x768xf32, "gm">, memref<1x40x1xf32, "gm">) -> ()
  %t6 = memref.alloc() : memref<1x40x1xf32, "gm">
  "ascend.muls"(%t5, %t6) {scalar = 1.30208333333333326e-03 : f64} : (memref<1x40x1xf32, "gm">, memref<1x40x1xf32, "gm">) -> ()
  %t7 = memref.alloc() : memref<1x40x1xf32, "gm">
  "ascend.adds"(%t6, %t7) {scalar = 1.00000000000000008e-05 : f64} : (memref<1x40x1xf32, "gm">, memref<1x40x1xf32, "gm">) -> ()
  %t8 = memref.alloc() : memref<1x40x1xf32, "gm">
  "ascend.rsqrt"(%t7, %t8) : (memref<1x40x1xf32, "gm">, memref<1x40x1xf32, "gm">) -> ()
  %t9 = memref.alloc() : memref<1x40x768xf32, "gm">
  "ascend.mul"(%t3, %t8, %t9) : (memref<1x40x768xf32, "gm">, memref<1x40x1xf32, "gm">, memref<1x40x768xf32, "gm">) -> ()
  %t10 = memref.alloc() : memref<1x40x768xf32, "gm">
  "ascend.mul"(%t9, %g, %t10) : (memref<1x40x768xf32, "gm">, memref<768xf32, "gm">, memref<1x40x768xf32, "gm">) -> ()
  "ascend.add"(%t10, %b, %y) : (memref<1x40x768xf32, "gm">, memref<768xf32, "gm">, memref<1x40x768xf32, "gm">) -> ()
  %t1001 = memref.alloc() : memref<40x768xf16, "gm">
  %flat22 = memref.collapse_shape %y [[0, 1], [2]] : memref<1x40x768xf32, "gm"> into memref<40x768xf32, "gm">
  "ascend.cast"(%flat22, %t1001) {round_mode = "rint"} : (memref<40x768xf32, "gm">, memref<40x768xf16, "gm">) -> ()
  "ascend.fractalize"(%t1001, %a) : (memref<40x768xf16, "gm">, memref<48x3x16x16xf16, "gm">) -> ()
  return
}
