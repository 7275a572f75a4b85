// RUN: not npu-opt %s --split-input-file --npu-insert-sync 2>/dev/null | FileCheck %s
// RUN: not npu-opt %s --split-input-file --npu-insert-sync="mode=barrier" 2>/dev/null | FileCheck %s --check-prefix=BARRIER
// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-insert-sync -o %t

// load -> compute -> store: one flag per cross-pipe RAW, and the vadd's RAW
// on the vexp's result inside V is a pipe_barrier(V).
// CHECK-LABEL: func.func @chain
// CHECK:      "cce.copy_gm_to_ub"
// CHECK-NEXT: "cce.set_flag"() {dst = "V", event = 0 : i64, src = "MTE2"}
// CHECK-NEXT: "cce.wait_flag"() {dst = "V", event = 0 : i64, src = "MTE2"}
// CHECK-NEXT: "cce.vexp"
// CHECK-NEXT: "cce.pipe_barrier"() {pipe = "V"}
// CHECK-NEXT: "cce.vadd"
// CHECK-NEXT: "cce.set_flag"() {dst = "MTE3", event = 0 : i64, src = "V"}
// CHECK-NEXT: "cce.wait_flag"() {dst = "MTE3", event = 0 : i64, src = "V"}
// CHECK-NEXT: "cce.copy_ub_to_gm"
// CHECK-NEXT: return
// BARRIER-LABEL: func.func @chain
// BARRIER:      "cce.copy_gm_to_ub"
// BARRIER-NEXT: "cce.pipe_barrier"() {pipe = "ALL"}
// BARRIER-NEXT: "cce.vexp"
// BARRIER-NEXT: "cce.pipe_barrier"() {pipe = "ALL"}
// BARRIER-NEXT: "cce.vadd"
// BARRIER-NEXT: "cce.pipe_barrier"() {pipe = "ALL"}
// BARRIER-NEXT: "cce.copy_ub_to_gm"
func.func @chain(%in: memref<2048xf16, "gm">, %out: memref<2048xf16, "gm">) {
  %a = memref.alloc() {npu.offset = 0 : i64} : memref<2048xf16, "ub">
  %b = memref.alloc() {npu.offset = 4096 : i64} : memref<2048xf16, "ub">
  "cce.copy_gm_to_ub"(%in, %a) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<2048xf16, "gm">, memref<2048xf16, "ub">) -> ()
  "cce.vexp"(%b, %a) {repeat = 16 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<2048xf16, "ub">, memref<2048xf16, "ub">) -> ()
  "cce.vadd"(%b, %b, %a) {repeat = 16 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64} : (memref<2048xf16, "ub">, memref<2048xf16, "ub">, memref<2048xf16, "ub">) -> ()
  "cce.copy_ub_to_gm"(%b, %out) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<2048xf16, "ub">, memref<2048xf16, "gm">) -> ()
  return
}

// -----

// Disjoint bytes need no sync at all; the vmuls only reads what the first
// copy wrote (bytes [0, 256)), not what the second writes ([256, 512)).
// CHECK-LABEL: func.func @disjoint
// CHECK:      "cce.copy_gm_to_ub"
// CHECK-NEXT: "cce.set_flag"() {dst = "V", event = 0 : i64, src = "MTE2"}
// CHECK-NEXT: "cce.copy_gm_to_ub"
// CHECK-NEXT: "cce.wait_flag"() {dst = "V", event = 0 : i64, src = "MTE2"}
// CHECK-NEXT: "cce.vmuls"
// CHECK-NEXT: return
func.func @disjoint(%in: memref<256xf16, "gm">) {
  %a = memref.alloc() {npu.offset = 0 : i64} : memref<128xf16, "ub">
  %b = memref.alloc() {npu.offset = 256 : i64} : memref<128xf16, "ub">
  %c = memref.alloc() {npu.offset = 512 : i64} : memref<128xf16, "ub">
  %i0 = memref.subview %in[0] [128] [1] : memref<256xf16, "gm"> to memref<128xf16, strided<[1]>, "gm">
  "cce.copy_gm_to_ub"(%i0, %a) {n_burst = 1 : i64, burst_len = 8 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<128xf16, strided<[1]>, "gm">, memref<128xf16, "ub">) -> ()
  "cce.copy_gm_to_ub"(%i0, %b) {n_burst = 1 : i64, burst_len = 8 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<128xf16, strided<[1]>, "gm">, memref<128xf16, "ub">) -> ()
  "cce.vmuls"(%c, %a) {repeat = 1 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64, scalar = 2.0 : f64} : (memref<128xf16, "ub">, memref<128xf16, "ub">) -> ()
  return
}

// -----

