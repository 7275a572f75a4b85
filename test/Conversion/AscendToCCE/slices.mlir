// RUN: npu-opt %s --split-input-file --npu-lower-slices | FileCheck %s

// Split of a hidden dim of 96 f32 into 32s (GPT-2's qkv): rows of 4 whole
// blocks, 12 blocks apart in the source, so each batch moves as one strided
// copy in (7 bursts, source gap 8 blocks) and one contiguous copy out.
// CHECK-LABEL: func.func @split_grouped
// CHECK: scf.for
// CHECK: "cce.copy_gm_to_ub"({{.*}}) {burst_len = 4 : i64, dst_gap = 0 : i64, n_burst = 7 : i64, src_gap = 8 : i64}
// CHECK: "cce.copy_ub_to_gm"({{.*}}) {burst_len = 4 : i64, dst_gap = 0 : i64, n_burst = 7 : i64, src_gap = 0 : i64}
// CHECK-NOT: cce.vnchwconv
func.func @split_grouped(%a: memref<2x7x96xf32, "gm">, %b: memref<2x7x32xf32, "gm">) {
  "ascend.slice"(%a, %b) {offsets = array<i64: 0, 0, 32>, strides = array<i64: 1, 1, 1>} : (memref<2x7x96xf32, "gm">, memref<2x7x32xf32, "gm">) -> ()
  return
}

// -----

// Rows of 34 f32 (4 whole blocks and 2 elements) through UB slots: each
// row's 4 blocks, then one block moved back to end at the row's end, so no
// copy leaves the row; the rows' loads go back to back, then their stores
// (`npu.kernels.run_copies.slots`).
// CHECK-LABEL: func.func @rows_tail
// CHECK: scf.for
// CHECK: "cce.copy_gm_to_ub"({{.*}}) {burst_len = 4 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64} : (memref<32xf32
// CHECK: "cce.copy_gm_to_ub"({{.*}}) {burst_len = 1 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64} : (memref<8xf32
// CHECK: scf.for
// CHECK: "cce.copy_ub_to_gm"({{.*}}) {burst_len = 4 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64} : (memref<32xf32
// CHECK: "cce.copy_ub_to_gm"({{.*}}) {burst_len = 1 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64} : (memref<8xf32
func.func @rows_tail(%a: memref<6x40xf32, "gm">, %b: memref<6x34xf32, "gm">) {
  "ascend.slice"(%a, %b) {offsets = array<i64: 0, 3>, strides = array<i64: 1, 1>} : (memref<6x40xf32, "gm">, memref<6x34xf32, "gm">) -> ()
  return
}

// -----

// Every other column of 5x9 f32: the element gather. Loaded whole (6
// blocks), expanded to a block per element, one UB copy per output row (3
// one-block bursts, gap 1 block), compacted and stored.
// CHECK-LABEL: func.func @gather
// CHECK: "cce.copy_gm_to_ub"({{.*}}) {burst_len = 6 : i64
// CHECK: "cce.vnchwconv"
// CHECK: scf.for
// CHECK: "cce.copy_ub_to_ub"({{.*}}) {burst_len = 1 : i64, dst_gap = 0 : i64, n_burst = 3 : i64, src_gap = 1 : i64}
// CHECK: "cce.vnchwconv"
// CHECK: "cce.copy_ub_to_gm"({{.*}}) {burst_len = 2 : i64
func.func @gather(%a: memref<5x9xf32, "gm">, %b: memref<5x3xf32, "gm">) {
  "ascend.slice"(%a, %b) {offsets = array<i64: 0, 1>, strides = array<i64: 1, 2>} : (memref<5x9xf32, "gm">, memref<5x3xf32, "gm">) -> ()
  return
}

// -----

// Concat's second input (rows of 2 f32) into columns 7..8 of 3x9: the output
// is loaded and expanded too, so its other elements keep their value.
// CHECK-LABEL: func.func @insert
// CHECK-COUNT-2: "cce.copy_gm_to_ub"
// CHECK: scf.for
// CHECK: "cce.copy_ub_to_ub"({{.*}}) {burst_len = 2 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64}
// CHECK: "cce.copy_ub_to_gm"({{.*}}) {burst_len = 4 : i64
func.func @insert(%a: memref<3x2xf32, "gm">, %b: memref<3x9xf32, "gm">) {
  "ascend.insert_slice"(%a, %b) {offsets = array<i64: 0, 7>} : (memref<3x2xf32, "gm">, memref<3x9xf32, "gm">) -> ()
  return
}

// -----

// A contiguous box (rows 2..5 of 7x64 i32) is one run: one copy each way.
// CHECK-LABEL: func.func @contiguous
// CHECK-NOT: scf.for
// CHECK: "cce.copy_gm_to_ub"({{.*}}) {burst_len = 32 : i64, dst_gap = 0 : i64, n_burst = 1 : i64
// CHECK: "cce.copy_ub_to_gm"({{.*}}) {burst_len = 32 : i64, dst_gap = 0 : i64, n_burst = 1 : i64
func.func @contiguous(%a: memref<7x64xi32, "gm">, %b: memref<4x64xi32, "gm">) {
  "ascend.slice"(%a, %b) {offsets = array<i64: 2, 0>, strides = array<i64: 1, 1>} : (memref<7x64xi32, "gm">, memref<4x64xi32, "gm">) -> ()
  return
}

// -----

// Rows of 200 f32 (25 whole blocks) that start 300 elements apart in the
// source (not whole blocks): one GM read per row into the packed UB buffer,
// back to back on MTE2, then the group leaves in one copy of 64 bursts.
// CHECK-LABEL: func.func @rows_packed
// CHECK: scf.for
// CHECK: "cce.copy_gm_to_ub"({{.*}}) {burst_len = 25 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64}
// CHECK: }
// CHECK: "cce.copy_ub_to_gm"({{.*}}) {burst_len = 25 : i64, dst_gap = 0 : i64, n_burst = 64 : i64, src_gap = 0 : i64}
func.func @rows_packed(%a: memref<64x300xf32, "gm">, %b: memref<64x200xf32, "gm">) {
  "ascend.slice"(%a, %b) {offsets = array<i64: 0, 50>, strides = array<i64: 1, 1>} : (memref<64x300xf32, "gm">, memref<64x200xf32, "gm">) -> ()
  return
}
