// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-fuse=ub-fraction=0.2 | FileCheck %s
// RUN: npu-opt %s --split-input-file --npu-fuse --npu-lower-matmul 2>/dev/null | FileCheck %s --check-prefix=KERNEL
// RUN: npu-opt %s --split-input-file --npu-fuse --npu-plan-gm 2>/dev/null | FileCheck %s --check-prefix=GM

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
  // expected-remark @+1 {{matmul epilogue: 3 op(s) (add, muls, cast) applied to each C tile as it drains: GM traffic 115200 -> 23040 bytes beyond A and B, 3 tensor(s) stay on chip; UB 2048 bytes per C fractal}}
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
// KERNEL:       cce.vrec
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

// A row-major consumer (the defractalize the frontend puts before a
// row-major op) is not an epilogue member: the matmul stays alone and says why.
// CHECK-LABEL: func.func @row_major_consumer
// CHECK-NOT:   scf.execute_region
// CHECK:       "ascend.matmul"
// CHECK-NEXT:  "ascend.defractalize"
func.func @row_major_consumer(%a: memref<4x3x16x16xf16, "gm">, %b: memref<5x4x16x16xf16, "gm">, %y: memref<48x80xf32, "gm">) {
  %c = memref.alloc() : memref<5x3x16x16xf32, "gm">
  // expected-remark @+1 {{'ascend.matmul' without epilogue: consumers left out: 'ascend.defractalize': 'ascend.defractalize' is not elementwise}}
  "ascend.matmul"(%a, %b, %c) : (memref<4x3x16x16xf16, "gm">, memref<5x4x16x16xf16, "gm">, memref<5x3x16x16xf32, "gm">) -> ()
  // expected-remark @+1 {{left unfused}}
  "ascend.defractalize"(%c, %y) : (memref<5x3x16x16xf32, "gm">, memref<48x80xf32, "gm">) -> ()
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
  // expected-remark @+1 {{matmul epilogue: 1 op(s) (relu) applied to each C tile as it drains: GM traffic 46080 -> 30720 bytes beyond A and B, 0 tensor(s) stay on chip; UB 1024 bytes per C fractal, 3072 per column block; 'ascend.mul' left out: a scalar tensor operand}}
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
