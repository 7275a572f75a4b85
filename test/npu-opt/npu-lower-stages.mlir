// npu-lower runs its stages itself; npu-opt's print, timing and statistics
// flags see each of them by its own name, nested under npu-lower.

// RUN: npu-opt %s --npu-lower="cores=1" --mlir-print-ir-after-all -o /dev/null 2>&1 | FileCheck %s --check-prefix=ALL
// ALL:     IR Dump After LowerElementwise (npu-lower-elementwise) //----- //
// ALL:       "cce.vexp"
// ALL:     IR Dump After InsertSyncPass (npu-insert-sync) //----- //
// ALL:       "cce.wait_flag"
// ALL:     IR Dump After LowerCCEToHIVM (npu-lower-cce-to-hivm) //----- //
// ALL:       "hivm.vexp"
// The whole pass last, from the upstream pass manager:
// ALL:     IR Dump After LowerPass (npu-lower)
// ALL-NOT: IR Dump

// RUN: npu-opt %s --npu-lower="cores=1" --mlir-print-ir-before=npu-insert-sync -o /dev/null 2>&1 | FileCheck %s --check-prefix=ONE
// ONE-NOT: IR Dump
// ONE:     // -----// IR Dump Before InsertSyncPass (npu-insert-sync) //----- //
// ONE-NOT: "cce.wait_flag"
// ONE-NOT: IR Dump

// RUN: npu-opt %s --npu-lower="cores=1" --mlir-timing -o /dev/null 2>&1 | FileCheck %s --check-prefix=TIMING
// TIMING:      npu pass execution time report (nested stages indented)
// TIMING:      ----Wall Time----  ----Name----
// TIMING-NEXT: {{[0-9.]+}} (100.0%)  npu-lower
// TIMING:      {{[0-9.]+}} ({{ *[0-9.]+}}%)    npu-lower-elementwise
// TIMING:      {{[0-9.]+}} ({{ *[0-9.]+}}%)    npu-insert-sync
// TIMING:      (100.0%)  Total

// RUN: npu-opt %s --npu-lower="cores=1" --mlir-pass-statistics -o /dev/null 2>&1 | FileCheck %s --check-prefix=STATS
// STATS:      Pass statistics report
// STATS:      npu-lower
// STATS-NEXT:   (S) 1 runs
// STATS:        npu-lower-elementwise
// STATS-NEXT:     (S) 1 runs
func.func @e(%x: memref<4096xf16, "gm">, %y: memref<4096xf16, "gm">) {
  "ascend.exp"(%x, %y) : (memref<4096xf16, "gm">, memref<4096xf16, "gm">) -> ()
  return
}
