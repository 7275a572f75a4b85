// RUN: npu-opt %s --split-input-file -p 'builtin.module(npu-hoist-casts,npu-fuse-horizontal,npu-fuse-attention,npu-fuse,npu-fuse-attention-projection)' -o %t 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: FileCheck %s --input-file=%t
// RUN: npu-opt %s --split-input-file -p 'builtin.module(npu-hoist-casts,npu-fuse-horizontal,npu-fuse-attention,npu-fuse,npu-fuse-attention-projection,npu-lower-attention)' -o %t.k 2>/dev/null
// RUN: FileCheck %s --check-prefix=KERNEL --input-file=%t.k
// RUN: FileCheck %s --check-prefix=SCOPE --input-file=%t.k

// BERT's self-attention as npu-fuse-horizontal and npu-hoist-casts leave it
// (test/python/fusion/attention_patterns.py `qkv_attention`, 2 heads, seq 40, head
// dim 32, hidden 64, host-constant W and bias): x . W + b, rounded to f16
// and stored row-major as Q, K, V (npu-fuse's epilogue), then split into
// heads. The attention group absorbs the epilogue (with the head
// transposes and fractalizes, which npu-fuse-attention left out at a seq of
// partial 16-row blocks): the kernel computes each head's Q, K, V itself.
// REMARK: remark: attention computes its Q/K/V projection (48x64x192 matmul and its epilogue) head by head on chip: X resident in L1 for all heads; W's columns of a head read 1 time(s) a head in chunks of 64; C pieces of 48 x 32 in 3 L0C slot(s)
// REMARK-SAME: Q, K, V never reach GM
// The same, with Q also read by another op: it must reach GM, the
// projection keeps its own kernel.
// REMARK: remark: attention not fused with its Q/K/V projection: Q, K or V is used besides the attention (it would have to reach GM)

// The epilogue region (matmul, bias add, cast, row-major stores) and the
// prologue now sit inside the attention region, which records the plan.
// CHECK-LABEL: func.func @qkv_attention
// CHECK-NOT:     "ascend.
// CHECK:         scf.execute_region {
// CHECK:           scf.execute_region {
// CHECK:             "ascend.matmul"
// CHECK-NEXT:        "ascend.add"
// CHECK-NEXT:        "ascend.cast"
// CHECK-COUNT-3:     "ascend.defractalize"
// CHECK:           } {npu.epilogue = {compute = "f16"
// CHECK:           "ascend.transpose"
// CHECK:           "ascend.batch_matmul"
// CHECK:         } {npu.attention = {{{.*}}}, npu.projection = {c_slots = 3 : i64, chunk = 4 : i64, cols = 2 : i64, rows = 3 : i64, scores_slots = {{[12]}} : i64, sub = 4 : i64, w_slots = {{[0-9]+}} : i64, x_resident = true}}
// CHECK-NOT:     "ascend.
// CHECK-LABEL: func.func @q_used_twice
// CHECK:         scf.execute_region {
// CHECK-NEXT:      memref.alloc
// CHECK:           "ascend.matmul"
// CHECK:         } {npu.epilogue = {compute = "f16"
// CHECK:         "ascend.muls"
// CHECK:         } {npu.attention = {{{[^}]*}}}}{{$}}

