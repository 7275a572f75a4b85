// Bad per-op options are errors at the op, like bad pass options.
// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-lower-matmul --npu-lower-elementwise
// RUN: not npu-opt %s --split-input-file --npu-lower="tuning-record=%S/Inputs/does-not-exist.json" 2>&1 | FileCheck %s --check-prefix=MISSING

// MISSING: error: npu-lower: cannot read tuning record '{{.*}}does-not-exist.json': No such file or directory

func.func @unknown_key(%a: memref<4x4x16x16xf16, "gm">, %b: memref<4x4x16x16xf16, "gm">, %c: memref<4x4x16x16xf32, "gm">) {
  // expected-error@+1 {{'npu.options' sets 'ub-fraction', which is not an option of npu-lower-matmul (options: strategy, m, n, k, l1-steps, first-step, schedule, l1-chunk, c-pieces, c-piece-rows, staged-drain, resident-a, timed-residency, col-strips, drain-convert, last-chunk-parts, b-ahead, drain-order, double-buffer)}}
  "ascend.matmul"(%a, %b, %c) {npu.options = {"ub-fraction" = 0.5 : f64}} : (memref<4x4x16x16xf16, "gm">, memref<4x4x16x16xf16, "gm">, memref<4x4x16x16xf32, "gm">) -> ()
  return
}

// -----

func.func @bad_choice(%a: memref<4x4x16x16xf16, "gm">, %b: memref<4x4x16x16xf16, "gm">, %c: memref<4x4x16x16xf32, "gm">) {
  // expected-error@+1 {{'npu.options': bad value for option 'strategy' of npu-lower-matmul: expected one of os, is, ws, auto, got 'xs'}}
  "ascend.matmul"(%a, %b, %c) {npu.options = {strategy = "xs"}} : (memref<4x4x16x16xf16, "gm">, memref<4x4x16x16xf16, "gm">, memref<4x4x16x16xf32, "gm">) -> ()
  return
}

// -----

func.func @bad_fraction(%x: memref<4096xf16, "gm">, %y: memref<4096xf16, "gm">) {
  // expected-error@+1 {{'npu.options': bad value for option 'ub-fraction' of npu-lower-elementwise: expected a value in (0, 1], got '1.5'}}
  "ascend.exp"(%x, %y) {npu.options = {"ub-fraction" = 1.5 : f64}} : (memref<4096xf16, "gm">, memref<4096xf16, "gm">) -> ()
  return
}

// -----

func.func @not_a_dictionary(%x: memref<4096xf16, "gm">, %y: memref<4096xf16, "gm">) {
  // expected-error@+1 {{'npu.options' must be a dictionary of scalar option values}}
  "ascend.exp"(%x, %y) {npu.options = 3 : i64} : (memref<4096xf16, "gm">, memref<4096xf16, "gm">) -> ()
  return
}

// -----

func.func @double_buffer_not_bool(%x: memref<4096xf16, "gm">, %y: memref<4096xf16, "gm">) {
  // expected-error@+1 {{'npu.options': 'double-buffer' must be a boolean, got 1}}
  "ascend.exp"(%x, %y) {npu.options = {"double-buffer" = 1 : i64}} : (memref<4096xf16, "gm">, memref<4096xf16, "gm">) -> ()
  return
}
