// RUN: not npu-opt %s --split-input-file --npu-plan-memory 2>/dev/null | FileCheck %s
// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-plan-memory="remarks=true" -o %t

// Three UB buffers in a chain: %a dies at the first vexp, so %c (first
// written by V, like %a's last access) reuses its bytes; %b is live with both.
// CHECK-LABEL: func.func @chain_reuse
// CHECK-SAME: npu.memory_plan = {ub = {algorithm = "{{.*}}", allocated = 8192 : i64, capacity = 262144 : i64, lower_bound = 8192 : i64, pipe_aware = true, sum = 12288 : i64}}
// CHECK: %[[A:.*]] = memref.alloc() {npu.offset = [[OA:[0-9]+]] : i64} : memref<2048xf16, "ub">
// CHECK: %[[B:.*]] = memref.alloc() {npu.offset = [[OB:[0-9]+]] : i64} : memref<2048xf16, "ub">
// CHECK: %[[C:.*]] = memref.alloc() {npu.offset = [[OA]] : i64} : memref<2048xf16, "ub">
// expected-remark@+1 {{ub: allocated 8192 B, lower bound 8192 B, sum of sizes 12288 B, capacity 262144 B}}
func.func @chain_reuse(%in: memref<2048xf16, "gm">, %out: memref<2048xf16, "gm">) {
  %a = memref.alloc() : memref<2048xf16, "ub">
  %b = memref.alloc() : memref<2048xf16, "ub">
  %c = memref.alloc() : memref<2048xf16, "ub">
  "cce.copy_gm_to_ub"(%in, %a) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<2048xf16, "gm">, memref<2048xf16, "ub">) -> ()
  "cce.vexp"(%b, %a) {repeat = 16 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<2048xf16, "ub">, memref<2048xf16, "ub">) -> ()
  "cce.vexp"(%c, %b) {repeat = 16 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<2048xf16, "ub">, memref<2048xf16, "ub">) -> ()
  "cce.copy_ub_to_gm"(%c, %out) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<2048xf16, "ub">, memref<2048xf16, "gm">) -> ()
  return
}

// -----

// Two tiles processed one after the other. Reusing the first tile's bytes
// for the second would make the second load (MTE2) wait for the first
// store (MTE3), so while the buffer has room the planner keeps them apart.
// CHECK-LABEL: func.func @no_cross_pipe_reuse
// CHECK: memref.alloc() {npu.offset = 0 : i64}
// CHECK: memref.alloc() {npu.offset = 4096 : i64}
// expected-remark@+1 {{ub: allocated 8192 B, lower bound 4096 B, sum of sizes 8192 B}}
func.func @no_cross_pipe_reuse(%in: memref<4096xf16, "gm">, %out: memref<4096xf16, "gm">) {
  %a = memref.alloc() : memref<2048xf16, "ub">
  %b = memref.alloc() : memref<2048xf16, "ub">
  %i0 = memref.subview %in[0] [2048] [1] : memref<4096xf16, "gm"> to memref<2048xf16, strided<[1]>, "gm">
  %i1 = memref.subview %in[2048] [2048] [1] : memref<4096xf16, "gm"> to memref<2048xf16, strided<[1], offset: 2048>, "gm">
  %o0 = memref.subview %out[0] [2048] [1] : memref<4096xf16, "gm"> to memref<2048xf16, strided<[1]>, "gm">
  %o1 = memref.subview %out[2048] [2048] [1] : memref<4096xf16, "gm"> to memref<2048xf16, strided<[1], offset: 2048>, "gm">
  "cce.copy_gm_to_ub"(%i0, %a) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<2048xf16, strided<[1]>, "gm">, memref<2048xf16, "ub">) -> ()
  "cce.copy_ub_to_gm"(%a, %o0) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<2048xf16, "ub">, memref<2048xf16, strided<[1]>, "gm">) -> ()
  "cce.copy_gm_to_ub"(%i1, %b) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<2048xf16, strided<[1], offset: 2048>, "gm">, memref<2048xf16, "ub">) -> ()
  "cce.copy_ub_to_gm"(%b, %o1) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<2048xf16, "ub">, memref<2048xf16, strided<[1], offset: 2048>, "gm">) -> ()
  return
}

// -----