// The kernel: the bias row read once, X copied to L1 once for all heads;
// per job (2 column blocks of one of Q, K, V of a head) its W chunk to L1,
// the L0 sub-steps and a mad into its L0C piece, then the piece drained to
// UB rounded to f16 by the move, the bias added (a broadcast row: source
// strides 0), K's and V's rows past the seq zeroed, and the piece copied
// UB -> L1 into the head's tile, which Q.K^T then reads: no Q, K, V rows
// come from GM.
// KERNEL-LABEL: func.func @qkv_attention
// KERNEL-NOT:   memref<40x64xf16, "gm">
// KERNEL:       "cce.copy_gm_to_ub"{{.*}}n_burst = 12
// KERNEL:       "cce.copy_gm_to_l1"(%arg0, {{.*}}burst_len = 192 : i64, dst_gap = 0 : i64, n_burst = 1
// KERNEL:       "cce.copy_gm_to_l1"{{.*}}burst_len = 64 : i64, dst_gap = 0 : i64, n_burst = 2
// KERNEL:       "cce.load_l1_to_l0a"
// KERNEL:       "cce.load_l1_to_l0b"
// KERNEL:       "cce.mad"{{.*}}accumulate = false, k = 32 : i64, m = 48 : i64, n = 64 : i64
// KERNEL:       "cce.copy_l0c_to_ub"{{.*}}convert = "f32_to_f16"
// KERNEL:       "cce.vadd"{{.*}}src1_blk_stride = 0 : i64
// KERNEL:       "cce.copy_ub_to_l1"
// KERNEL:       "cce.copy_l0c_to_ub"{{.*}}convert = "f32_to_f16"
// KERNEL:       "cce.vadd"
// KERNEL:       "cce.vdup"{{.*}}scalar = 0.000000e+00
// KERNEL:       "cce.copy_ub_to_l1"
// KERNEL:       "cce.mad"{{.*}}accumulate = false, k = 48 : i64, m = 48 : i64, n = 32 : i64
// KERNEL-NOT:   memref<40x64xf16, "gm">
// With one tile a head, a head's jobs share one scope (npu-lower-attention
// head-scope, the default): their L0A sub-step slots go round across the
// jobs, allocated once in the scope (one sub-step a job here: job 1 takes
// the second slot, job 2 the first again), so a job's first sub-tiles load
// while the job before runs its last mad; a scope a job
// (`head-scope=false`) allocates its own.
// SCOPE-LABEL: func.func @qkv_attention
// SCOPE:       "cce.copy_gm_to_l1"(%arg0, {{.*}}n_burst = 1
// SCOPE-NEXT:  arith.constant
// SCOPE-NEXT:  arith.constant
// SCOPE-NEXT:  arith.constant
// SCOPE-NEXT:  scf.for
// SCOPE-NEXT:  %[[A0:[a-z_0-9]+]] = memref.alloc() : memref<12x16x16xf16, "l0a">
// SCOPE-NEXT:  %[[A1:[a-z_0-9]+]] = memref.alloc() : memref<12x16x16xf16, "l0a">
// SCOPE:       "cce.mad"(%[[A0]], {{.*}}accumulate = false, k = 32 : i64, m = 48
// SCOPE-NOT:   memref.alloc() : memref<12x16x16xf16, "l0a">
// SCOPE:       "cce.mad"(%[[A1]], {{.*}}accumulate = false, k = 32 : i64, m = 48
// SCOPE-NOT:   memref.alloc() : memref<12x16x16xf16, "l0a">
// SCOPE:       "cce.mad"(%[[A0]], {{.*}}accumulate = false, k = 32 : i64, m = 48
// KERNEL-LABEL: func.func @q_used_twice
// KERNEL:       "ascend.matmul"

