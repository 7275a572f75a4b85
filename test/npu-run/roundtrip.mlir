// A GM -> UB -> vmuls -> GM kernel with correct flags: clean report, JSON keys,
// and a trace file. The same kernel without the MTE2 -> V flag is a race.
// RUN: npu-run %s --seed 1 | FileCheck %s --check-prefix=TEXT
// RUN: npu-run %s --json --trace %t.trace.json | FileCheck %s --check-prefix=JSON
// RUN: %PYTHON -c "import json,sys; d=json.load(open(sys.argv[1])); print(len([e for e in d['traceEvents'] if e['ph']=='X']))" %t.trace.json | FileCheck %s --check-prefix=TRACE
// RUN: sed -e '/SYN[C]/d' %s > %t.racy.mlir
// RUN: not npu-run %t.racy.mlir 2>&1 | FileCheck %s --check-prefix=RACE
// Timing only: the same cycles, the same race found, no --check.
// RUN: npu-run %s --json > %t.full.json
// RUN: npu-run %s --json --no-numerics > %t.timing.json
// RUN: %PYTHON -c "import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); print('same cycles', a['cycles'] == b['cycles'] > 0, a['pipes'] == b['pipes'])" %t.full.json %t.timing.json | FileCheck %s --check-prefix=TIMING
// RUN: not npu-run %t.racy.mlir --no-numerics 2>&1 | FileCheck %s --check-prefix=RACE
// RUN: not npu-run %s --no-numerics --check 2>&1 | FileCheck %s --check-prefix=NOCHECK

// TEXT: target ascend910, entry @scale
// TEXT: cycles
// TEXT: lower bound {{[0-9]+}} (limited by path:{{gm_to_ub|ub_to_gm}}
// TEXT: MTE2 {{ *}}1 {{ *}}{{[0-9]+}}
// TEXT: hazards: none

// JSON: "cycles":
// JSON: "bound_cycles":
// JSON: "bound_unit":
// JSON: "pipes":
// JSON: "V": {
// JSON-NEXT: "busy_cycles":
// JSON-NEXT: "utilization":
// JSON: "bytes":
// JSON: "gm_to_ub": 512,
// JSON: "peak_bytes":
// JSON: "instructions": 7,
// JSON: "hazards": [],
// JSON-DAG: "check": null
// JSON-DAG: "wall_seconds":

// TRACE: 7

// TIMING: same cycles True True
// NOCHECK: npu-run: error: --check compares the outputs, which --no-numerics does not compute

// RACE: racy.mlir:[[@LINE+5]]:3: error: race: 'cce.vmuls' on pipe V reads ub bytes [0, 512) written by 'cce.copy_gm_to_ub' on pipe MTE2 at {{.*}}racy.mlir:[[@LINE+4]]:3; no set_flag/wait_flag chain or barrier orders them

func.func @scale(%a: memref<256xf16, "gm">, %b: memref<256xf16, "gm">) {
  %u = memref.alloc() : memref<256xf16, "ub">
  "cce.copy_gm_to_ub"(%a, %u) {n_burst = 1 : i64, burst_len = 16 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<256xf16, "gm">, memref<256xf16, "ub">) -> ()
  "cce.set_flag"() {src = "MTE2", dst = "V", event = 0 : i64} : () -> () // SYNC
  "cce.wait_flag"() {src = "MTE2", dst = "V", event = 0 : i64} : () -> () // SYNC
  "cce.vmuls"(%u, %u) {repeat = 2 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64, scalar = 2.0 : f64} : (memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
  "cce.set_flag"() {src = "V", dst = "MTE3", event = 0 : i64} : () -> ()
  "cce.wait_flag"() {src = "V", dst = "MTE3", event = 0 : i64} : () -> ()
  "cce.copy_ub_to_gm"(%u, %b) {n_burst = 1 : i64, burst_len = 16 : i64, src_gap = 0 : i64, dst_gap = 0 : i64} : (memref<256xf16, "ub">, memref<256xf16, "gm">) -> ()
  return
}