// The same two tiles when keeping them apart does not fit (2 x 160 KiB in a
// 256 KiB UB): the planner falls back to lifetime reuse.
// CHECK-LABEL: func.func @reuse_when_tight
// CHECK-SAME: pipe_aware = false
// CHECK: memref.alloc() {npu.offset = 0 : i64}
// CHECK: memref.alloc() {npu.offset = 0 : i64}
// expected-remark@+1 {{ub: allocated 163840 B, lower bound 163840 B, sum of sizes 327680 B, capacity 262144 B (2 buffers, greedy-by-size, reuse across pipes)}}
func.func @reuse_when_tight(%in: memref<81920xf16, "gm">, %out: memref<81920xf16, "gm">) {
  %a = memref.alloc() : memref<81920xf16, "ub">
  %b = memref.alloc() : memref<81920xf16, "ub">
  "cce.copy_gm_to_ub"(%in, %a) {n_burst = 1 : i64, burst_len = 5120 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<81920xf16, "gm">, memref<81920xf16, "ub">) -> ()
  "cce.copy_ub_to_gm"(%a, %out) {n_burst = 1 : i64, burst_len = 5120 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<81920xf16, "ub">, memref<81920xf16, "gm">) -> ()
  "cce.copy_gm_to_ub"(%out, %b) {n_burst = 1 : i64, burst_len = 5120 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<81920xf16, "gm">, memref<81920xf16, "ub">) -> ()
  "cce.copy_ub_to_gm"(%b, %in) {n_burst = 1 : i64, burst_len = 5120 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<81920xf16, "ub">, memref<81920xf16, "gm">) -> ()
  return
}

// -----

// The tight pair of @reuse_when_tight, then the two tiles of
// @no_cross_pipe_reuse in the same function: only the pair gives up the
// pipe-aware planning; the tiles stay apart (before, one tight kernel had
// every buffer of the function planned on plain lifetimes: ResNet-18's
// downsample convs drained each tile into the UB bytes of the previous
// tile's store, waiting for it).
// CHECK-LABEL: func.func @tight_pair_then_tiles
// CHECK-SAME: pipe_aware = false
// CHECK: memref.alloc() {npu.offset = 0 : i64} : memref<81920xf16, "ub">
// CHECK: memref.alloc() {npu.offset = 0 : i64} : memref<81920xf16, "ub">
// CHECK: memref.alloc() {npu.offset = 0 : i64} : memref<2048xf16, "ub">
// CHECK: memref.alloc() {npu.offset = 4096 : i64} : memref<2048xf16, "ub">
// expected-remark@+1 {{ub: allocated 163840 B, lower bound 163840 B, sum of sizes 335872 B, capacity 262144 B (4 buffers, greedy-by-size, reuse across pipes)}}
func.func @tight_pair_then_tiles(%in: memref<81920xf16, "gm">, %out: memref<81920xf16, "gm">) {
  %a = memref.alloc() : memref<81920xf16, "ub">
  %b = memref.alloc() : memref<81920xf16, "ub">
  %c = memref.alloc() : memref<2048xf16, "ub">
  %d = memref.alloc() : memref<2048xf16, "ub">
  "cce.copy_gm_to_ub"(%in, %a) {n_burst = 1 : i64, burst_len = 5120 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<81920xf16, "gm">, memref<81920xf16, "ub">) -> ()
  "cce.copy_ub_to_gm"(%a, %out) {n_burst = 1 : i64, burst_len = 5120 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<81920xf16, "ub">, memref<81920xf16, "gm">) -> ()
  "cce.copy_gm_to_ub"(%out, %b) {n_burst = 1 : i64, burst_len = 5120 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<81920xf16, "gm">, memref<81920xf16, "ub">) -> ()
  "cce.copy_ub_to_gm"(%b, %in) {n_burst = 1 : i64, burst_len = 5120 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<81920xf16, "ub">, memref<81920xf16, "gm">) -> ()
  %i0 = memref.subview %in[0] [2048] [1] : memref<81920xf16, "gm"> to memref<2048xf16, strided<[1]>, "gm">
  %i1 = memref.subview %in[2048] [2048] [1] : memref<81920xf16, "gm"> to memref<2048xf16, strided<[1], offset: 2048>, "gm">
  %o0 = memref.subview %out[0] [2048] [1] : memref<81920xf16, "gm"> to memref<2048xf16, strided<[1]>, "gm">
  %o1 = memref.subview %out[2048] [2048] [1] : memref<81920xf16, "gm"> to memref<2048xf16, strided<[1], offset: 2048>, "gm">
  "cce.copy_gm_to_ub"(%i0, %c) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<2048xf16, strided<[1]>, "gm">, memref<2048xf16, "ub">) -> ()
  "cce.copy_ub_to_gm"(%c, %o0) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<2048xf16, "ub">, memref<2048xf16, strided<[1]>, "gm">) -> ()
  "cce.copy_gm_to_ub"(%i1, %d) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<2048xf16, strided<[1], offset: 2048>, "gm">, memref<2048xf16, "ub">) -> ()
  "cce.copy_ub_to_gm"(%d, %o1) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<2048xf16, "ub">, memref<2048xf16, strided<[1], offset: 2048>, "gm">) -> ()
  return
}
// -----