func.func @qkv_attention(%x: memref<4x3x16x16xf16, "gm">, %w: memref<12x4x16x16xf16, "gm"> {npu.constant = dense<1.250000e-01> : tensor<12x4x16x16xf16>}, %b: memref<12x3x16x16xf32, "gm"> {npu.constant = dense<5.000000e-01> : tensor<12x3x16x16xf32>}, %y: memref<1x40x2x32xf32, "gm">) {
  %c0 = arith.constant 0 : index
  %t1 = memref.alloc() : memref<12x3x16x16xf32, "gm">
  "ascend.matmul"(%x, %w, %t1) : (memref<4x3x16x16xf16, "gm">, memref<12x4x16x16xf16, "gm">, memref<12x3x16x16xf32, "gm">) -> ()
  %t2 = memref.alloc() : memref<12x3x16x16xf32, "gm">
  "ascend.add"(%t1, %b, %t2) : (memref<12x3x16x16xf32, "gm">, memref<12x3x16x16xf32, "gm">, memref<12x3x16x16xf32, "gm">) -> ()
  %v4 = memref.alloc() : memref<18432xi8, "gm">
  %v5 = memref.view %v4[%c0][] : memref<18432xi8, "gm"> to memref<12x3x16x16xf16, "gm">
  "ascend.cast"(%t2, %v5) {round_mode = "rint"} : (memref<12x3x16x16xf32, "gm">, memref<12x3x16x16xf16, "gm">) -> ()
  %v8 = arith.constant 0 : index
  %v9 = memref.view %v4[%v8][] : memref<18432xi8, "gm"> to memref<4x3x16x16xf16, "gm">
  %t3 = memref.alloc() : memref<40x64xf16, "gm">
  "ascend.defractalize"(%v9, %t3) : (memref<4x3x16x16xf16, "gm">, memref<40x64xf16, "gm">) -> ()
  %v12 = memref.expand_shape %t3 [[0, 1], [2, 3]] output_shape [1, 40, 2, 32] : memref<40x64xf16, "gm"> into memref<1x40x2x32xf16, "gm">
  %t4 = memref.alloc() : memref<1x2x40x32xf16, "gm">
  "ascend.transpose"(%v12, %t4) {permutation = array<i64: 0, 2, 1, 3>} : (memref<1x40x2x32xf16, "gm">, memref<1x2x40x32xf16, "gm">) -> ()
  %v15 = memref.collapse_shape %t4 [[0, 1], [2], [3]] : memref<1x2x40x32xf16, "gm"> into memref<2x40x32xf16, "gm">
  %t5 = memref.alloc() : memref<2x2x3x16x16xf16, "gm">
  "ascend.fractalize"(%v15, %t5) : (memref<2x40x32xf16, "gm">, memref<2x2x3x16x16xf16, "gm">) -> ()
  %v18 = arith.constant 6144 : index
  %v19 = memref.view %v4[%v18][] : memref<18432xi8, "gm"> to memref<4x3x16x16xf16, "gm">
  %t6 = memref.alloc() : memref<40x64xf16, "gm">
  "ascend.defractalize"(%v19, %t6) : (memref<4x3x16x16xf16, "gm">, memref<40x64xf16, "gm">) -> ()
  %v22 = memref.expand_shape %t6 [[0, 1], [2, 3]] output_shape [1, 40, 2, 32] : memref<40x64xf16, "gm"> into memref<1x40x2x32xf16, "gm">
  %t7 = memref.alloc() : memref<1x2x32x40xf16, "gm">
  "ascend.transpose"(%v22, %t7) {permutation = array<i64: 0, 2, 3, 1>} : (memref<1x40x2x32xf16, "gm">, memref<1x2x32x40xf16, "gm">) -> ()
  %v25 = memref.collapse_shape %t7 [[0, 1], [2], [3]] : memref<1x2x32x40xf16, "gm"> into memref<2x32x40xf16, "gm">
  %t8 = memref.alloc() : memref<2x3x2x16x16xf16, "gm">
  "ascend.fractalize"(%v25, %t8) : (memref<2x32x40xf16, "gm">, memref<2x3x2x16x16xf16, "gm">) -> ()
  %v28 = arith.constant 12288 : index
  %v29 = memref.view %v4[%v28][] : memref<18432xi8, "gm"> to memref<4x3x16x16xf16, "gm">
  %t9 = memref.alloc() : memref<40x64xf16, "gm">
  "ascend.defractalize"(%v29, %t9) : (memref<4x3x16x16xf16, "gm">, memref<40x64xf16, "gm">) -> ()
  %v32 = memref.expand_shape %t9 [[0, 1], [2, 3]] output_shape [1, 40, 2, 32] : memref<40x64xf16, "gm"> into memref<1x40x2x32xf16, "gm">
  %t10 = memref.alloc() : memref<1x2x40x32xf16, "gm">
  "ascend.transpose"(%v32, %t10) {permutation = array<i64: 0, 2, 1, 3>} : (memref<1x40x2x32xf16, "gm">, memref<1x2x40x32xf16, "gm">) -> ()
  %v35 = memref.collapse_shape %t10 [[0, 1], [2], [3]] : memref<1x2x40x32xf16, "gm"> into memref<2x40x32xf16, "gm">
  %t11 = memref.alloc() : memref<2x2x3x16x16xf16, "gm">
  "ascend.fractalize"(%v35, %t11) : (memref<2x40x32xf16, "gm">, memref<2x2x3x16x16xf16, "gm">) -> ()
  %t12 = memref.alloc() : memref<2x3x3x16x16xf32, "gm">
  "ascend.batch_matmul"(%t5, %t8, %t12) : (memref<2x2x3x16x16xf16, "gm">, memref<2x3x2x16x16xf16, "gm">, memref<2x3x3x16x16xf32, "gm">) -> ()
  %t13 = memref.alloc() : memref<2x40x40xf32, "gm">
  "ascend.defractalize"(%t12, %t13) : (memref<2x3x3x16x16xf32, "gm">, memref<2x40x40xf32, "gm">) -> ()
  %t14 = memref.alloc() : memref<2x40x40xf32, "gm">
  "ascend.muls"(%t13, %t14) {scalar = 1.76776695296636865e-01 : f64} : (memref<2x40x40xf32, "gm">, memref<2x40x40xf32, "gm">) -> ()
  %t15 = memref.alloc() : memref<2x40x1xf32, "gm">
  "ascend.reduce_max"(%t14, %t15) : (memref<2x40x40xf32, "gm">, memref<2x40x1xf32, "gm">) -> ()
  %t16 = memref.alloc() : memref<2x40x40xf32, "gm">
  "ascend.sub"(%t14, %t15, %t16) : (memref<2x40x40xf32, "gm">, memref<2x40x1xf32, "gm">, memref<2x40x40xf32, "gm">) -> ()
  %t17 = memref.alloc() : memref<2x40x40xf32, "gm">
  "ascend.exp"(%t16, %t17) : (memref<2x40x40xf32, "gm">, memref<2x40x40xf32, "gm">) -> ()
  %t18 = memref.alloc() : memref<2x40x1xf32, "gm">
  "ascend.reduce_sum"(%t17, %t18) : (memref<2x40x40xf32, "gm">, memref<2x40x1xf32, "gm">) -> ()
  %t19 = memref.alloc() : memref<2x40x1xf32, "gm">
  "ascend.reciprocal"(%t18, %t19) : (memref<2x40x1xf32, "gm">, memref<2x40x1xf32, "gm">) -> ()
  %t20 = memref.alloc() : memref<2x40x40xf32, "gm">
  "ascend.mul"(%t17, %t19, %t20) : (memref<2x40x40xf32, "gm">, memref<2x40x1xf32, "gm">, memref<2x40x40xf32, "gm">) -> ()
  %t21 = memref.alloc() : memref<2x40x40xf16, "gm">
  "ascend.cast"(%t20, %t21) {round_mode = "rint"} : (memref<2x40x40xf32, "gm">, memref<2x40x40xf16, "gm">) -> ()
  %t22 = memref.alloc() : memref<2x3x3x16x16xf16, "gm">
  "ascend.fractalize"(%t21, %t22) : (memref<2x40x40xf16, "gm">, memref<2x3x3x16x16xf16, "gm">) -> ()
  %t23 = memref.alloc() : memref<2x2x3x16x16xf32, "gm">
  "ascend.batch_matmul"(%t22, %t11, %t23) : (memref<2x3x3x16x16xf16, "gm">, memref<2x2x3x16x16xf16, "gm">, memref<2x2x3x16x16xf32, "gm">) -> ()
  %t24 = memref.alloc() : memref<2x40x32xf32, "gm">
  "ascend.defractalize"(%t23, %t24) : (memref<2x2x3x16x16xf32, "gm">, memref<2x40x32xf32, "gm">) -> ()
  %v64 = memref.expand_shape %t24 [[0, 1], [2], [3]] output_shape [1, 2, 40, 32] : memref<2x40x32xf32, "gm"> into memref<1x2x40x32xf32, "gm">
  "ascend.transpose"(%v64, %y) {permutation = array<i64: 0, 2, 1, 3>} : (memref<1x2x40x32xf32, "gm">, memref<1x40x2x32xf32, "gm">) -> ()
  return
}

