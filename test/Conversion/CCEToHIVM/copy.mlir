// RUN: npu-opt %s --split-input-file --npu-lower-cce-to-hivm | FileCheck %s
// Copies: (src, dst) memrefs become (dst, src, config) byte addresses. GM
// arguments are base pointers into the argument area, each argument rounded
// up to 32 bytes; on-chip allocations sit at their npu.offset. Counts stay in
// 32-byte blocks; the word packs n_burst (bits 0-11), burst_len (16-31),
// src_gap (32-47), dst_gap (48-63).

// CHECK-LABEL: func.func @gm_to_ub
// %b starts at 224: %a's 200 bytes round up to 7 blocks. Row 1 of %b is 512 B further.
// CHECK-DAG: %[[SRC:.*]] = arith.constant 736 : i64
// CHECK-DAG: %[[DST:.*]] = arith.constant 1024 : i64
// 0x0002000000100003: n_burst 3, burst_len 16 (512 B), src_gap 0, dst_gap 2
// CHECK-DAG: %[[W:.*]] = arith.constant 562949954469891 : i64
// A 16-element f16 view at element 32 of the ub buffer: byte 1024 + 64; one block.
// CHECK-DAG: %[[P:.*]] = arith.constant 1088 : i64
// CHECK-DAG: %[[L1:.*]] = arith.constant 0 : i64
// 0x0000000000010001: n_burst 1, burst_len 1
// CHECK-DAG: %[[W2:.*]] = arith.constant 65537 : i64
// CHECK: "hivm.copy_gm_to_ub"(%[[DST]], %[[SRC]], %[[W]])
// CHECK: "hivm.copy_ub_to_l1"(%[[L1]], %[[P]], %[[W2]])
// CHECK-NOT: memref.alloc
func.func @gm_to_ub(%a: memref<100xf16, "gm">, %b: memref<4x256xf16, "gm">) {
  %ub = memref.alloc() {npu.offset = 1024 : i64} : memref<1024xf16, "ub">
  %l1 = memref.alloc() {npu.offset = 0 : i64} : memref<1024xf16, "l1">
  %src = memref.subview %b[1, 0] [3, 256] [1, 1] : memref<4x256xf16, "gm"> to memref<3x256xf16, strided<[256, 1], offset: 256>, "gm">
  "cce.copy_gm_to_ub"(%src, %ub) {n_burst = 3 : i64, burst_len = 16 : i64, src_gap = 0 : i64, dst_gap = 2 : i64} : (memref<3x256xf16, strided<[256, 1], offset: 256>, "gm">, memref<1024xf16, "ub">) -> ()
  %part = memref.subview %ub[32] [16] [1] : memref<1024xf16, "ub"> to memref<16xf16, strided<[1], offset: 32>, "ub">
  "cce.copy_ub_to_l1"(%part, %l1) {n_burst = 1 : i64, burst_len = 1 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<16xf16, strided<[1], offset: 32>, "ub">, memref<1024xf16, "l1">) -> ()
  return
}

// -----

// The thesis's example: a memref<1x16x1xf16> copy to UB is one 32-byte block.
// CHECK-LABEL: func.func @one_block
// CHECK-DAG: %[[UB:.*]] = arith.constant 512 : i64
// CHECK-DAG: %[[GM:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[W:.*]] = arith.constant 65537 : i64
// CHECK: "hivm.copy_gm_to_ub"(%[[UB]], %[[GM]], %[[W]])
func.func @one_block(%a: memref<1x16x1xf16, "gm">) {
  %ub = memref.alloc() {npu.offset = 512 : i64} : memref<1x16x1xf16, "ub">
  "cce.copy_gm_to_ub"(%a, %ub) {n_burst = 1 : i64, burst_len = 1 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<1x16x1xf16, "gm">, memref<1x16x1xf16, "ub">) -> ()
  return
}

// -----

// L0C -> UB and UB -> GM: bursts of whole 512-byte L0C granules (16 blocks).
// CHECK-LABEL: func.func @l0c_out
// CHECK-DAG: %[[C:.*]] = arith.constant 2048 : i64
// CHECK-DAG: %[[U:.*]] = arith.constant 0 : i64
// 0x0000000000200002: n_burst 2, burst_len 32 (1024 B)
// CHECK-DAG: %[[W:.*]] = arith.constant 2097154 : i64
// 0x0000000000400001: n_burst 1, burst_len 64 (2048 B)
// CHECK-DAG: %[[W2:.*]] = arith.constant 4194305 : i64
// CHECK: "hivm.copy_l0c_to_ub"(%[[U]], %[[C]], %[[W]])
// CHECK: "hivm.copy_ub_to_gm"(%[[U]], %[[U]], %[[W2]])
func.func @l0c_out(%out: memref<512xf32, "gm">) {
  %c = memref.alloc() {npu.offset = 2048 : i64} : memref<512xf32, "l0c">
  %u = memref.alloc() {npu.offset = 0 : i64} : memref<512xf32, "ub">
  "cce.copy_l0c_to_ub"(%c, %u) {n_burst = 2 : i64, burst_len = 32 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<512xf32, "l0c">, memref<512xf32, "ub">) -> ()
  "cce.copy_ub_to_gm"(%u, %out) {n_burst = 1 : i64, burst_len = 64 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<512xf32, "ub">, memref<512xf32, "gm">) -> ()
  return
}

// -----

// The converting L0C -> UB move: the l0c_copy word's convert field (bits
// 12-13) holds the conversion's index in none, f32_to_f16; burst_len counts
// the f32 source's blocks (the f16 destination gets half the bytes).
// CHECK-LABEL: func.func @l0c_convert
// 0x0000000000201001: n_burst 1, convert 1, burst_len 32 (1024 B of f32)
// CHECK-DAG: %[[W:.*]] = arith.constant 2101249 : i64
// CHECK: "hivm.copy_l0c_to_ub"(%{{.*}}, %{{.*}}, %[[W]])
func.func @l0c_convert() {
  %c = memref.alloc() {npu.offset = 0 : i64} : memref<256xf32, "l0c">
  %u = memref.alloc() {npu.offset = 0 : i64} : memref<256xf16, "ub">
  "cce.copy_l0c_to_ub"(%c, %u) {n_burst = 1 : i64, burst_len = 32 : i64, src_gap = 0 : i64, dst_gap = 0 : i64, convert = "f32_to_f16"} : (memref<256xf32, "l0c">, memref<256xf16, "ub">) -> ()
  return
}

// -----

// A declaration has no code: the lowering leaves it as it is.
// CHECK-LABEL: func.func private @declared(memref<16xf16, "gm">)
func.func private @declared(%a: memref<16xf16, "gm">)