// A buffer allocated inside a loop body lives for the whole body, so the two
// tiles of one iteration never share bytes; L0 buffers round up to 512 B.
// CHECK-LABEL: func.func @loop_body_and_granule
// CHECK: memref.alloc() {npu.offset = 0 : i64} : memref<16x16xf16, "l1">
// CHECK: memref.alloc() {npu.offset = 0 : i64} : memref<8x16xf16, "l0a">
// CHECK: memref.alloc() {npu.offset = 512 : i64} : memref<8x16xf16, "l0a">
// expected-remark@+2 {{l1: allocated 512 B, lower bound 512 B, sum of sizes 512 B}}
// expected-remark@+1 {{l0a: allocated 1024 B, lower bound 1024 B, sum of sizes 1024 B}}
func.func @loop_body_and_granule(%in: memref<16x16xf16, "gm">) {
  %l1 = memref.alloc() : memref<16x16xf16, "l1">
  "cce.copy_gm_to_l1"(%in, %l1) {n_burst = 1 : i64, burst_len = 16 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<16x16xf16, "gm">, memref<16x16xf16, "l1">) -> ()
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c2 step %c1 {
    %x = memref.alloc() : memref<8x16xf16, "l0a">
    %y = memref.alloc() : memref<8x16xf16, "l0a">
    "cce.load_l1_to_l0a"(%l1, %x) {repeat = 1 : i64, src_stride = 1 : i64, dst_stride = 1 : i64, transpose = false} : (memref<16x16xf16, "l1">, memref<8x16xf16, "l0a">) -> ()
    "cce.load_l1_to_l0a"(%l1, %y) {repeat = 1 : i64, src_stride = 1 : i64, dst_stride = 1 : i64, transpose = false} : (memref<16x16xf16, "l1">, memref<8x16xf16, "l0a">) -> ()
  }
  return
}

// -----

// Overflow: both tiles are live at the vadd; the error names the buffer,
// the bytes needed and available, and the largest allocations at the peak.
func.func @overflow(%in: memref<81920xf16, "gm">, %out: memref<81920xf16, "gm">) {
  %a = memref.alloc() : memref<81920xf16, "ub">
  // expected-error@+1 {{ub overflows: 327680 bytes needed but only 262144 available (at least 327680 bytes are live at once; 2 buffers, 327680 bytes without reuse); largest allocations live at the peak: ub alloc of 163840 B at line}}
  %b = memref.alloc() : memref<81920xf16, "ub">
  "cce.copy_gm_to_ub"(%in, %a) {n_burst = 1 : i64, burst_len = 5120 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<81920xf16, "gm">, memref<81920xf16, "ub">) -> ()
  "cce.copy_gm_to_ub"(%in, %b) {n_burst = 1 : i64, burst_len = 5120 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<81920xf16, "gm">, memref<81920xf16, "ub">) -> ()
  "cce.vadd"(%a, %a, %b) {repeat = 255 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64} : (memref<81920xf16, "ub">, memref<81920xf16, "ub">, memref<81920xf16, "ub">) -> ()
  "cce.copy_ub_to_gm"(%a, %out) {n_burst = 1 : i64, burst_len = 5120 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<81920xf16, "ub">, memref<81920xf16, "gm">) -> ()
  return
}
