// --verify-diagnostics checks the diagnostics against MLIR's expected-*
// comments: exit 0 when every expectation is met by exactly the produced
// diagnostics, and the chunks that succeeded are still printed.

// RUN: npu-opt %s --split-input-file --verify-diagnostics | FileCheck %s
// RUN: npu-opt %s --split-input-file --verify-diagnostics -p 'builtin.module(npu-annotate-target{preset=ascend910b override=1})'

// CHECK-LABEL: func.func @fine
// CHECK-NOT:   func.func @missing_value

func.func @missing_value() -> i32 {
  // expected-error@+1 {{'func.return' op has 0 operands, but enclosing function (@missing_value) returns 1}}
  return
}

// -----

func.func @below_and_above() -> i32 {
  // expected-error@below {{has 0 operands}}
  return
}

// -----

func.func @above() -> i32 {
  return
  // expected-error@above {{has 0 operands}}
}

// -----

func.func @minus_two() -> i32 {
  return

  // expected-error@-2 {{has 0 operands}}
}

// -----

func.func @same_line() -> i32 {
  return // expected-error {{has 0 operands}}
}

// -----

// Notes are checked too.
// expected-note@+1 {{see existing symbol definition here}}
func.func @twice() {
  return
}
// expected-error@+1 {{redefinition of symbol named 'twice'}}
func.func @twice() {
  return
}

// -----

// Parser errors, with the column of the offending token.
func.func @syntax(%a: i32) -> i32 {
  // expected-error@+1 {{expected ','}}
  %b = arith.addi %a : i32
  return %b : i32
}

// -----

func.func @fine(%a: i32) -> i32 {
  return %a : i32
}

// Every kind of mismatch fails the run with a located one-line message.
// RUN: not npu-opt %S/Inputs/verify-failures.mlir --split-input-file --verify-diagnostics 2>&1 | FileCheck %s --check-prefix=FAIL
// FAIL: verify-failures.mlir:3:6: error: expected error "this is never emitted" was not produced
// FAIL: verify-failures.mlir:11:3: error: unexpected error: 'func.return' op has 0 operands, but enclosing function (@unexpected) returns 1
// FAIL: verify-failures.mlir:19:3: error: unexpected error: 'func.return' op has 0 operands
// FAIL: verify-failures.mlir:18:6: error: expected error "has 0 operands" was not produced
// FAIL: verify-failures.mlir:25:1: error: unexpected note: see existing symbol definition here
// FAIL: verify-failures.mlir:38:3: error: unexpected error: 'func.return' op has 0 operands
// FAIL: verify-failures.mlir:37:6: error: expected warning "has 0 operands" was not produced
// FAIL-NOT: error:
// FAIL-NOT: Traceback
// Each chunk fails on its own: any single one is enough for a non-zero exit.
// RUN: %PYTHON -c "import sys; t = open(sys.argv[1]).read().split('// -----'); open(sys.argv[2], 'w').write(t[0])" %S/Inputs/verify-failures.mlir %t.first
// RUN: not npu-opt %t.first --verify-diagnostics
