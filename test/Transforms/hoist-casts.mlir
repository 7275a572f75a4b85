// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-hoist-casts | FileCheck %s

// Q of an attention as the frontend emits it: projection, bias add, row-major
// store, head transpose, cast to f16, fractalize, batch_matmul. The cast
// moves ahead of the transpose and the defractalize, to the bias add's Nz
// result: both layout ops move f16, and the fractalize reads the transposed
// f16 heads.
// CHECK-LABEL: func.func @projection
// CHECK:       "ascend.add"({{.*}}, %[[SUM:[a-z_0-9]+]])
// CHECK:       %[[HALF:.*]] = memref.alloc() : memref<2x2x16x16xf16, "gm">
// CHECK-NEXT:  "ascend.cast"(%[[SUM]], %[[HALF]]) {round_mode = "rint"} : (memref<2x2x16x16xf32, "gm">, memref<2x2x16x16xf16, "gm">)
// CHECK-NEXT:  "ascend.defractalize"(%[[HALF]], %{{.*}}) : (memref<2x2x16x16xf16, "gm">, memref<32x32xf16, "gm">)
// CHECK:       "ascend.transpose"({{.*}}) {permutation = array<i64: 0, 2, 1, 3>} : (memref<1x32x2x16xf16, "gm">, memref<1x2x32x16xf16, "gm">)
// CHECK-NOT:   "ascend.cast"
// CHECK:       "ascend.fractalize"({{.*}}) : (memref<2x32x16xf16, "gm">, memref<2x1x2x16x16xf16, "gm">)
// CHECK:       "ascend.batch_matmul"
func.func @projection(%x: memref<2x2x16x16xf16, "gm">, %w: memref<2x2x16x16xf16, "gm">, %b: memref<2x2x16x16xf32, "gm">, %kf: memref<2x2x1x16x16xf16, "gm">, %y: memref<2x2x2x16x16xf32, "gm">) {
  %c = memref.alloc() : memref<2x2x16x16xf32, "gm">
  "ascend.matmul"(%x, %w, %c) : (memref<2x2x16x16xf16, "gm">, memref<2x2x16x16xf16, "gm">, memref<2x2x16x16xf32, "gm">) -> ()
  %s = memref.alloc() : memref<2x2x16x16xf32, "gm">
  "ascend.add"(%c, %b, %s) : (memref<2x2x16x16xf32, "gm">, memref<2x2x16x16xf32, "gm">, memref<2x2x16x16xf32, "gm">) -> ()
  %rows = memref.alloc() : memref<32x32xf32, "gm">
  "ascend.defractalize"(%s, %rows) : (memref<2x2x16x16xf32, "gm">, memref<32x32xf32, "gm">) -> ()
  %split = memref.expand_shape %rows [[0, 1], [2, 3]] output_shape [1, 32, 2, 16] : memref<32x32xf32, "gm"> into memref<1x32x2x16xf32, "gm">
  %heads = memref.alloc() : memref<1x2x32x16xf32, "gm">
  "ascend.transpose"(%split, %heads) {permutation = array<i64: 0, 2, 1, 3>} : (memref<1x32x2x16xf32, "gm">, memref<1x2x32x16xf32, "gm">) -> ()
  %q = memref.collapse_shape %heads [[0, 1], [2], [3]] : memref<1x2x32x16xf32, "gm"> into memref<2x32x16xf32, "gm">
  %qh = memref.alloc() : memref<2x32x16xf16, "gm">
  // expected-remark @+1 {{npu-hoist-casts: cast to f16 moved ahead of 'ascend.transpose', 'ascend.defractalize' (the same values; the layout ops move half the bytes)}}
  "ascend.cast"(%q, %qh) {round_mode = "rint"} : (memref<2x32x16xf32, "gm">, memref<2x32x16xf16, "gm">) -> ()
  %qf = memref.alloc() : memref<2x1x2x16x16xf16, "gm">
  "ascend.fractalize"(%qh, %qf) : (memref<2x32x16xf16, "gm">, memref<2x1x2x16x16xf16, "gm">) -> ()
  "ascend.batch_matmul"(%qf, %kf, %y) : (memref<2x1x2x16x16xf16, "gm">, memref<2x2x1x16x16xf16, "gm">, memref<2x2x2x16x16xf32, "gm">) -> ()
  return
}

