// --help lists the driver's options and every registered pass with its
// options, their types, choices and defaults.

// RUN: npu-opt --help | FileCheck %s
// RUN: npu-opt -h | FileCheck %s

// CHECK:      usage: npu-opt
// CHECK-DAG:  --pass-pipeline
// CHECK-DAG:  --split-input-file
// CHECK-DAG:  --verify-diagnostics
// CHECK-DAG:  --mlir-print-ir-after-all
// CHECK-DAG:  --mlir-print-ir-before-all
// CHECK-DAG:  --mlir-timing
// CHECK-DAG:  --target
// CHECK:      registered passes
// CHECK:      --npu-annotate-target{{ +}}Record the target preset
// CHECK-NEXT:   preset=<str> {ascend910|ascend910b|ascend310}
// CHECK-NEXT:   override=<bool> {{.*}}(default: False)
// CHECK:      Upstream MLIR passes
