// The entry function must have a body and memref arguments only; bad
// entries are located errors (exit 1). Zero-sized programs: entry-empty.mlir.
// RUN: not npu-run %s --entry declared 2>&1 | FileCheck %s --check-prefix=DECL
// RUN: not npu-run %s --entry index_arg 2>&1 | FileCheck %s --check-prefix=INDEX

// DECL: entry.mlir:[[@LINE+1]]:1: error: invalid: 'declared' is only a declaration: an entry function needs a body to run
func.func private @declared(%a: memref<16xf16, "gm">)

// INDEX: entry.mlir:[[@LINE+1]]:1: error: invalid: argument #2 of 'index_arg' has type index: an entry function takes memref arguments only
func.func @index_arg(%a: memref<16xf16, "gm">, %b: memref<16xf16, "gm">, %n: index) {
  "ascend.exp"(%a, %b) : (memref<16xf16, "gm">, memref<16xf16, "gm">) -> ()
  return
}

// An `npu.constant` argument carries dense elements of its own size.
// RUN: not npu-run %s --entry bad_constant 2>&1 | FileCheck %s --check-prefix=CONST
// CONST: entry.mlir:[[@LINE+1]]:1: error: argument #0 (memref<16xf16, "gm">) has npu.constant = array<i64: 1>; it must be dense elements with 16 values (or a splat)
func.func @bad_constant(%a: memref<16xf16, "gm"> {npu.constant = array<i64: 1>}, %b: memref<16xf16, "gm">) {
  "ascend.exp"(%a, %b) : (memref<16xf16, "gm">, memref<16xf16, "gm">) -> ()
  return
}