// -----

// The transposed f32 heads are read by another op too: the cast stays (it
// would have to write f16 where the other reader wants f32).
// CHECK-LABEL: func.func @shared_heads
// CHECK:       "ascend.transpose"({{.*}} : (memref<1x32x2x16xf32, "gm">, memref<1x2x32x16xf32, "gm">)
// CHECK:       "ascend.exp"
// CHECK:       "ascend.cast"({{.*}}) {round_mode = "rint"} : (memref<2x32x16xf32, "gm">, memref<2x32x16xf16, "gm">)
func.func @shared_heads(%x: memref<32x32xf32, "gm">, %kf: memref<2x2x1x16x16xf16, "gm">, %e: memref<1x2x32x16xf32, "gm">, %y: memref<2x2x2x16x16xf32, "gm">) {
  %rows = memref.alloc() : memref<32x32xf32, "gm">
  "ascend.adds"(%x, %rows) {scalar = 1.0 : f64} : (memref<32x32xf32, "gm">, memref<32x32xf32, "gm">) -> ()
  %split = memref.expand_shape %rows [[0, 1], [2, 3]] output_shape [1, 32, 2, 16] : memref<32x32xf32, "gm"> into memref<1x32x2x16xf32, "gm">
  %heads = memref.alloc() : memref<1x2x32x16xf32, "gm">
  "ascend.transpose"(%split, %heads) {permutation = array<i64: 0, 2, 1, 3>} : (memref<1x32x2x16xf32, "gm">, memref<1x2x32x16xf32, "gm">) -> ()
  "ascend.exp"(%heads, %e) : (memref<1x2x32x16xf32, "gm">, memref<1x2x32x16xf32, "gm">) -> ()
  %q = memref.collapse_shape %heads [[0, 1], [2], [3]] : memref<1x2x32x16xf32, "gm"> into memref<2x32x16xf32, "gm">
  %qh = memref.alloc() : memref<2x32x16xf16, "gm">
  "ascend.cast"(%q, %qh) {round_mode = "rint"} : (memref<2x32x16xf32, "gm">, memref<2x32x16xf16, "gm">) -> ()
  %qf = memref.alloc() : memref<2x1x2x16x16xf16, "gm">
  "ascend.fractalize"(%qh, %qf) : (memref<2x32x16xf16, "gm">, memref<2x1x2x16x16xf16, "gm">) -> ()
  "ascend.batch_matmul"(%qf, %kf, %y) : (memref<2x1x2x16x16xf16, "gm">, memref<2x2x1x16x16xf16, "gm">, memref<2x2x2x16x16xf32, "gm">) -> ()
  return
}

// -----

// The merged attention context feeds a plain matmul (out_proj): left to
// npu-fuse-attention, which stores the context merged.
// CHECK-LABEL: func.func @merged_context
// CHECK:       "ascend.transpose"({{.*}} : (memref<1x2x32x16xf32, "gm">, memref<1x32x2x16xf32, "gm">)
// CHECK:       "ascend.cast"({{.*}}) {round_mode = "rint"} : (memref<32x32xf32, "gm">, memref<32x32xf16, "gm">)
func.func @merged_context(%ctx: memref<1x2x32x16xf32, "gm">, %w: memref<2x2x16x16xf16, "gm">, %y: memref<2x2x16x16xf32, "gm">) {
  %merged = memref.alloc() : memref<1x32x2x16xf32, "gm">
  "ascend.transpose"(%ctx, %merged) {permutation = array<i64: 0, 2, 1, 3>} : (memref<1x2x32x16xf32, "gm">, memref<1x32x2x16xf32, "gm">) -> ()
  %rows = memref.collapse_shape %merged [[0, 1], [2, 3]] : memref<1x32x2x16xf32, "gm"> into memref<32x32xf32, "gm">
  %h = memref.alloc() : memref<32x32xf16, "gm">
  "ascend.cast"(%rows, %h) {round_mode = "rint"} : (memref<32x32xf32, "gm">, memref<32x32xf16, "gm">) -> ()
  %a = memref.alloc() : memref<2x2x16x16xf16, "gm">
  "ascend.fractalize"(%h, %a) : (memref<32x32xf16, "gm">, memref<2x2x16x16xf16, "gm">) -> ()
  "ascend.matmul"(%a, %w, %y) : (memref<2x2x16x16xf16, "gm">, memref<2x2x16x16xf16, "gm">, memref<2x2x16x16xf32, "gm">) -> ()
  return
}

