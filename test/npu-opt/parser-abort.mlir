// Input that would abort MLIR's own parser (an assertion in LLVM) is an
// ordinary located error instead: the process must survive it.
// RUN: not npu-opt %s 2>&1 | FileCheck %s
// CHECK: parser-abort.mlir:[[@LINE+2]]:32: error: dense arrays of 'index' are not supported (use array<i64: ...>)
// CHECK-NOT: Assertion
func.func @f() attributes {x = array<index: 0, 1>} {
  return
}