// A loop over chunks with one UB buffer: iteration i+1's load (MTE2) must
// wait until iteration i's store (MTE3) has read the buffer. The "buffer
// free" event is pre-set before the loop, waited at the top of the body,
// set after the store and consumed once after the loop.
// CHECK-LABEL: func.func @carried
// CHECK:      "cce.set_flag"() {dst = "MTE2", event = 0 : i64, src = "MTE3"}
// CHECK:      scf.for
// CHECK:      "cce.wait_flag"() {dst = "MTE2", event = 0 : i64, src = "MTE3"}
// CHECK-NEXT: "cce.copy_gm_to_ub"
// CHECK-NEXT: "cce.set_flag"() {dst = "MTE3", event = 0 : i64, src = "MTE2"}
// CHECK:      "cce.wait_flag"() {dst = "MTE3", event = 0 : i64, src = "MTE2"}
// CHECK-NEXT: "cce.copy_ub_to_gm"
// CHECK-NEXT: "cce.set_flag"() {dst = "MTE2", event = 0 : i64, src = "MTE3"}
// CHECK-NEXT: {{^ +}}}
// CHECK-NEXT: "cce.wait_flag"() {dst = "MTE2", event = 0 : i64, src = "MTE3"}
// CHECK-NEXT: return
func.func @carried(%in: memref<4096xf16, "gm">, %out: memref<4096xf16, "gm">) {
  %buf = memref.alloc() {npu.offset = 0 : i64} : memref<1024xf16, "ub">
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %c1024 = arith.constant 1024 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %off = arith.muli %i, %c1024 : index
    %src = memref.subview %in[%off] [1024] [1] : memref<4096xf16, "gm"> to memref<1024xf16, strided<[1], offset: ?>, "gm">
    %dst = memref.subview %out[%off] [1024] [1] : memref<4096xf16, "gm"> to memref<1024xf16, strided<[1], offset: ?>, "gm">
    "cce.copy_gm_to_ub"(%src, %buf) {n_burst = 1 : i64, burst_len = 64 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<1024xf16, strided<[1], offset: ?>, "gm">, memref<1024xf16, "ub">) -> ()
    "cce.copy_ub_to_gm"(%buf, %dst) {n_burst = 1 : i64, burst_len = 64 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<1024xf16, "ub">, memref<1024xf16, strided<[1], offset: ?>, "gm">) -> ()
  }
  return
}

// -----

// Per-iteration address ranges are exact: each iteration accumulates into its
// own slice of %acc, so the vector RAWs are within one iteration only: no
// barrier at the top of the body for the previous iteration's vmuls.
// CHECK-LABEL: func.func @exact_slices
// CHECK:      scf.for
// CHECK-NOT:  "cce.pipe_barrier"
// CHECK:      "cce.vdup"
// CHECK-NEXT: "cce.pipe_barrier"() {pipe = "V"}
// CHECK-NEXT: "cce.vadds"
// CHECK-NEXT: "cce.pipe_barrier"() {pipe = "V"}
// CHECK-NEXT: "cce.vmuls"
// CHECK-NEXT: {{^ +}}}
// CHECK-NEXT: "cce.set_flag"() {dst = "MTE3", event = 0 : i64, src = "V"}
// CHECK-NEXT: "cce.wait_flag"() {dst = "MTE3", event = 0 : i64, src = "V"}
// CHECK-NEXT: "cce.copy_ub_to_gm"
func.func @exact_slices(%out: memref<512xf16, "gm">) {
  %acc = memref.alloc() {npu.offset = 0 : i64} : memref<512xf16, "ub">
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %off = arith.muli %i, %c128 : index
    %s = memref.subview %acc[%off] [128] [1] : memref<512xf16, "ub"> to memref<128xf16, strided<[1], offset: ?>, "ub">
    "cce.vdup"(%s) {repeat = 1 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, scalar = 1.0 : f64} : (memref<128xf16, strided<[1], offset: ?>, "ub">) -> ()
    "cce.vadds"(%s, %s) {repeat = 1 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64, scalar = 1.0 : f64} : (memref<128xf16, strided<[1], offset: ?>, "ub">, memref<128xf16, strided<[1], offset: ?>, "ub">) -> ()
    "cce.vmuls"(%s, %s) {repeat = 1 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64, scalar = 2.0 : f64} : (memref<128xf16, strided<[1], offset: ?>, "ub">, memref<128xf16, strided<[1], offset: ?>, "ub">) -> ()
  }
  "cce.copy_ub_to_gm"(%acc, %out) {n_burst = 1 : i64, burst_len = 32 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<512xf16, "ub">, memref<512xf16, "gm">) -> ()
  return
}

// -----