// -----

// Heads of a function argument: moved, the cast would be a kernel of its
// own over the argument; it stays for npu-fuse-attention to absorb (the
// kernel casts each tile on chip).
// CHECK-LABEL: func.func @argument_heads
// CHECK:       "ascend.transpose"({{.*}} : (memref<1x32x2x16xf32, "gm">, memref<1x2x32x16xf32, "gm">)
// CHECK:       "ascend.cast"({{.*}}) {round_mode = "rint"} : (memref<2x32x16xf32, "gm">, memref<2x32x16xf16, "gm">)
func.func @argument_heads(%x: memref<1x32x2x16xf32, "gm">, %kf: memref<2x2x1x16x16xf16, "gm">, %y: memref<2x2x2x16x16xf32, "gm">) {
  %heads = memref.alloc() : memref<1x2x32x16xf32, "gm">
  "ascend.transpose"(%x, %heads) {permutation = array<i64: 0, 2, 1, 3>} : (memref<1x32x2x16xf32, "gm">, memref<1x2x32x16xf32, "gm">) -> ()
  %q = memref.collapse_shape %heads [[0, 1], [2], [3]] : memref<1x2x32x16xf32, "gm"> into memref<2x32x16xf32, "gm">
  %qh = memref.alloc() : memref<2x32x16xf16, "gm">
  "ascend.cast"(%q, %qh) {round_mode = "rint"} : (memref<2x32x16xf32, "gm">, memref<2x32x16xf16, "gm">) -> ()
  %qf = memref.alloc() : memref<2x1x2x16x16xf16, "gm">
  "ascend.fractalize"(%qh, %qf) : (memref<2x32x16xf16, "gm">, memref<2x1x2x16x16xf16, "gm">) -> ()
  "ascend.batch_matmul"(%qf, %kf, %y) : (memref<2x1x2x16x16xf16, "gm">, memref<2x2x1x16x16xf16, "gm">, memref<2x2x2x16x16xf32, "gm">) -> ()
  return
}

// -----

// The cast reads a function argument directly: nothing to cross.
// CHECK-LABEL: func.func @argument_cast
// CHECK:       "ascend.cast"(%arg0, {{.*}}) {round_mode = "rint"} : (memref<2x32x16xf32, "gm">, memref<2x32x16xf16, "gm">)
func.func @argument_cast(%q: memref<2x32x16xf32, "gm">, %kf: memref<2x2x1x16x16xf16, "gm">, %y: memref<2x2x2x16x16xf32, "gm">) {
  %qh = memref.alloc() : memref<2x32x16xf16, "gm">
  "ascend.cast"(%q, %qh) {round_mode = "rint"} : (memref<2x32x16xf32, "gm">, memref<2x32x16xf16, "gm">) -> ()
  %qf = memref.alloc() : memref<2x1x2x16x16xf16, "gm">
  "ascend.fractalize"(%qh, %qf) : (memref<2x32x16xf16, "gm">, memref<2x1x2x16x16xf16, "gm">) -> ()
  "ascend.batch_matmul"(%qf, %kf, %y) : (memref<2x1x2x16x16xf16, "gm">, memref<2x2x1x16x16xf16, "gm">, memref<2x2x2x16x16xf32, "gm">) -> ()
  return
}
