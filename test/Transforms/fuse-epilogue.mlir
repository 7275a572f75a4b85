// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-fuse=ub-fraction=0.2 | FileCheck %s
// RUN: npu-opt %s --split-input-file --npu-fuse --npu-lower-matmul 2>/dev/null | FileCheck %s --check-prefix=KERNEL
// RUN: npu-opt %s --split-input-file --npu-fuse --npu-plan-gm 2>/dev/null | FileCheck %s --check-prefix=GM
// RUN: npu-opt %s --split-input-file --npu-fuse=row-major-stores=false 2>/dev/null | FileCheck %s --check-prefix=OFF

// Bias add, scaling and the cast to f16 join the matmul: its C and the two
// intermediates never reach GM (their allocs move into the group); per C
// tile the bias tile is read and the f16 result written, once.
// CHECK-LABEL: func.func @bias_scale_cast
// CHECK:       scf.execute_region {
// CHECK-COUNT-3: memref.alloc() : memref<5x3x16x16xf32, "gm">
// CHECK-NEXT:    "ascend.matmul"
// CHECK-NEXT:    "ascend.add"
// CHECK-NEXT:    "ascend.muls"
// CHECK-NEXT:    "ascend.cast"
// CHECK-NEXT:    scf.yield
// CHECK-NEXT:  } {npu.epilogue = {gm_bytes = 23040 : i64, ub_budget = 52428 : i64, ub_bytes_per_fractal = 2048 : i64, unfused_gm_bytes = 115200 : i64}}
// CHECK-NEXT:  return
// The drain of each C tile: L0C -> UB, the bias tile GM -> UB, the steps in
// UB (the add over the accumulator in place), one store of the f16 result;
// no GM temporaries are left.
// The group's own tensors never reach global memory, so npu-plan-gm gives them no
// workspace (npu-lower-matmul erases their allocs).
// GM-LABEL: func.func @bias_scale_cast
// GM-NOT:   npu.workspace
// GM:       scf.execute_region {
// GM-COUNT-3: memref.alloc() : memref<5x3x16x16xf32, "gm">
// GM-NOT:   memref.view
// GM:       return
// KERNEL-LABEL: func.func @bias_scale_cast
// KERNEL-NOT:   memref.alloc() : memref<{{.*}}"gm">
// KERNEL:       cce.mad
// KERNEL:       cce.copy_l0c_to_ub
// KERNEL-NEXT:  memref.alloc() : memref<5x3x16x16xf32, "ub">
// KERNEL-NEXT:  memref.subview
// KERNEL-NEXT:  cce.copy_gm_to_ub
// KERNEL:       cce.vadd
// KERNEL:       cce.vmuls
// KERNEL:       memref.alloc() : memref<5x3x16x16xf16, "ub">
// KERNEL:       cce.vconv
// KERNEL-NOT:   cce.copy_
// KERNEL:       cce.copy_ub_to_gm
// KERNEL-NOT:   cce.copy_
// KERNEL:       return
func.func @bias_scale_cast(%a: memref<4x3x16x16xf16, "gm">, %b: memref<5x4x16x16xf16, "gm">, %bias: memref<5x3x16x16xf32, "gm">, %y: memref<5x3x16x16xf16, "gm">) {
  %c = memref.alloc() : memref<5x3x16x16xf32, "gm">
  // expected-remark @+1 {{matmul epilogue: 3 op(s) (add, muls, cast) applied to each C tile as it drains; computed in f32 (an f32 operand is loaded per tile and would need converting per tile): GM traffic 115200 -> 23040 bytes beyond A and B, 3 tensor(s) stay on chip; UB 2048 bytes per C fractal}}
  "ascend.matmul"(%a, %b, %c) : (memref<4x3x16x16xf16, "gm">, memref<5x4x16x16xf16, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  %h = memref.alloc() : memref<5x3x16x16xf32, "gm">
  "ascend.add"(%c, %bias, %h) : (memref<5x3x16x16xf32, "gm">, memref<5x3x16x16xf32, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  %s = memref.alloc() : memref<5x3x16x16xf32, "gm">
  "ascend.muls"(%h, %s) {scalar = 1.25e-01 : f64} : (memref<5x3x16x16xf32, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  "ascend.cast"(%s, %y) {round_mode = "rint"} : (memref<5x3x16x16xf32, "gm">, memref<5x3x16x16xf16, "gm">) -> ()
  return
}

// -----

// A host-constant bias whose rows all repeat (as the frontend broadcasts an
// ONNX bias) is read once, one row of 16 per column block, before the
// matmul's loops; the drain adds it with source strides 0 and loads nothing.
// With no GM loads per piece, the GELU joins although its vector work is
// more than this short reduction's own time (collapsed to one recipe).
// CHECK-LABEL: func.func @broadcast_bias_gelu
// CHECK:       scf.execute_region {
// CHECK:         "ascend.matmul"
// CHECK-NEXT:    "ascend.add"
// CHECK:         "ascend.mul"
// CHECK-NEXT:    scf.yield
// CHECK-NEXT:  } {npu.epilogue = {gm_bytes = 15680 : i64
// KERNEL-LABEL: func.func @broadcast_bias_gelu
// KERNEL:       memref.alloc() : memref<5x1x1x16xf32, "ub">
// KERNEL:       cce.copy_gm_to_ub{{.*}}burst_len = 2 : i64, dst_gap = 0 : i64, n_burst = 5 : i64, src_gap = 94 : i64
// KERNEL:       scf.for
// KERNEL:       cce.copy_l0c_to_ub
// KERNEL-NOT:   cce.copy_gm_to_ub
// KERNEL:       cce.vadd{{.*}}src1_blk_stride = 0 : i64, src1_rep_stride = 0 : i64
// KERNEL-NOT:   cce.copy_gm_to_ub
// KERNEL:       cce.vexp
// KERNEL-NOT:   cce.copy_gm_to_ub
// KERNEL:       cce.copy_ub_to_gm
// KERNEL:       return
func.func @broadcast_bias_gelu(%a: memref<4x3x16x16xf16, "gm">, %b: memref<5x4x16x16xf16, "gm">, %bias: memref<5x3x16x16xf32, "gm"> {npu.constant = dense<0.25> : tensor<5x3x16x16xf32>}, %y: memref<5x3x16x16xf32, "gm">) {
  %c = memref.alloc() : memref<5x3x16x16xf32, "gm">
  // expected-remark @+1 {{matmul epilogue: 6 op(s) (add, muls, erf, adds, muls, mul) applied to each C tile as it drains: GM traffic 230400 -> 15680 bytes beyond A and B}}
  "ascend.matmul"(%a, %b, %c) : (memref<4x3x16x16xf16, "gm">, memref<5x4x16x16xf16, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  %h = memref.alloc() : memref<5x3x16x16xf32, "gm">
  "ascend.add"(%c, %bias, %h) : (memref<5x3x16x16xf32, "gm">, memref<5x3x16x16xf32, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  %s = memref.alloc() : memref<5x3x16x16xf32, "gm">
  "ascend.muls"(%h, %s) {scalar = 0.70710678118654757 : f64} : (memref<5x3x16x16xf32, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  %e = memref.alloc() : memref<5x3x16x16xf32, "gm">
  "ascend.erf"(%s, %e) : (memref<5x3x16x16xf32, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  %p = memref.alloc() : memref<5x3x16x16xf32, "gm">
  "ascend.adds"(%e, %p) {scalar = 1.0 : f64} : (memref<5x3x16x16xf32, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  %q = memref.alloc() : memref<5x3x16x16xf32, "gm">
  "ascend.muls"(%p, %q) {scalar = 0.5 : f64} : (memref<5x3x16x16xf32, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  "ascend.mul"(%h, %q, %y) : (memref<5x3x16x16xf32, "gm">, memref<5x3x16x16xf32, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  return
}

// -----

// A defractalize of C joins as its row-major store (the fixpipe's ND
// store): C never reaches GM in Nz; each drained column block leaves as its
// 48 rows of 16 f32 (2 blocks a burst, 8 blocks to the next 80-wide row).
// CHECK-LABEL: func.func @row_major_store
// CHECK:       scf.execute_region {
// CHECK-NEXT:    memref.alloc() : memref<5x3x16x16xf32, "gm">
// CHECK-NEXT:    "ascend.matmul"
// CHECK-NEXT:    "ascend.defractalize"
// CHECK-NEXT:    scf.yield
// CHECK-NEXT:  } {npu.epilogue = {gm_bytes = 15360 : i64, ub_budget = 52428 : i64, ub_bytes_per_fractal = 1024 : i64, unfused_gm_bytes = 46080 : i64}}
// Turned off, the defractalize stays a kernel of its own.
// OFF-LABEL:   func.func @row_major_store
// OFF-NOT:     scf.execute_region
// OFF:         "ascend.matmul"
// OFF-NEXT:    "ascend.defractalize"
// KERNEL-LABEL: func.func @row_major_store
// KERNEL-NOT:   memref.alloc() : memref<{{.*}}"gm">
// KERNEL:       cce.copy_l0c_to_ub
// KERNEL-NOT:   cce.vnchwconv
// KERNEL-COUNT-5: "cce.copy_ub_to_gm"({{.*}}) {burst_len = 2 : i64, dst_gap = 8 : i64, n_burst = 48 : i64, src_gap = 0 : i64}
// KERNEL-NOT:   cce.copy_
// KERNEL:       return
func.func @row_major_store(%a: memref<4x3x16x16xf16, "gm">, %b: memref<5x4x16x16xf16, "gm">, %y: memref<48x80xf32, "gm">) {
  %c = memref.alloc() : memref<5x3x16x16xf32, "gm">
  // expected-remark @+1 {{matmul epilogue: 0 op(s) (row-major store) applied to each C tile as it drains: GM traffic 46080 -> 15360 bytes beyond A and B, 1 tensor(s) stay on chip; UB 1024 bytes per C fractal, 3072 per column block; 1 defractalize(s) absorbed: stored row-major as it drains, 240 bursts of 16 elements}}
  "ascend.matmul"(%a, %b, %c) : (memref<4x3x16x16xf16, "gm">, memref<5x4x16x16xf16, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  "ascend.defractalize"(%c, %y) : (memref<5x3x16x16xf32, "gm">, memref<48x80xf32, "gm">) -> ()
  return
}

// -----

// After a bias add, into a 45x72 matrix: the piece holding the last row
// block writes 45 rows, not 48 (scf.if on its position), and the last column
// block of each row 8 elements (one block, skipping the 8 padding columns).
// CHECK-LABEL: func.func @bias_odd_shape
// CHECK:       scf.execute_region {
// CHECK:         "ascend.matmul"
// CHECK-NEXT:    "ascend.add"
// CHECK-NEXT:    "ascend.defractalize"
// CHECK-NEXT:    scf.yield
// KERNEL-LABEL: func.func @bias_odd_shape
// KERNEL:       cce.vadd
// KERNEL:       scf.if
// KERNEL:       "cce.copy_ub_to_gm"({{.*}}) {burst_len = 2 : i64, dst_gap = 7 : i64, n_burst = 45 : i64, src_gap = 0 : i64}
// KERNEL:       "cce.copy_ub_to_gm"({{.*}}) {burst_len = 1 : i64, dst_gap = 8 : i64, n_burst = 45 : i64, src_gap = 1 : i64}
// KERNEL:       } else {
// KERNEL:       "cce.copy_ub_to_gm"({{.*}}) {burst_len = 2 : i64, dst_gap = 7 : i64, n_burst = 48 : i64, src_gap = 0 : i64}
// KERNEL:       "cce.copy_ub_to_gm"({{.*}}) {burst_len = 1 : i64, dst_gap = 8 : i64, n_burst = 48 : i64, src_gap = 1 : i64}
// KERNEL:       return
func.func @bias_odd_shape(%a: memref<4x3x16x16xf16, "gm">, %b: memref<5x4x16x16xf16, "gm">, %bias: memref<5x3x16x16xf32, "gm">, %y: memref<45x72xf32, "gm">) {
  %c = memref.alloc() : memref<5x3x16x16xf32, "gm">
  // expected-remark @+1 {{matmul epilogue: 1 op(s) (add, row-major store) applied to each C tile as it drains: GM traffic 89760 -> 28320 bytes beyond A and B, 2 tensor(s) stay on chip; UB 2048 bytes per C fractal, 6144 per column block; 1 defractalize(s) absorbed: stored row-major as it drains, 225 bursts of 16 elements}}
  "ascend.matmul"(%a, %b, %c) : (memref<4x3x16x16xf16, "gm">, memref<5x4x16x16xf16, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  %h = memref.alloc() : memref<5x3x16x16xf32, "gm">
  "ascend.add"(%c, %bias, %h) : (memref<5x3x16x16xf32, "gm">, memref<5x3x16x16xf32, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  "ascend.defractalize"(%h, %y) : (memref<5x3x16x16xf32, "gm">, memref<45x72xf32, "gm">) -> ()
  return
}

// -----

// Rows of 72 f16 (144 bytes) are not whole 32-byte blocks: a burst per row
// would run into the next row, so the defractalize stays and says why.
// CHECK-LABEL: func.func @rows_not_whole_blocks
// CHECK-NOT:   scf.execute_region
// CHECK:       "ascend.matmul"
// CHECK-NEXT:  "ascend.defractalize"
func.func @rows_not_whole_blocks(%a: memref<4x3x16x16xf16, "gm">, %b: memref<5x4x16x16xf16, "gm">, %y: memref<48x72xf16, "gm">) {
  %c = memref.alloc() : memref<5x3x16x16xf16, "gm">
  // expected-remark @+1 {{'ascend.matmul' without epilogue: consumers left out: 'ascend.defractalize': its rows of 72 f16 are not whole 32-byte blocks: a burst per row would run into the next row}}
  "ascend.matmul"(%a, %b, %c) : (memref<4x3x16x16xf16, "gm">, memref<5x4x16x16xf16, "gm">, memref<5x3x16x16xf16, "gm">) -> ()
  // expected-remark @+1 {{left unfused}}
  "ascend.defractalize"(%c, %y) : (memref<5x3x16x16xf16, "gm">, memref<48x72xf16, "gm">) -> ()
  return
}

// -----

// Q/K/V-like siblings: the defractalizes of the three column-block runs of
// one biased result join, each writing its own row-major tensor; a drained
// column block finds its sibling by comparing its index with the runs' ends.
// CHECK-LABEL: func.func @siblings
// CHECK:       %[[Q:.*]] = memref.alloc() : memref<48x32xf32, "gm">
// CHECK:       %[[K:.*]] = memref.alloc() : memref<48x32xf32, "gm">
// CHECK:       %[[V:.*]] = memref.alloc() : memref<48x32xf32, "gm">
// CHECK:       scf.execute_region {
// CHECK:         "ascend.matmul"
// CHECK-NEXT:    "ascend.add"
// CHECK-NEXT:    "ascend.defractalize"(%{{.*}}, %[[Q]])
// CHECK-NEXT:    "ascend.defractalize"(%{{.*}}, %[[K]])
// CHECK-NEXT:    "ascend.defractalize"(%{{.*}}, %[[V]])
// CHECK-NEXT:    scf.yield
// CHECK:       "ascend.add"(%[[Q]], %[[K]]
// KERNEL-LABEL: func.func @siblings
// KERNEL:       cce.vadd
// KERNEL:       arith.cmpi ult, %{{.*}}, %c2
// KERNEL-NEXT:  scf.if
// KERNEL:       "cce.copy_ub_to_gm"({{.*}}) {burst_len = 2 : i64, dst_gap = 2 : i64, n_burst = 48 : i64, src_gap = 0 : i64}
// KERNEL:       } else {
// KERNEL:       arith.cmpi ult, %{{.*}}, %c4
func.func @siblings(%a: memref<4x3x16x16xf16, "gm">, %b: memref<6x4x16x16xf16, "gm">, %bias: memref<6x3x16x16xf32, "gm">, %z: memref<48x32xf32, "gm">) {
  %c0 = arith.constant 0 : index
  %c6144 = arith.constant 6144 : index
  %c12288 = arith.constant 12288 : index
  %cbuf = memref.alloc() : memref<18432xi8, "gm">
  %c = memref.view %cbuf[%c0][] : memref<18432xi8, "gm"> to memref<6x3x16x16xf32, "gm">
  %hbuf = memref.alloc() : memref<18432xi8, "gm">
  %h = memref.view %hbuf[%c0][] : memref<18432xi8, "gm"> to memref<6x3x16x16xf32, "gm">
  %h0 = memref.view %hbuf[%c0][] : memref<18432xi8, "gm"> to memref<2x3x16x16xf32, "gm">
  %h1 = memref.view %hbuf[%c6144][] : memref<18432xi8, "gm"> to memref<2x3x16x16xf32, "gm">
  %h2 = memref.view %hbuf[%c12288][] : memref<18432xi8, "gm"> to memref<2x3x16x16xf32, "gm">
  %q = memref.alloc() : memref<48x32xf32, "gm">
  %k = memref.alloc() : memref<48x32xf32, "gm">
  %v = memref.alloc() : memref<48x32xf32, "gm">
  // expected-remark @+1 {{3 defractalize(s) absorbed: stored row-major as it drains, 288 bursts of 16 elements}}
  "ascend.matmul"(%a, %b, %c) : (memref<4x3x16x16xf16, "gm">, memref<6x4x16x16xf16, "gm">, memref<6x3x16x16xf32, "gm">) -> ()
  "ascend.add"(%c, %bias, %h) : (memref<6x3x16x16xf32, "gm">, memref<6x3x16x16xf32, "gm">, memref<6x3x16x16xf32, "gm">) -> ()
  "ascend.defractalize"(%h0, %q) : (memref<2x3x16x16xf32, "gm">, memref<48x32xf32, "gm">) -> ()
  "ascend.defractalize"(%h1, %k) : (memref<2x3x16x16xf32, "gm">, memref<48x32xf32, "gm">) -> ()
  "ascend.defractalize"(%h2, %v) : (memref<2x3x16x16xf32, "gm">, memref<48x32xf32, "gm">) -> ()
  %t = memref.alloc() : memref<48x32xf32, "gm">
  // expected-remark @+1 {{fused 2 ops (add, add)}}
  "ascend.add"(%q, %k, %t) : (memref<48x32xf32, "gm">, memref<48x32xf32, "gm">, memref<48x32xf32, "gm">) -> ()
  "ascend.add"(%t, %v, %z) : (memref<48x32xf32, "gm">, memref<48x32xf32, "gm">, memref<48x32xf32, "gm">) -> ()
  return
}

// -----

// C is also read outside the group: it leaves (stored per tile, its alloc
// stays outside) while the relu joins; a scalar tensor operand is refused.
// CHECK-LABEL: func.func @c_leaves
// CHECK:       %[[C:.*]] = memref.alloc() : memref<5x3x16x16xf32, "gm">
// CHECK-NEXT:  scf.execute_region {
// CHECK-NEXT:    "ascend.matmul"(%{{.*}}, %{{.*}}, %[[C]])
// CHECK-NEXT:    "ascend.relu"(%[[C]]
// CHECK-NEXT:    scf.yield
// CHECK:       "ascend.mul"(%[[C]]
// KERNEL-LABEL: func.func @c_leaves
// KERNEL:       cce.copy_l0c_to_ub
// KERNEL-NEXT:  memref.subview
// KERNEL-NEXT:  cce.copy_ub_to_gm
// KERNEL:       cce.vrelu
// KERNEL-NEXT:  memref.subview
// KERNEL-NEXT:  cce.copy_ub_to_gm
// KERNEL:       "ascend.mul"
func.func @c_leaves(%a: memref<4x3x16x16xf16, "gm">, %b: memref<5x4x16x16xf16, "gm">, %s: memref<1xf32, "gm">, %y: memref<5x3x16x16xf32, "gm">, %z: memref<5x3x16x16xf32, "gm">) {
  %c = memref.alloc() : memref<5x3x16x16xf32, "gm">
  // expected-remark @+1 {{matmul epilogue: 1 op(s) (relu) applied to each C tile as it drains: GM traffic 46080 -> 30720 bytes beyond A and B, 0 tensor(s) stay on chip; UB 1024 bytes per C fractal, 3072 per column block; model 1716 cycles (the matmul alone 1276, epilogue vector work 60); 'ascend.mul' left out: a scalar tensor operand}}
  "ascend.matmul"(%a, %b, %c) : (memref<4x3x16x16xf16, "gm">, memref<5x4x16x16xf16, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  "ascend.relu"(%c, %y) : (memref<5x3x16x16xf32, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  // expected-remark @+1 {{left unfused}}
  "ascend.mul"(%c, %s, %z) : (memref<5x3x16x16xf32, "gm">, memref<1xf32, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  return
}

// -----

// An epilogue whose one column block of the C tile would not fit the UB
// share (0.2 of UB here) is not formed: the erf needs three temporaries per element.
// CHECK-LABEL: func.func @too_big
// CHECK-NOT:   scf.execute_region
func.func @too_big(%a: memref<4x16x16x16xf16, "gm">, %b: memref<2x4x16x16xf16, "gm">, %y: memref<2x16x16x16xf32, "gm">) {
  %c = memref.alloc() : memref<2x16x16x16xf32, "gm">
  // expected-remark @+1 {{'ascend.matmul' without epilogue: consumers left out: 'ascend.erf': the epilogue would not fit UB: one column block of the C tile (16 fractals) needs 65536 bytes, the budget is 52428}}
  "ascend.matmul"(%a, %b, %c) : (memref<4x16x16x16xf16, "gm">, memref<2x4x16x16xf16, "gm">, memref<2x16x16x16xf32, "gm">) -> ()
  // expected-remark @+1 {{left unfused}}
  "ascend.erf"(%c, %y) : (memref<2x16x16x16xf32, "gm">, memref<2x16x16x16xf32, "gm">) -> ()
  return
}
