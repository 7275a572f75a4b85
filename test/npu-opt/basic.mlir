// The driver reads a file or stdin, runs per-pass flags or a textual
// pipeline (with -p as the short form), and mixes Python passes with
// upstream ones in one pipeline.

// RUN: npu-opt %s | FileCheck %s --check-prefix=NOPASS
// RUN: npu-opt < %s | FileCheck %s --check-prefix=NOPASS
// RUN: npu-opt %s --canonicalize | FileCheck %s --check-prefix=CANON
// RUN: npu-opt %s -canonicalize | FileCheck %s --check-prefix=CANON
// RUN: npu-opt %s --pass-pipeline='builtin.module(canonicalize)' | FileCheck %s --check-prefix=CANON
// RUN: npu-opt %s -p 'builtin.module(func.func(canonicalize))' | FileCheck %s --check-prefix=CANON
// RUN: npu-opt %s -p canonicalize | FileCheck %s --check-prefix=CANON
// RUN: npu-opt %s --cse | FileCheck %s --check-prefix=CSE
// RUN: npu-opt %s --canonicalize="max-iterations=1 region-simplify=disabled" | FileCheck %s --check-prefix=CANON
// RUN: npu-opt %s --npu-annotate-target --canonicalize --cse | FileCheck %s --check-prefix=MIXED
// RUN: npu-opt %s -p 'builtin.module(npu-annotate-target{preset=ascend910b},func.func(cse,canonicalize))' | FileCheck %s --check-prefix=MIXED910B
// Generic form on request.
// RUN: npu-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// NOPASS-LABEL: func.func @fold
// NOPASS:         arith.addi
// NOPASS:         arith.muli
// NOPASS:         arith.muli
// CANON-LABEL: func.func @fold
// CANON-NOT:     arith.addi
// CANON:         %[[M1:.*]] = arith.muli %arg0, %arg0
// CANON-NEXT:    %[[M2:.*]] = arith.muli %arg0, %arg0
// CANON-NEXT:    return %[[M1]], %[[M2]]
// CSE-LABEL: func.func @fold
// CSE:         arith.addi
// CSE:         arith.muli
// CSE-NOT:     arith.muli
// MIXED: module attributes {npu.target = "ascend910"}
// MIXED-LABEL: func.func @fold
// MIXED-NOT:     arith.addi
// MIXED:         %[[M:.*]] = arith.muli %arg0, %arg0
// MIXED-NEXT:    return %[[M]], %[[M]]
// MIXED910B: module attributes {npu.target = "ascend910b"}
// MIXED910B-NOT: arith.addi
// GENERIC: "func.func"()
// GENERIC: "arith.addi"
func.func @fold(%a: i32) -> (i32, i32) {
  %c0 = arith.constant 0 : i32
  %b = arith.addi %a, %c0 : i32
  %m1 = arith.muli %b, %b : i32
  %m2 = arith.muli %b, %b : i32
  return %m1, %m2 : i32, i32
}
