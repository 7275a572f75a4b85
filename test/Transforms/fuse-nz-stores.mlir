// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-fuse | FileCheck %s
// RUN: npu-opt %s --split-input-file --npu-fuse --npu-lower-fused 2>/dev/null | FileCheck %s --check-prefix=KERNEL
// RUN: npu-opt %s --npu-fuse=nz-stores=false 2>/dev/null | FileCheck %s --check-prefix=OFF
// (OFF in one module: nz-stores is refused where a function has no fractalize alone)

// The input of a matmul cast to f16 alone (q_proj's x): the cast and the
// fractalize become one row group that writes the Nz A operand directly;
// the f16 ND tensor never reaches GM. 100 rows: the 12 padding rows of the
// last row block are zeros, written once per column block.
// CHECK-LABEL: func.func @cast_nz
// CHECK:       %[[NZ:.*]] = memref.alloc() : memref<4x7x16x16xf16, "gm">
// CHECK-NEXT:  scf.execute_region {
// CHECK-NEXT:    %[[ND:.*]] = memref.alloc() : memref<100x64xf16, "gm">
// CHECK-NEXT:    "ascend.cast"(%arg0, %[[ND]])
// CHECK-NEXT:    "ascend.fractalize"(%[[ND]], %[[NZ]])
// CHECK-NEXT:    scf.yield
// CHECK-NEXT:  } {npu.fused = {gm_bytes = 39936 : i64, row_length = 64 : i64, rows = 100 : i64, ub_bytes_per_row = 384 : i64, unfused_gm_bytes = 65536 : i64}}
// CHECK-NEXT:  "ascend.matmul"(%[[NZ]], %arg1, %arg2)
// The kernel: zero padding rows, then the rows (one chunk: the fewest flags
// for so few) loaded, and the cast converts straight into Nz order (one
// vconv per 64 columns: repeats step down the rows, lane e lands in column
// block e / 16, blocks 100 rows apart), one store of 4 column blocks of 100
// rows. No row-major f16 buffer, no gather pass, no vnchwconv, no GM
// temporary.
// KERNEL-LABEL: func.func @cast_nz
// KERNEL-NOT:   memref<100x64xf16, "gm">
// KERNEL:       cce.vdup
// KERNEL-COUNT-4: "cce.copy_ub_to_gm"{{.*}}burst_len = 12 : i64, dst_gap = 0 : i64, n_burst = 1
// KERNEL:       cce.copy_gm_to_ub
// KERNEL-NEXT:  "cce.vconv"{{.*}}dst_blk_stride = 100 : i64, dst_rep_stride = 1 : i64, mask = 64 : i64, repeat = 100 : i64, round_mode = "rint", src_blk_stride = 1 : i64, src_rep_stride = 8 : i64
// KERNEL-NOT:   "cce.vmax"
// KERNEL:       "cce.copy_ub_to_gm"{{.*}}burst_len = 100 : i64, dst_gap = 12 : i64, n_burst = 4
// KERNEL-NOT:   vnchwconv
// KERNEL:       "ascend.matmul"
// OFF-LABEL:    func.func @cast_nz
// OFF:          "ascend.cast"
// OFF-NEXT:     %[[NZ:.*]] = memref.alloc() : memref<4x7x16x16xf16, "gm">
// OFF-NEXT:     "ascend.fractalize"
func.func @cast_nz(%x: memref<100x64xf32, "gm">, %w: memref<2x4x16x16xf16, "gm">, %c: memref<2x7x16x16xf32, "gm">) {
  %h = memref.alloc() : memref<100x64xf16, "gm">
  // expected-remark @+1 {{fused 2 ops (cast, fractalize) over 100 rows of 64: GM traffic 65536 -> 39936 bytes}}
  "ascend.cast"(%x, %h) {round_mode = "rint"} : (memref<100x64xf32, "gm">, memref<100x64xf16, "gm">) -> ()
  %a = memref.alloc() : memref<4x7x16x16xf16, "gm">
  // expected-remark @+1 {{'ascend.fractalize' absorbed by the row group (cast): the f16 result leaves UB in Nz as the matmul A operand (gathered in UB), no separate layout pass over 27136 GM bytes; its ND tensor is not stored}}
  "ascend.fractalize"(%h, %a) : (memref<100x64xf16, "gm">, memref<4x7x16x16xf16, "gm">) -> ()
  // expected-remark @+1 {{without epilogue}}
  "ascend.matmul"(%a, %w, %c) : (memref<4x7x16x16xf16, "gm">, memref<2x4x16x16xf16, "gm">, memref<2x7x16x16xf32, "gm">) -> ()
  return
}

// -----

