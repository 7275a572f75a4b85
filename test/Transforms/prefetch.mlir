// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-lower-elementwise --npu-lower-matmul="schedule=pipelined l1-chunk=16" --npu-double-buffer --npu-prefetch=remarks=true | FileCheck %s
// RUN: npu-opt %s --split-input-file --npu-lower-elementwise --npu-lower-matmul="schedule=pipelined l1-chunk=16" --npu-double-buffer 2>/dev/null | FileCheck %s --check-prefix=OFF
// RUN: npu-opt %s --split-input-file --npu-lower="cores=1 emit=cce l1-chunk=16 fuse=false prefetch=true" 2>/dev/null | FileCheck %s --check-prefix=PLANNED
// cores=1: npu-prefetch runs on one core only.
// The exp leaves MTE2 idle while its last chunk (step 3 and 4 of its
// lowering: vexp, store) is computed and stored, a gap after its last load:
// both ping-pong slots of the matmul's weight (a host constant) are filled
// there, after the exp's loop and before the matmul's own loop, which then
// loads B only from its second iteration on. Nothing else moves: A is
// still loaded in the loop.
// CHECK-LABEL: func.func @after_exp
// CHECK-SAME:  %[[W:[a-z0-9_]+]]: memref<5x64x16x16xf16, "gm"> {npu.constant
// CHECK:       scf.for
// CHECK:         cce.vexp
// CHECK:       }
// CHECK:       %[[FIRST:.*]] = arith.constant 0 : index
// CHECK-NEXT:  %[[SLOT0:.*]] = memref.alloc() {npu.slot = 0 : i64} : memref<5x1x16x16xf16, "l1">
// CHECK-NEXT:  %[[SLOT1:.*]] = memref.alloc() {npu.slot = 1 : i64} : memref<5x1x16x16xf16, "l1">
// CHECK:       %[[B0:.*]] = memref.subview %[[W]]
// CHECK:       "cce.copy_gm_to_l1"(%[[B0]], %[[SLOT0]])
// CHECK:       arith.addi %[[FIRST]]
// CHECK:       %[[B1:.*]] = memref.subview %[[W]]
// CHECK:       "cce.copy_gm_to_l1"(%[[B1]], %[[SLOT1]])
// The guard holds the whole run of loads the weight copy ends (A's copy
// too, in both branches), so that one flag after the run orders them.
// CHECK:       scf.for %[[I:[a-z0-9_]+]] = %[[LB:[a-z0-9_]+]] to
// CHECK:         %[[LATER:.*]] = arith.cmpi ne, %[[I]], %[[LB]] : index
// CHECK-NEXT:    scf.if %[[LATER]] {
// CHECK-NEXT:      "cce.copy_gm_to_l1"(%[[A0:.*]], %[[ASLOT0:.*]]) {{.*}}memref<1x3x16x16xf16, "l1">
// CHECK-NEXT:      "cce.copy_gm_to_l1"(%{{.*}}, %[[SLOT0]])
// CHECK-NEXT:    } else {
// CHECK-NEXT:      "cce.copy_gm_to_l1"(%[[A0]], %[[ASLOT0]])
// CHECK-NEXT:    {{^ +}}}{{$}}
// CHECK:         cce.mad
// CHECK:         %[[LATER1:.*]] = arith.cmpi ne, %[[I]], %[[LB]] : index
// CHECK-NEXT:    scf.if %[[LATER1]] {
// CHECK-NEXT:      "cce.copy_gm_to_l1"
// CHECK-NEXT:      "cce.copy_gm_to_l1"(%{{.*}}, %[[SLOT1]])
// CHECK-NEXT:    } else {
// CHECK-NEXT:      "cce.copy_gm_to_l1"
// CHECK-NEXT:    {{^ +}}}{{$}}
// CHECK:         cce.mad
// CHECK:       return
// Without npu-prefetch every weight copy stays in the loop, unguarded.
// OFF-LABEL:   func.func @after_exp
// OFF:         scf.for
// OFF:         scf.for
// OFF:           memref.alloc() {npu.slot = 0 : i64} : memref<5x1x16x16xf16, "l1">
// OFF-NEXT:      "cce.copy_gm_to_l1"
// OFF:         return
// Planned and synchronised by npu-lower: the chunks load before the
// matmul's first wait on the A its loop stages.
// PLANNED-LABEL: func.func @after_exp
// PLANNED:       cce.vexp
// PLANNED:       "cce.copy_gm_to_l1"(%{{.*}}, %{{.*}}) {{.*}}memref<5x1x16x16xf16, "l1">
// PLANNED:       "cce.copy_gm_to_l1"(%{{.*}}, %{{.*}}) {{.*}}memref<5x1x16x16xf16, "l1">
// PLANNED:       scf.for
// PLANNED:         scf.if
// PLANNED-NEXT:      "cce.copy_gm_to_l1"
// PLANNED-NEXT:      "cce.copy_gm_to_l1"
// PLANNED-NEXT:    } else {
// PLANNED-NEXT:      "cce.copy_gm_to_l1"
// PLANNED-NEXT:    {{^ +}}}{{$}}
// PLANNED-NEXT:    cce.set_flag
func.func @after_exp(%x: memref<64x3x16x16xf16, "gm">, %a: memref<64x3x16x16xf16, "gm">, %w: memref<5x64x16x16xf16, "gm"> {npu.constant = dense<0.5> : tensor<5x64x16x16xf16>}, %c: memref<5x3x16x16xf32, "gm">) {
  "ascend.exp"(%x, %a) : (memref<64x3x16x16xf16, "gm">, memref<64x3x16x16xf16, "gm">) -> ()
  // expected-remark @+2 {{matmul tiling}}
  // expected-remark @+1 {{npu-prefetch: 2 of 2 weight slot(s) (5120 bytes, 2 copies) loaded after}}
  "ascend.matmul"(%a, %w, %c) : (memref<64x3x16x16xf16, "gm">, memref<5x64x16x16xf16, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  return
}

// -----

// The first op, with no preparation of its own, has nothing before it to
// overlap: its weight copies stay in the loop, unguarded.
// CHECK-LABEL: func.func @first_op
// CHECK:       scf.for
// CHECK:         memref.alloc() {npu.slot = 0 : i64} : memref<5x1x16x16xf16, "l1">
// CHECK-NEXT:    "cce.copy_gm_to_l1"
// CHECK:       return
func.func @first_op(%a: memref<4x3x16x16xf16, "gm">, %w: memref<5x4x16x16xf16, "gm"> {npu.constant = dense<0.5> : tensor<5x4x16x16xf16>}, %c: memref<5x3x16x16xf32, "gm">) {
  // expected-remark @+2 {{matmul tiling}}
  // expected-remark @+1 {{npu-prefetch: not prefetched: no earlier op or preparation whose idle MTE2 time the weight loads could use}}
  "ascend.matmul"(%a, %w, %c) : (memref<4x3x16x16xf16, "gm">, memref<5x4x16x16xf16, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  return
}

// -----

// B is an input, not a host constant: the program could have written it.
// CHECK-LABEL: func.func @weights_are_an_input
func.func @weights_are_an_input(%x: memref<64x1024xf32, "gm">, %e: memref<64x1024xf32, "gm">, %a: memref<4x3x16x16xf16, "gm">, %w: memref<5x4x16x16xf16, "gm">, %c: memref<5x3x16x16xf32, "gm">) {
  "ascend.exp"(%x, %e) : (memref<64x1024xf32, "gm">, memref<64x1024xf32, "gm">) -> ()
  // expected-remark @+2 {{matmul tiling}}
  // expected-remark @+1 {{npu-prefetch: not prefetched: the loop stages no host-constant weights into L1}}
  "ascend.matmul"(%a, %w, %c) : (memref<4x3x16x16xf16, "gm">, memref<5x4x16x16xf16, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  return
}

// -----

// A 48x16 exp leaves MTE2 idle a few dozen cycles, far less than half the
// load of a 32 KiB weight chunk: loading it there would only delay A.
// CHECK-LABEL: func.func @short_tail
func.func @short_tail(%x: memref<1x3x16x16xf16, "gm">, %a: memref<1x3x16x16xf16, "gm">, %w: memref<64x1x16x16xf16, "gm"> {npu.constant = dense<0.5> : tensor<64x1x16x16xf16>}, %c: memref<64x3x16x16xf32, "gm">) {
  "ascend.exp"(%x, %a) : (memref<1x3x16x16xf16, "gm">, memref<1x3x16x16xf16, "gm">) -> ()
  // expected-remark @+2 {{matmul tiling}}
  // expected-remark @+1 {{npu-prefetch: not prefetched: its idle gaps are too short for a chunk's load}}
  "ascend.matmul"(%a, %w, %c) : (memref<1x3x16x16xf16, "gm">, memref<64x1x16x16xf16, "gm">, memref<64x3x16x16xf32, "gm">) -> ()
  return
}

// -----

// The matmul reads nothing the exp writes: its loads follow the exp's at
// once, MTE2 is not idle in between.
// CHECK-LABEL: func.func @independent
func.func @independent(%x: memref<64x1024xf32, "gm">, %e: memref<64x1024xf32, "gm">, %a: memref<4x3x16x16xf16, "gm">, %w: memref<5x4x16x16xf16, "gm"> {npu.constant = dense<0.5> : tensor<5x4x16x16xf16>}, %c: memref<5x3x16x16xf32, "gm">) {
  "ascend.exp"(%x, %e) : (memref<64x1024xf32, "gm">, memref<64x1024xf32, "gm">) -> ()
  // expected-remark @+2 {{matmul tiling}}
  // expected-remark @+1 {{npu-prefetch: not prefetched: this op reads nothing}}
  "ascend.matmul"(%a, %w, %c) : (memref<4x3x16x16xf16, "gm">, memref<5x4x16x16xf16, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  return
}

// -----

// The cast is the previous op (a location of its own) and leaves MTE2 idle
// 937 cycles; the exp before it leaves 2048 after its last load, where the
// cast's first load waits for the exp's result. That gap is taken first
// (the cast's loads follow it, so a chunk there delays none of its steps),
// the rest of the first slot goes into the cast's tail.
// CHECK-LABEL: func.func @two_back
// CHECK:       cce.vexp
// CHECK:       "cce.copy_gm_to_l1"(%{{.*}}, %{{.*}}) {{{.*}}n_burst = 64
// CHECK:       cce.vconv
// CHECK:       "cce.copy_gm_to_l1"(%{{.*}}, %{{.*}}) {{{.*}}n_burst = 16
// CHECK:       scf.for
func.func @two_back(%x: memref<64x3x16x16xf32, "gm">, %e: memref<64x3x16x16xf32, "gm">, %a: memref<64x3x16x16xf16, "gm">, %w: memref<80x64x16x16xf16, "gm"> {npu.constant = dense<0.5> : tensor<80x64x16x16xf16>}, %c: memref<80x3x16x16xf32, "gm">) {
  "ascend.exp"(%x, %e) : (memref<64x3x16x16xf32, "gm">, memref<64x3x16x16xf32, "gm">) -> ()
  "ascend.cast"(%e, %a) {round_mode = "rint"} : (memref<64x3x16x16xf32, "gm">, memref<64x3x16x16xf16, "gm">) -> ()
  // expected-remark @+2 {{matmul tiling}}
  // expected-remark @+1 {{npu-prefetch: 1 of 2 weight slot(s) (163840 bytes, 2 copies) loaded after the op before 'line 142' (its last load), after 'line 142' step #2 (of 4), ahead of this op's first wait (estimated MTE2 idle gaps from 'line 142' on: 0, 937 cycles, after the op before it 2048; a chunk of 163840 bytes takes 2560)}}
  "ascend.matmul"(%a, %w, %c) {npu.options = {"l1-chunk" = 64 : i64}} : (memref<64x3x16x16xf16, "gm">, memref<80x64x16x16xf16, "gm">, memref<80x3x16x16xf32, "gm">) -> ()
  return
}

// -----

// The previous op ('prev': exp, add, cast) starts with loads that wait for
// nothing (the exp of %y): MTE2 runs them at once and still idles after
// the first op's last load until the add reads %e. That gap (2048 less
// the exp's 384 cycles of loads) takes 52 of the first slot's 80 bursts, the add's
// tail the other 28.
// CHECK-LABEL: func.func @free_loads_first
// CHECK:       cce.vexp
// CHECK:       "cce.copy_gm_to_l1"(%{{.*}}, %{{.*}}) {{{.*}}n_burst = 52
// CHECK:       cce.vexp
// CHECK:       cce.vadd
// CHECK:       "cce.copy_gm_to_l1"(%{{.*}}, %{{.*}}) {{{.*}}n_burst = 28
// CHECK:       scf.for
func.func @free_loads_first(%x: memref<64x3x16x16xf32, "gm">, %e: memref<64x3x16x16xf32, "gm">, %y: memref<8x3x16x16xf32, "gm">, %t: memref<8x3x16x16xf32, "gm">, %s: memref<64x3x16x16xf32, "gm">, %a: memref<64x3x16x16xf16, "gm">, %w: memref<80x64x16x16xf16, "gm"> {npu.constant = dense<0.5> : tensor<80x64x16x16xf16>}, %c: memref<80x3x16x16xf32, "gm">) {
  "ascend.exp"(%x, %e) : (memref<64x3x16x16xf32, "gm">, memref<64x3x16x16xf32, "gm">) -> ()
  "ascend.exp"(%y, %t) : (memref<8x3x16x16xf32, "gm">, memref<8x3x16x16xf32, "gm">) -> () loc("prev")
  "ascend.add"(%e, %e, %s) : (memref<64x3x16x16xf32, "gm">, memref<64x3x16x16xf32, "gm">, memref<64x3x16x16xf32, "gm">) -> () loc("prev")
  "ascend.cast"(%s, %a) {round_mode = "rint"} : (memref<64x3x16x16xf32, "gm">, memref<64x3x16x16xf16, "gm">) -> () loc("prev")
  // expected-remark @+2 {{matmul tiling}}
  // expected-remark @+1 {{npu-prefetch: 1 of 2 weight slot(s) (163840 bytes, 2 copies) loaded after the op before 'prev' (its last load), after 'prev' step #5 (of 7), ahead of this op's first wait (estimated MTE2 idle gaps from 'prev' on: 0, 937 cycles, after the op before it 1664; a chunk of 163840 bytes takes 2560)}}
  "ascend.matmul"(%a, %w, %c) {npu.options = {"l1-chunk" = 64 : i64}} : (memref<64x3x16x16xf16, "gm">, memref<80x64x16x16xf16, "gm">, memref<80x3x16x16xf32, "gm">) -> ()
  return
}

// -----

// A resident A strip (128 x 3072, copied before the loop) and the loop's
// two B slots take 983040 of L1's 1048576 bytes: the bound of the ops
// tied to the loop by the strip already counts the slots, so both are
// prefetched (their first copy after the exp, the rest in the cast's
// tail), before the strip's copy.
// CHECK-LABEL: func.func @resident_strip
// CHECK:       cce.vexp
// CHECK:       "cce.copy_gm_to_l1"(%{{.*}}, %{{.*}}) {{{.*}}n_burst = 2
// CHECK:       "cce.copy_gm_to_l1"(%{{.*}}, %{{.*}}) {{{.*}}n_burst = 1
// CHECK:       cce.vconv
// CHECK:       "cce.copy_gm_to_l1"(%{{.*}}, %{{.*}}) {{{.*}}n_burst = 1
// CHECK:       "cce.copy_gm_to_l1"(%{{.*}}, %{{.*}}) {{{.*}}n_burst = 192
// CHECK:       scf.for
func.func @resident_strip(%x: memref<192x8x16x16xf32, "gm">, %e: memref<192x8x16x16xf32, "gm">, %a: memref<192x8x16x16xf16, "gm">, %w: memref<4x192x16x16xf16, "gm"> {npu.constant = dense<0.5> : tensor<4x192x16x16xf16>}, %c: memref<4x8x16x16xf32, "gm">) {
  "ascend.exp"(%x, %e) : (memref<192x8x16x16xf32, "gm">, memref<192x8x16x16xf32, "gm">) -> ()
  "ascend.cast"(%e, %a) {round_mode = "rint"} : (memref<192x8x16x16xf32, "gm">, memref<192x8x16x16xf16, "gm">) -> ()
  // expected-remark @+2 {{matmul tiling: strategy=os tiles (m=128, n=256, k=32) with the A row strip resident in L1}}
  // expected-remark @+1 {{npu-prefetch: 2 of 2 weight slot(s) (196608 bytes, 3 copies) loaded after the op before 'line 191' (its last load), after 'line 191' step #2 (of 4), ahead of this op's first wait (estimated MTE2 idle gaps from 'line 191' on: 0, 1017, 0 cycles, after the op before it 2048; a chunk of 98304 bytes takes 1536)}}
  "ascend.matmul"(%a, %w, %c) {npu.options = {"k" = 32 : i64, "l1-chunk" = 1536 : i64}} : (memref<192x8x16x16xf16, "gm">, memref<4x192x16x16xf16, "gm">, memref<4x8x16x16xf32, "gm">) -> ()
  return
}

// -----

// The op before the previous one is a matmul: after its last load come
// its last mads (M) and its drain, whose pieces overlap on V and MTE3:
// 3584 cycles, the mads' and the busier drain pipe's work (the sum of
// its pipes' work would be 5184, the busiest alone 2048). Both slots of
// the second matmul's weight (k fixed at 384 for these slots) load there (m fixed: one C tile).
// CHECK-LABEL: func.func @matmul_before
// CHECK:       scf.for
// CHECK:       "cce.copy_gm_to_l1"(%{{.*}}, %{{.*}}) {{{.*}}n_burst = 24
// CHECK:       "cce.copy_gm_to_l1"(%{{.*}}, %{{.*}}) {{{.*}}n_burst = 24
// CHECK:       cce.vconv
func.func @matmul_before(%a: memref<48x8x16x16xf16, "gm">, %w1: memref<16x48x16x16xf16, "gm"> {npu.constant = dense<0.5> : tensor<16x48x16x16xf16>}, %c1: memref<16x8x16x16xf32, "gm">, %a2: memref<16x8x16x16xf16, "gm">, %w2: memref<48x16x16x16xf16, "gm"> {npu.constant = dense<0.5> : tensor<48x16x16x16xf16>}, %c2: memref<48x8x16x16xf32, "gm">) {
  // expected-remark @+2 {{matmul tiling}}
  // expected-remark @+1 {{npu-prefetch: not prefetched: no earlier op}}
  "ascend.matmul"(%a, %w1, %c1) {npu.options = {"m" = 128 : i64, "l1-chunk" = 192 : i64}} : (memref<48x8x16x16xf16, "gm">, memref<16x48x16x16xf16, "gm">, memref<16x8x16x16xf32, "gm">) -> ()
  "ascend.cast"(%c1, %a2) {round_mode = "rint"} : (memref<16x8x16x16xf32, "gm">, memref<16x8x16x16xf16, "gm">) -> ()
  // expected-remark @+2 {{matmul tiling}}
  // expected-remark @+1 {{npu-prefetch: 2 of 2 weight slot(s) (196608 bytes, 2 copies) loaded after the op before 'line 214' (its last load), ahead of this op's first wait (estimated MTE2 idle gaps from 'line 214' on: 0, 852, 0 cycles, after the op before it 3584; a chunk of 98304 bytes takes 1536)}}
  "ascend.matmul"(%a2, %w2, %c2) {npu.options = {"k" = 384 : i64, "l1-chunk" = 128 : i64}} : (memref<16x8x16x16xf16, "gm">, memref<48x16x16x16xf16, "gm">, memref<48x8x16x16xf32, "gm">) -> ()
  return
}

// -----

// As @two_back with chunks of 128 reduction elements: the first slot's
// load (5120 cycles) exceeds the gaps (2048 after the exp, 937 in the
// cast's tail), but more than half of it fits: 32 + 15 of its 80 bursts
// load there, the other 33 in the loop's first iteration (the else branch
// of the guard, in place of the slot's copy). The 15 go after the cast's
// vconv that reads its last load, not right after that load: there the
// flag releasing the vconv would sink past them (npu-insert-sync).
// CHECK-LABEL: func.func @partial_slot
// CHECK:       cce.vexp
// CHECK:       "cce.copy_gm_to_l1"(%{{.*}}, %{{.*}}) {{{.*}}n_burst = 32
// CHECK:       {{^    }}"cce.copy_gm_to_ub"
// CHECK:       {{^    }}"cce.vconv"
// CHECK:       "cce.copy_gm_to_l1"(%{{.*}}, %{{.*}}) {{{.*}}n_burst = 15
// CHECK:       {{^    }}"cce.copy_ub_to_gm"
// CHECK:       scf.for
// CHECK:       scf.if
// CHECK:       } else {
// CHECK-NEXT:    "cce.copy_gm_to_l1"
// CHECK:         "cce.copy_gm_to_l1"(%{{.*}}, %{{.*}}) {{{.*}}n_burst = 33
func.func @partial_slot(%x: memref<64x3x16x16xf32, "gm">, %e: memref<64x3x16x16xf32, "gm">, %a: memref<64x3x16x16xf16, "gm">, %w: memref<80x64x16x16xf16, "gm"> {npu.constant = dense<0.5> : tensor<80x64x16x16xf16>}, %c: memref<80x3x16x16xf32, "gm">) {
  "ascend.exp"(%x, %e) : (memref<64x3x16x16xf32, "gm">, memref<64x3x16x16xf32, "gm">) -> ()
  "ascend.cast"(%e, %a) {round_mode = "rint"} : (memref<64x3x16x16xf32, "gm">, memref<64x3x16x16xf16, "gm">) -> ()
  // expected-remark @+2 {{matmul tiling}}
  // expected-remark @+1 {{npu-prefetch: 1 of 2 weight slot(s) (327680 bytes, 2 copies) loaded after the op before 'line 244' (its last load), after 'line 244' step #2 (of 4) (of the last, 33 bursts in the loop's first iteration), ahead of this op's first wait (estimated MTE2 idle gaps from 'line 244' on: 0, 937 cycles, after the op before it 2048; a chunk of 327680 bytes takes 5120)}}
  "ascend.matmul"(%a, %w, %c) {npu.options = {"l1-chunk" = 128 : i64}} : (memref<64x3x16x16xf16, "gm">, memref<80x64x16x16xf16, "gm">, memref<80x3x16x16xf32, "gm">) -> ()
  return
}
