// Each `// -----` chunk is parsed and transformed on its own (the same
// symbol may appear in several chunks); outputs are joined by `// -----`.
// Diagnostics keep the line numbers of the original file.

// RUN: npu-opt %s --split-input-file --canonicalize | FileCheck %s
// RUN: not npu-opt %S/Inputs/split-errors.mlir --split-input-file 2>&1 | FileCheck %s --check-prefix=ERR
// Without the flag the marker is an ordinary comment: one module, and the
// duplicated symbol is an error.
// RUN: not npu-opt %s 2>&1 | FileCheck %s --check-prefix=NOSPLIT

// CHECK-LABEL: func.func @same
// CHECK-NEXT:    return %arg0 : i32
// CHECK:       // -----
// CHECK-LABEL: func.func @same
// CHECK-NEXT:    %[[C:.*]] = arith.constant 7 : i32
// CHECK-NEXT:    return %[[C]] : i32
func.func @same(%a: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %b = arith.addi %a, %c0 : i32
  return %b : i32
}

// -----

func.func @same() -> i32 {
  %c3 = arith.constant 3 : i32
  %c4 = arith.constant 4 : i32
  %s = arith.addi %c3, %c4 : i32
  return %s : i32
}

// NOSPLIT: split-input-file.mlir:25:1: error: redefinition of symbol named 'same'
// NOSPLIT: split-input-file.mlir:17:1: note: see existing symbol definition here
// NOSPLIT-NOT: Traceback

// Errors in later chunks point at lines of the whole file, every chunk is
// processed, and the good chunks are still printed.
// ERR-DAG: split-errors.mlir:6:3: error: 'func.return' op has 0 operands, but enclosing function (@bad_return) returns 1
// ERR-DAG: split-errors.mlir:15:{{[0-9]+}}: error: expected ','
// ERR-DAG: func.func @ok(
// ERR-DAG: func.func @ok2(
// ERR-NOT: Traceback