// A sync implied by others is dropped: the store of %b waits for V, and V
// waited for the load, so the store of %a needs no MTE2 -> MTE3 flag.
// CHECK-LABEL: func.func @implied
// CHECK-NOT:  dst = "MTE3", event = {{[0-9]+}} : i64, src = "MTE2"
// CHECK:      "cce.wait_flag"() {dst = "MTE3", event = 0 : i64, src = "V"}
// CHECK-NEXT: "cce.copy_ub_to_gm"
// CHECK-NEXT: "cce.copy_ub_to_gm"
// CHECK-NEXT: return
func.func @implied(%in: memref<128xf16, "gm">, %o1: memref<128xf16, "gm">, %o2: memref<128xf16, "gm">) {
  %a = memref.alloc() {npu.offset = 0 : i64} : memref<128xf16, "ub">
  %b = memref.alloc() {npu.offset = 256 : i64} : memref<128xf16, "ub">
  "cce.copy_gm_to_ub"(%in, %a) {n_burst = 1 : i64, burst_len = 8 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<128xf16, "gm">, memref<128xf16, "ub">) -> ()
  "cce.vexp"(%b, %a) {repeat = 1 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<128xf16, "ub">, memref<128xf16, "ub">) -> ()
  "cce.copy_ub_to_gm"(%b, %o1) {n_burst = 1 : i64, burst_len = 8 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<128xf16, "ub">, memref<128xf16, "gm">) -> ()
  "cce.copy_ub_to_gm"(%a, %o2) {n_burst = 1 : i64, burst_len = 8 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<128xf16, "ub">, memref<128xf16, "gm">) -> ()
  return
}

// -----

// A loop is one node of its block, but what its body's syncs imply at its
// exit counts: V waited for the last iteration's load, so the vmuls of %a
// after the loop needs no MTE2 -> V pair; the vdup of %b must wait for the
// last store (MTE3 -> V), which the loop's balancing wait of its carried
// MTE3 -> V pair already does when it goes right before the vdup instead
// of at the end (no second pair, no V barrier).
// CHECK-LABEL: func.func @after_loop
// CHECK:      scf.for
// CHECK:      "cce.set_flag"() {dst = "V", event = 0 : i64, src = "MTE3"}
// CHECK-NEXT: {{^ +}}}
// CHECK-NEXT: "cce.wait_flag"() {dst = "V", event = 0 : i64, src = "MTE3"}
// CHECK-NEXT: "cce.vdup"
// CHECK-NEXT: "cce.vmuls"
// CHECK-NEXT: "cce.set_flag"() {dst = "MTE3", event = 0 : i64, src = "V"}
// CHECK-NEXT: "cce.wait_flag"() {dst = "MTE3", event = 0 : i64, src = "V"}
// CHECK-NEXT: "cce.copy_ub_to_gm"
// CHECK-NEXT: "cce.wait_flag"() {dst = "MTE2", event = 0 : i64, src = "V"}
// CHECK-NEXT: return
func.func @after_loop(%in: memref<4096xf16, "gm">, %out: memref<4096xf16, "gm">, %o2: memref<1024xf16, "gm">) {
  %a = memref.alloc() {npu.offset = 0 : i64} : memref<1024xf16, "ub">
  %b = memref.alloc() {npu.offset = 2048 : i64} : memref<1024xf16, "ub">
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %c1024 = arith.constant 1024 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %off = arith.muli %i, %c1024 : index
    %src = memref.subview %in[%off] [1024] [1] : memref<4096xf16, "gm"> to memref<1024xf16, strided<[1], offset: ?>, "gm">
    %dst = memref.subview %out[%off] [1024] [1] : memref<4096xf16, "gm"> to memref<1024xf16, strided<[1], offset: ?>, "gm">
    "cce.copy_gm_to_ub"(%src, %a) {n_burst = 1 : i64, burst_len = 64 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<1024xf16, strided<[1], offset: ?>, "gm">, memref<1024xf16, "ub">) -> ()
    "cce.vexp"(%b, %a) {repeat = 8 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64} : (memref<1024xf16, "ub">, memref<1024xf16, "ub">) -> ()
    "cce.copy_ub_to_gm"(%b, %dst) {n_burst = 1 : i64, burst_len = 64 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<1024xf16, "ub">, memref<1024xf16, strided<[1], offset: ?>, "gm">) -> ()
  }
  "cce.vdup"(%b) {repeat = 8 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, scalar = 0.0 : f64} : (memref<1024xf16, "ub">) -> ()
  "cce.vmuls"(%a, %a) {repeat = 8 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64, scalar = 2.0 : f64} : (memref<1024xf16, "ub">, memref<1024xf16, "ub">) -> ()
  "cce.copy_ub_to_gm"(%a, %o2) {n_burst = 1 : i64, burst_len = 64 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<1024xf16, "ub">, memref<1024xf16, "gm">) -> ()
  return
}

// -----

