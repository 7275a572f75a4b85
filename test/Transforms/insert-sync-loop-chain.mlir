// RUN: npu-opt %s --npu-lower="cores=1 emit=cce" | FileCheck %s

// ResNet's stem MaxPool (NC1HWC0): a loop over the first band of each
// channel group, then the interior bands' loop, both ping-ponging the same
// two UB buffers (A: event 0, B: event 1 of V -> MTE2 in the first loop).
// Before the interior loop MTE2 waits only for V's reads of A; the interior
// loop's pair for B takes event 1 (no pre-set of its own): its first load
// into B waits for the first loop's last set, inside the loop.
// CHECK-LABEL: func.func @stem_pool
// CHECK-NOT:   "cce.set_flag"() {dst = "MTE2", event = 3 : i64, src = "V"}
// CHECK:       scf.for
// CHECK:       "cce.set_flag"() {dst = "MTE2", event = 1 : i64, src = "V"}
// CHECK-NOT:   "cce.wait_flag"() {dst = "MTE2", event = 1 : i64, src = "V"}
// CHECK:       "cce.wait_flag"() {dst = "MTE2", event = 0 : i64, src = "V"}
// CHECK-NEXT:  "cce.wait_flag"() {dst = "V", event = 0 : i64, src = "MTE3"}
// CHECK:       scf.for
// CHECK:       "cce.wait_flag"() {dst = "MTE2", event = 2 : i64, src = "V"}
// CHECK:       "cce.wait_flag"() {dst = "MTE2", event = 1 : i64, src = "V"}
// CHECK:       "cce.set_flag"() {dst = "MTE2", event = 1 : i64, src = "V"}
// CHECK:       return
func.func @stem_pool(%x: memref<1x4x112x112x16xf16, "gm">, %y: memref<1x4x56x56x16xf16, "gm">) {
  "ascend.pool2d"(%x, %y) {kind = "max", kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = 0 : i64, layout = "nc1hwc0"} : (memref<1x4x112x112x16xf16, "gm">, memref<1x4x56x56x16xf16, "gm">) -> ()
  return
}