// The f16 tensor is also read after the group: it still leaves in ND, and
// in Nz for the fractalize (gathered: the cast's row-major result is needed).
// Both stores are issued together at the chunk's end, after the Nz gather
// (one MTE3 flag covers them).
// CHECK-LABEL: func.func @nd_also_read
// CHECK:       scf.execute_region {
// CHECK:         "ascend.muls"
// CHECK-NEXT:    "ascend.cast"
// CHECK-NEXT:    "ascend.fractalize"
// CHECK-NEXT:    scf.yield
// CHECK:       "ascend.adds"
// KERNEL-LABEL: func.func @nd_also_read
// KERNEL:       cce.vconv
// KERNEL:       "cce.vmax"
// KERNEL:       "cce.copy_ub_to_gm"{{.*}}burst_len = 80 : i64, dst_gap = 0 : i64, n_burst = 1
// KERNEL-NOT:   cce.v
// KERNEL:       "cce.copy_ub_to_gm"{{.*}}burst_len = 40 : i64, dst_gap = 8 : i64, n_burst = 2
func.func @nd_also_read(%x: memref<40x32xf32, "gm">, %y: memref<40x32xf16, "gm">, %a: memref<2x3x16x16xf16, "gm">) {
  %s = memref.alloc() : memref<40x32xf32, "gm">
  // expected-remark @+1 {{fused 3 ops (muls, cast, fractalize) over 40 rows of 32}}
  "ascend.muls"(%x, %s) {scalar = 5.0e-01 : f64} : (memref<40x32xf32, "gm">, memref<40x32xf32, "gm">) -> ()
  %h = memref.alloc() : memref<40x32xf16, "gm">
  "ascend.cast"(%s, %h) {round_mode = "rint"} : (memref<40x32xf32, "gm">, memref<40x32xf16, "gm">) -> ()
  // expected-remark @+1 {{its ND tensor is still stored (read elsewhere)}}
  "ascend.fractalize"(%h, %a) : (memref<40x32xf16, "gm">, memref<2x3x16x16xf16, "gm">) -> ()
  // expected-remark @+1 {{'ascend.adds' left unfused}}
  "ascend.adds"(%h, %y) {scalar = 1.0 : f64} : (memref<40x32xf16, "gm">, memref<40x32xf16, "gm">) -> ()
  return
}

// -----

// 24 f32 columns are whole 32-byte blocks but not whole 16-column
// fractals: the Nz tensor has padding columns, the fractalize stays.
// CHECK-LABEL: func.func @partial_fractal_columns
// CHECK-NOT:   scf.execute_region
// CHECK:       "ascend.fractalize"
func.func @partial_fractal_columns(%x: memref<20x24xf32, "gm">, %a: memref<2x2x16x16xf32, "gm">) {
  %s = memref.alloc() : memref<20x24xf32, "gm">
  // expected-remark @+1 {{'ascend.muls' left unfused}}
  "ascend.muls"(%x, %s) {scalar = 5.0e-01 : f64} : (memref<20x24xf32, "gm">, memref<20x24xf32, "gm">) -> ()
  // expected-remark @+1 {{'ascend.fractalize' left as its own kernel: rows of 24 elements are not whole 16-column fractals (the Nz tensor would need padding columns)}}
  "ascend.fractalize"(%s, %a) : (memref<20x24xf32, "gm">, memref<2x2x16x16xf32, "gm">) -> ()
  return
}

// -----

// The Nz tensor is read between the cast and the fractalize (its old
// value): writing it earlier, with the cast, would change what that reads.
// CHECK-LABEL: func.func @nz_read_in_between
// CHECK-NOT:   scf.execute_region
// CHECK:       "ascend.fractalize"
func.func @nz_read_in_between(%x: memref<32x32xf32, "gm">, %a: memref<2x2x16x16xf16, "gm">, %old: memref<2x2x16x16xf32, "gm">) {
  %h = memref.alloc() : memref<32x32xf16, "gm">
  // expected-remark @+1 {{'ascend.cast' left unfused}}
  "ascend.cast"(%x, %h) {round_mode = "rint"} : (memref<32x32xf32, "gm">, memref<32x32xf16, "gm">) -> ()
  // expected-remark @+1 {{'ascend.cast' left unfused}}
  "ascend.cast"(%a, %old) {round_mode = "rint"} : (memref<2x2x16x16xf16, "gm">, memref<2x2x16x16xf32, "gm">) -> ()
  // expected-remark @+1 {{'ascend.fractalize' left as its own kernel: an op between the group and the fractalize uses its Nz tensor or writes its source}}
  "ascend.fractalize"(%h, %a) : (memref<32x32xf16, "gm">, memref<2x2x16x16xf16, "gm">) -> ()
  return
}

// -----

// Without an Nz result the stores leave right after their results (the
// vector work after them overlaps them): %y's store comes before the vrelu.
// KERNEL-LABEL: func.func @stores_right_away
// KERNEL:       "cce.vadds"
// KERNEL-NEXT:  "cce.copy_ub_to_gm"
// KERNEL:       "cce.vrelu"
// KERNEL-NEXT:  "cce.copy_ub_to_gm"
func.func @stores_right_away(%x: memref<40x32xf32, "gm">, %y: memref<40x32xf32, "gm">, %z: memref<40x32xf32, "gm">) {
  %s = memref.alloc() : memref<40x32xf32, "gm">
  // expected-remark @+1 {{fused 3 ops (muls, adds, relu) over 40 rows of 32}}
  "ascend.muls"(%x, %s) {scalar = 5.0e-01 : f64} : (memref<40x32xf32, "gm">, memref<40x32xf32, "gm">) -> ()
  "ascend.adds"(%s, %y) {scalar = 1.0 : f64} : (memref<40x32xf32, "gm">, memref<40x32xf32, "gm">) -> ()
  "ascend.relu"(%s, %z) : (memref<40x32xf32, "gm">, memref<40x32xf32, "gm">) -> ()
  return
}