// Bad input: the pass runs once, on code without synchronisation.
func.func @already_synced() {
  // expected-error@+1 {{npu-insert-sync expects code without synchronisation; found 'cce.set_flag'}}
  "cce.set_flag"() {src = "MTE2", dst = "V", event = 0 : i64} : () -> ()
  return
}

// -----

// A converting L0C -> UB move (f32 -> f16) writes half the bytes it reads:
// the pieces of a matmul drain land in two adjacent f16 buffers by turns, and
// each move waits only for the store of the buffer it overwrites, on its own
// event id (piece 1's move waits for nothing; piece 2's for piece 0's store).
// CHECK-LABEL: func.func @landing_turns
// CHECK:      "cce.copy_l0c_to_ub"(%arg0, %[[U0:.*]]) {{.*}}convert = "f32_to_f16"
// CHECK:      "cce.copy_ub_to_gm"(%[[U0]]
// CHECK-NEXT: "cce.set_flag"() {dst = "V", event = 0 : i64, src = "MTE3"}
// CHECK-NEXT: "cce.copy_l0c_to_ub"(%arg1, %[[U1:.*]]) {{.*}}convert = "f32_to_f16"
// CHECK:      "cce.copy_ub_to_gm"(%[[U1]]
// CHECK-NEXT: "cce.set_flag"() {dst = "V", event = 1 : i64, src = "MTE3"}
// CHECK-NEXT: "cce.wait_flag"() {dst = "V", event = 0 : i64, src = "MTE3"}
// CHECK-NEXT: "cce.copy_l0c_to_ub"(%arg2, %[[U0]])
// CHECK:      "cce.copy_ub_to_gm"(%[[U0]]
// CHECK-NEXT: "cce.wait_flag"() {dst = "V", event = 1 : i64, src = "MTE3"}
// CHECK-NEXT: "cce.copy_l0c_to_ub"(%arg3, %[[U1]])
func.func @landing_turns(%c0: memref<1024xf32, "l0c">, %c1: memref<1024xf32, "l0c">, %c2: memref<1024xf32, "l0c">, %c3: memref<1024xf32, "l0c">, %out: memref<4096xf16, "gm">) {
  %u0 = memref.alloc() {npu.offset = 0 : i64} : memref<1024xf16, "ub">
  %u1 = memref.alloc() {npu.offset = 2048 : i64} : memref<1024xf16, "ub">
  %o0 = memref.subview %out[0] [1024] [1] : memref<4096xf16, "gm"> to memref<1024xf16, strided<[1]>, "gm">
  %o1 = memref.subview %out[1024] [1024] [1] : memref<4096xf16, "gm"> to memref<1024xf16, strided<[1], offset: 1024>, "gm">
  %o2 = memref.subview %out[2048] [1024] [1] : memref<4096xf16, "gm"> to memref<1024xf16, strided<[1], offset: 2048>, "gm">
  %o3 = memref.subview %out[3072] [1024] [1] : memref<4096xf16, "gm"> to memref<1024xf16, strided<[1], offset: 3072>, "gm">
  "cce.copy_l0c_to_ub"(%c0, %u0) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64, convert = "f32_to_f16"} : (memref<1024xf32, "l0c">, memref<1024xf16, "ub">) -> ()
  "cce.copy_ub_to_gm"(%u0, %o0) {n_burst = 1 : i64, burst_len = 64 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<1024xf16, "ub">, memref<1024xf16, strided<[1]>, "gm">) -> ()
  "cce.copy_l0c_to_ub"(%c1, %u1) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64, convert = "f32_to_f16"} : (memref<1024xf32, "l0c">, memref<1024xf16, "ub">) -> ()
  "cce.copy_ub_to_gm"(%u1, %o1) {n_burst = 1 : i64, burst_len = 64 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<1024xf16, "ub">, memref<1024xf16, strided<[1], offset: 1024>, "gm">) -> ()
  "cce.copy_l0c_to_ub"(%c2, %u0) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64, convert = "f32_to_f16"} : (memref<1024xf32, "l0c">, memref<1024xf16, "ub">) -> ()
  "cce.copy_ub_to_gm"(%u0, %o2) {n_burst = 1 : i64, burst_len = 64 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<1024xf16, "ub">, memref<1024xf16, strided<[1], offset: 2048>, "gm">) -> ()
  "cce.copy_l0c_to_ub"(%c3, %u1) {n_burst = 1 : i64, burst_len = 128 : i64, src_gap = 0 : i64, dst_gap = 0 : i64, convert = "f32_to_f16"} : (memref<1024xf32, "l0c">, memref<1024xf16, "ub">) -> ()
  "cce.copy_ub_to_gm"(%u1, %o3) {n_burst = 1 : i64, burst_len = 64 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<1024xf16, "ub">, memref<1024xf16, strided<[1], offset: 3072>, "gm">) -> ()
  return
}
