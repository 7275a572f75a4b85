// --target selects a preset of npu.target; passes see it (here through
// npu-annotate-target). An unknown preset is a one-line usage error.

// RUN: npu-opt %s --npu-annotate-target | FileCheck %s --check-prefix=T910
// RUN: npu-opt %s --target=ascend910 --npu-annotate-target | FileCheck %s --check-prefix=T910
// RUN: npu-opt %s --target=ascend910b --npu-annotate-target | FileCheck %s --check-prefix=T910B
// RUN: npu-opt %s --target ascend310 --npu-annotate-target | FileCheck %s --check-prefix=T310
// RUN: not npu-opt %s --target=ascend9000 --npu-annotate-target 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// T910:  module attributes {npu.target = "ascend910"}
// T910B: module attributes {npu.target = "ascend910b"}
// T310:  module attributes {npu.target = "ascend310"}
// UNKNOWN-NOT: {{.}}
// UNKNOWN: {{^}}npu-opt: error: unknown target preset 'ascend9000' (known: ascend910, ascend910b, ascend310){{$}}
// UNKNOWN-NOT: {{.}}
func.func @f() {
  return
}
