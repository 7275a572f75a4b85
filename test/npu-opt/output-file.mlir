// `-o` writes the result to a file; when anything fails, the file is not
// written at all (not even truncated), so a build never picks up half a result.

// RUN: rm -f %t
// RUN: npu-opt %s --canonicalize -o %t
// RUN: FileCheck %s --input-file=%t

// A failed run leaves no file behind ...
// RUN: rm -f %t.bad
// RUN: not npu-opt %S/Inputs/verifier-error.mlir -o %t.bad
// RUN: %PYTHON -c "import os, sys; sys.exit(os.path.exists(sys.argv[1]))" %t.bad
// RUN: not npu-opt %s --no-such-pass -o %t.bad
// RUN: %PYTHON -c "import os, sys; sys.exit(os.path.exists(sys.argv[1]))" %t.bad
// RUN: not npu-opt %s --npu-annotate-target="preset=bogus" -o %t.bad
// RUN: %PYTHON -c "import os, sys; sys.exit(os.path.exists(sys.argv[1]))" %t.bad

// ... and an existing output file keeps its previous contents.
// RUN: not npu-opt %S/Inputs/malformed.mlir -o %t
// RUN: FileCheck %s --input-file=%t

// With --split-input-file, one failing chunk is enough to leave -o alone.
// RUN: not npu-opt %S/Inputs/split-one-bad.mlir --split-input-file -o %t
// RUN: FileCheck %s --input-file=%t

// CHECK-LABEL: func.func @keep
// CHECK-NEXT:    return %arg0
func.func @keep(%a: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %b = arith.addi %a, %c0 : i32
  return %b : i32
}
