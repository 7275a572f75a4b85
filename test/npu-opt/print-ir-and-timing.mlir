// IR printing around every pass and pass timing go to stderr; stdout keeps
// only the final IR.

// RUN: npu-opt %s --canonicalize --npu-annotate-target --mlir-print-ir-before-all 2>&1 >/dev/null | FileCheck %s --check-prefix=BEFORE
// RUN: npu-opt %s -p 'builtin.module(canonicalize,npu-annotate-target)' --mlir-print-ir-after-all 2>&1 >/dev/null | FileCheck %s --check-prefix=AFTER
// RUN: npu-opt %s --canonicalize --mlir-print-ir-after-all --mlir-print-ir-before-all 2>/dev/null | FileCheck %s --check-prefix=STDOUT
// RUN: npu-opt %s --canonicalize --npu-annotate-target --mlir-timing 2>&1 >/dev/null | FileCheck %s --check-prefix=TIMING
// RUN: npu-opt %s --canonicalize --mlir-timing 2>/dev/null | FileCheck %s --check-prefix=STDOUT

// BEFORE:      IR Dump Before Canonicalizer (canonicalize)
// BEFORE:        arith.addi
// BEFORE:      IR Dump Before AnnotateTargetPass (npu-annotate-target)
// BEFORE-NOT:    arith.addi
// BEFORE-NOT:  IR Dump After

// AFTER-NOT:   IR Dump Before
// AFTER:       IR Dump After Canonicalizer (canonicalize)
// AFTER-NOT:     arith.addi
// AFTER:       IR Dump After AnnotateTargetPass (npu-annotate-target)
// AFTER-NEXT:  module attributes {npu.target = "ascend910"}

// STDOUT-NOT:  IR Dump
// STDOUT-NOT:  Execution time report
// STDOUT:      func.func @f
// STDOUT-NOT:  arith.addi

// TIMING:      Execution time report
// TIMING:      Wall Time
// TIMING-DAG:  Canonicalizer
// TIMING-DAG:  npu-annotate-target
// TIMING:      Total
func.func @f(%a: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %b = arith.addi %a, %c0 : i32
  return %b : i32
}