// -----

func.func @q_used_twice(%x: memref<4x3x16x16xf16, "gm">, %w: memref<12x4x16x16xf16, "gm"> {npu.constant = dense<1.250000e-01> : tensor<12x4x16x16xf16>}, %b: memref<12x3x16x16xf32, "gm"> {npu.constant = dense<5.000000e-01> : tensor<12x3x16x16xf32>}, %y: memref<1x40x2x32xf32, "gm">, %z: memref<40x64xf16, "gm">) {
  %c0 = arith.constant 0 : index
  %t1 = memref.alloc() : memref<12x3x16x16xf32, "gm">
  "ascend.matmul"(%x, %w, %t1) : (memref<4x3x16x16xf16, "gm">, memref<12x4x16x16xf16, "gm">, memref<12x3x16x16xf32, "gm">) -> ()
  %t2 = memref.alloc() : memref<12x3x16x16xf32, "gm">
  "ascend.add"(%t1, %b, %t2) : (memref<12x3x16x16xf32, "gm">, memref<12x3x16x16xf32, "gm">, memref<12x3x16x16xf32, "gm">) -> ()
  %v4 = memref.alloc() : memref<18432xi8, "gm">
  %v5 = memref.view %v4[%c0][] : memref<18432xi8, "gm"> to memref<12x3x16x16xf16, "gm">
  "ascend.cast"(%t2, %v5) {round_mode = "rint"} : (memref<12x3x16x16xf32, "gm">, memref<12x3x16x16xf16, "gm">) -> ()
  %v8 = arith.constant 0 : index
  %v9 = memref.view %v4[%v8][] : memref<18432xi8, "gm"> to memref<4x3x16x16xf16, "gm">
  %t3 = memref.alloc() : memref<40x64xf16, "gm">
  "ascend.defractalize"(%v9, %t3) : (memref<4x3x16x16xf16, "gm">, memref<40x64xf16, "gm">) -> ()
  %v12 = memref.expand_shape %t3 [[0, 1], [2, 3]] output_shape [1, 40, 2, 32] : memref<40x64xf16, "gm"> into memref<1x40x2x32xf16, "gm">
  %t4 = memref.alloc() : memref<1x2x40x32xf16, "gm">
  "ascend.transpose"(%v12, %t4) {permutation = array<i64: 0, 2, 1, 3>} : (memref<1x40x2x32xf16, "gm">, memref<1x2x40x32xf16, "gm">) -> ()
  %v15 = memref.collapse_shape %t4 [[0, 1], [2], [3]] : memref<1x2x40x32xf16, "gm"> into memref<2x40x32xf16, "gm">
  %t5 = memref.alloc() : memref<2x2x3x16x16xf16, "gm">
  "ascend.fractalize"(%v15, %t5) : (memref<2x40x32xf16, "gm">, memref<2x2x3x16x16xf16, "gm">) -> ()
  %v18 = arith.constant 6144 : index
  %v19 = memref.view %v4[%v18][] : memref<18432xi8, "gm"> to memref<4x3x16x16xf16, "gm">
  %t6 = memref.alloc() : memref<40x64xf16, "gm">
  "ascend.defractalize"(%v19, %t6) : (memref<4x3x16x16xf16, "gm">, memref<40x64xf16, "gm">) -> ()
  %v22 = memref.expand_shape %t6 [[0, 1], [2, 3]] output_shape [1, 40, 2, 32] : memref<40x64xf16, "gm"> into memref<1x40x2x32xf16, "gm">
  %t7 = memref.alloc() : memref<1x2x32x40xf16, "gm">
  "ascend.transpose"(%v22, %t7) {permutation = array<i64: 0, 2, 3, 1>} : (memref<1x40x2x32xf16, "gm">, memref<1x2x32x40xf16, "gm">) -> ()
  %v25 = memref.collapse_shape %t7 [[0, 1], [2], [3]] : memref<1x2x32x40xf16, "gm"> into memref<2x32x40xf16, "gm">
  %t8 = memref.alloc() : memref<2x3x2x16x16xf16, "gm">
  "ascend.fractalize"(%v25, %t8) : (memref<2x32x40xf16, "gm">, memref<2x3x2x16x16xf16, "gm">) -> ()
  %v28 = arith.constant 12288 : index
  %v29 = memref.view %v4[%v28][] : memref<18432xi8, "gm"> to memref<4x3x16x16xf16, "gm">
  %t9 = memref.alloc() : memref<40x64xf16, "gm">
  "ascend.defractalize"(%v29, %t9) : (memref<4x3x16x16xf16, "gm">, memref<40x64xf16, "gm">) -> ()
  %v32 = memref.expand_shape %t9 [[0, 1], [2, 3]] output_shape [1, 40, 2, 32] : memref<40x64xf16, "gm"> into memref<1x40x2x32xf16, "gm">
  %t10 = memref.alloc() : memref<1x2x40x32xf16, "gm">
  "ascend.transpose"(%v32, %t10) {permutation = array<i64: 0, 2, 1, 3>} : (memref<1x40x2x32xf16, "gm">, memref<1x2x40x32xf16, "gm">) -> ()
  %v35 = memref.collapse_shape %t10 [[0, 1], [2], [3]] : memref<1x2x40x32xf16, "gm"> into memref<2x40x32xf16, "gm">
  %t11 = memref.alloc() : memref<2x2x3x16x16xf16, "gm">
  "ascend.fractalize"(%v35, %t11) : (memref<2x40x32xf16, "gm">, memref<2x2x3x16x16xf16, "gm">) -> ()
  %t12 = memref.alloc() : memref<2x3x3x16x16xf32, "gm">
  "ascend.batch_matmul"(%t5, %t8, %t12) : (memref<2x2x3x16x16xf16, "gm">, memref<2x3x2x16x16xf16, "gm">, memref<2x3x3x16x16xf32, "gm">) -> ()
  %t13 = memref.alloc() : memref<2x40x40xf32, "gm">
  "ascend.defractalize"(%t12, %t13) : (memref<2x3x3x16x16xf32, "gm">, memref<2x40x40xf32, "gm">) -> ()
  %t14 = memref.alloc() : memref<2x40x40xf32, "gm">
  "ascend.muls"(%t13, %t14) {scalar = 1.76776695296636865e-01 : f64} : (memref<2x40x40xf32, "gm">, memref<2x40x40xf32, "gm">) -> ()
  %t15 = memref.alloc() : memref<2x40x1xf32, "gm">
  "ascend.reduce_max"(%t14, %t15) : (memref<2x40x40xf32, "gm">, memref<2x40x1xf32, "gm">) -> ()
  %t16 = memref.alloc() : memref<2x40x40xf32, "gm">
  "ascend.sub"(%t14, %t15, %t16) : (memref<2x40x40xf32, "gm">, memref<2x40x1xf32, "gm">, memref<2x40x40xf32, "gm">) -> ()
  %t17 = memref.alloc() : memref<2x40x40xf32, "gm">
  "ascend.exp"(%t16, %t17) : (memref<2x40x40xf32, "gm">, memref<2x40x40xf32, "gm">) -> ()
  %t18 = memref.alloc() : memref<2x40x1xf32, "gm">
  "ascend.reduce_sum"(%t17, %t18) : (memref<2x40x40xf32, "gm">, memref<2x40x1xf32, "gm">) -> ()
  %t19 = memref.alloc() : memref<2x40x1xf32, "gm">
  "ascend.reciprocal"(%t18, %t19) : (memref<2x40x1xf32, "gm">, memref<2x40x1xf32, "gm">) -> ()
  %t20 = memref.alloc() : memref<2x40x40xf32, "gm">
  "ascend.mul"(%t17, %t19, %t20) : (memref<2x40x40xf32, "gm">, memref<2x40x1xf32, "gm">, memref<2x40x40xf32, "gm">) -> ()
  %t21 = memref.alloc() : memref<2x40x40xf16, "gm">
  "ascend.cast"(%t20, %t21) {round_mode = "rint"} : (memref<2x40x40xf32, "gm">, memref<2x40x40xf16, "gm">) -> ()
  %t22 = memref.alloc() : memref<2x3x3x16x16xf16, "gm">
  "ascend.fractalize"(%t21, %t22) : (memref<2x40x40xf16, "gm">, memref<2x3x3x16x16xf16, "gm">) -> ()
  %t23 = memref.alloc() : memref<2x2x3x16x16xf32, "gm">
  "ascend.batch_matmul"(%t22, %t11, %t23) : (memref<2x3x3x16x16xf16, "gm">, memref<2x2x3x16x16xf16, "gm">, memref<2x2x3x16x16xf32, "gm">) -> ()
  %t24 = memref.alloc() : memref<2x40x32xf32, "gm">
  "ascend.defractalize"(%t23, %t24) : (memref<2x2x3x16x16xf32, "gm">, memref<2x40x32xf32, "gm">) -> ()
  %v64 = memref.expand_shape %t24 [[0, 1], [2], [3]] output_shape [1, 2, 40, 32] : memref<2x40x32xf32, "gm"> into memref<1x2x40x32xf32, "gm">
  "ascend.transpose"(%v64, %y) {permutation = array<i64: 0, 2, 1, 3>} : (memref<1x2x40x32xf32, "gm">, memref<1x40x2x32xf32, "gm">) -> ()
  "ascend.muls"(%t3, %z) {scalar = 2.0 : f64} : (memref<40x64xf16, "gm">, memref<40x64xf16, "gm">) -> ()
  return
}
