// RUN: npu-opt %s --split-input-file --npu-annotate-target 2>&1 | FileCheck %s --check-prefix=DEFAULT
// RUN: npu-opt %s --split-input-file --target=ascend910b --npu-annotate-target=override=1 | FileCheck %s --check-prefix=B
// RUN: npu-opt %s --split-input-file -p 'builtin.module(npu-annotate-target{preset=ascend310 override=true})' --verify-diagnostics | FileCheck %s --check-prefix=P310
// RUN: not npu-opt %S/Inputs/annotated-910b.mlir --npu-annotate-target 2>&1 | FileCheck %s --check-prefix=MISMATCH

// DEFAULT-NOT:   remark
// DEFAULT-LABEL: module attributes {npu.target = "ascend910"}
// DEFAULT:       func.func @plain
// B-LABEL:       module attributes {npu.target = "ascend910b"}
// P310-LABEL:    module attributes {npu.target = "ascend310"}
// P310:          func.func @plain
module {
  func.func @plain() {
    return
  }
}

// -----

// An annotation that agrees with the pipeline's target is left alone
// (no remark in the default run); replacing one with override=true is remarked.
// DEFAULT-LABEL: module attributes {npu.target = "ascend910"}
// DEFAULT-NOT:   remark
// B-LABEL:       module attributes {npu.target = "ascend910b"}
// P310-LABEL:    module attributes {npu.target = "ascend310"}
// expected-remark@+1 {{target 'ascend910' replaced by 'ascend310'}}
module attributes {npu.target = "ascend910"} {
}

// MISMATCH: annotated-910b.mlir:3:1: error: module is annotated for target 'ascend910b' but this pipeline targets 'ascend910' (use override=true to replace it)
// MISMATCH-NOT: Traceback
