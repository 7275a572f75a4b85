// Faults are one `file:line:col: error: <kind>: ...` line and exit code 1.
// RUN: not npu-run %s --entry wait_without_set 2>&1 | FileCheck %s --check-prefix=WAIT
// RUN: not npu-run %s --entry deadlock 2>&1 | FileCheck %s --check-prefix=DEADLOCK
// RUN: not npu-run %s --entry out_of_bounds 2>&1 | FileCheck %s --check-prefix=BOUNDS
// RUN: not npu-run %s 2>&1 | FileCheck %s --check-prefix=ENTRY
// RUN: not npu-run %s --entry deadlock --target nosuch 2>&1 | FileCheck %s --check-prefix=TARGET

// ENTRY: errors.mlir: error: invalid: the module has several functions (wait_without_set, deadlock, out_of_bounds); name the entry
// TARGET: npu-run: error: unknown target preset 'nosuch'

func.func @wait_without_set(%a: memref<256xf16, "gm">) {
  // WAIT: errors.mlir:[[@LINE+1]]:3: error: flag: 'cce.wait_flag' (MTE2 -> V, event 3) has no matching set_flag: this is wait #1 on that flag but the program sets it 0 times
  "cce.wait_flag"() {src = "MTE2", dst = "V", event = 3 : i64} : () -> ()
  return
}

func.func @deadlock(%a: memref<256xf16, "gm">) {
  // DEADLOCK: errors.mlir:[[@LINE+1]]:3: error: deadlock: every pipe with work left is blocked: V waits for flag MTE3 -> V, event 0 at {{.*}}errors.mlir:[[@LINE+1]]:3; MTE3 waits for flag V -> MTE3, event 0 at {{.*}}errors.mlir:[[@LINE+3]]:3
  "cce.wait_flag"() {src = "MTE3", dst = "V", event = 0 : i64} : () -> ()
  "cce.set_flag"() {src = "V", dst = "MTE3", event = 0 : i64} : () -> ()
  "cce.wait_flag"() {src = "V", dst = "MTE3", event = 0 : i64} : () -> ()
  "cce.set_flag"() {src = "MTE3", dst = "V", event = 0 : i64} : () -> ()
  return
}

func.func @out_of_bounds(%a: memref<256xf16, "gm">) {
  %u = memref.alloc() : memref<128xf16, "ub">
  // BOUNDS: errors.mlir:[[@LINE+1]]:3: error: bounds: 'cce.copy_gm_to_ub' writes ub bytes [0, 512) outside its operand #1's allocation [0, 256)
  "cce.copy_gm_to_ub"(%a, %u) {n_burst = 1 : i64, burst_len = 16 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<256xf16, "gm">, memref<128xf16, "ub">) -> ()
  return
}
