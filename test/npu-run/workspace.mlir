// A two-op graph with a GM temporary and a reshape: npu-run plans it into a
// workspace (npu-lower runs npu-plan-gm), allocates the workspace itself,
// checks only the real arguments and reports the workspace bytes; with
// plan-gm=false the temporary stays an allocation. An already planned program
// (a workspace argument and memref.view) runs too: its inputs, random or from
// -o, leave the workspace out.
// RUN: npu-run %s --check -o %t.npz | FileCheck %s --check-prefix=PLANNED
// Unplanned GM temporaries have no hivm form: that run stops at cce.
// RUN: npu-run %s --check --pipeline "npu-lower{plan-gm=false emit=cce}" | FileCheck %s --check-prefix=ALLOCS
// RUN: npu-opt %s --npu-plan-gm -o %t.planned.mlir
// RUN: npu-run %t.planned.mlir --check --inputs %t.npz --json | FileCheck %s --check-prefix=JSON
// RUN: %PYTHON -c "import numpy as np,sys; print(sorted(np.load(sys.argv[1]).files))" %t.npz | FileCheck %s --check-prefix=NPZ

// PLANNED: gm workspace {{ *}}2048
// PLANNED: hazards: none
// PLANNED: check: passed
// ALLOCS: gm workspace {{ *}}0  (+ 2048 bytes of unplanned gm allocs)
// ALLOCS: check: passed
// JSON: "gm": {
// JSON-NEXT: "workspace_bytes": 2048,
// JSON-NEXT: "alloc_bytes": 0
// JSON: "passed": true
// NPZ: ['arg0', 'arg1']
func.func @graph(%x: memref<16x32xf32, "gm">, %y: memref<512xf32, "gm">) {
  %t = memref.alloc() : memref<16x32xf32, "gm">
  "ascend.exp"(%x, %t) : (memref<16x32xf32, "gm">, memref<16x32xf32, "gm">) -> ()
  %tf = memref.collapse_shape %t [[0, 1]] : memref<16x32xf32, "gm"> into memref<512xf32, "gm">
  "ascend.relu"(%tf, %y) : (memref<512xf32, "gm">, memref<512xf32, "gm">) -> ()
  return
}
