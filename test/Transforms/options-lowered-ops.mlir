// npu-double-buffer and npu-prefetch act on a lowered program: its loops,
// its loads from GM, host-constant weights it stages into L1 (B here), a
// lowered conv's weights in L1. Run alone on a program
// without them (an ascend program not lowered yet, a lowered one without a
// conv), their options are refused in one line (no output file); run after
// a lowering, or as npu-lower's stages (whose lowerings make them), taken.

// RUN: rm -f %t
// RUN: not npu-opt %s --npu-double-buffer="unmarked=false" -o %t 2>&1 | FileCheck %s --check-prefix=NO-LOOP
// RUN: not ls %t
// RUN: not npu-opt %s --npu-prefetch="chunks=1" 2>&1 | FileCheck %s --check-prefix=NO-LOAD
// RUN: not npu-opt %s -p 'builtin.module(npu-lower-matmul,npu-prefetch{convs=false})' 2>&1 >/dev/null | FileCheck %s --check-prefix=NO-CONV
// RUN: npu-opt %s -p 'builtin.module(npu-lower-matmul,npu-double-buffer{unmarked=false},npu-prefetch{chunks=1})' 2>/dev/null | FileCheck %s --check-prefix=TAKEN
// RUN: npu-opt %s --npu-lower="cores=1 double-buffer=false prefetch-chunks=1" 2>/dev/null | FileCheck %s --check-prefix=TAKEN

// NO-LOOP: {{^}}{{.*}}options-lowered-ops.mlir: error: npu-double-buffer: unmarked: does not apply: the program has no loop (scf.for: a lowered op's){{$}}
// NO-LOOP-NOT: error
// NO-LOAD: {{^}}{{.*}}options-lowered-ops.mlir: error: npu-prefetch: chunks: does not apply: the program has no copy from GM into L1 or UB (a lowered op's loads){{$}}
// NO-CONV: {{^}}{{.*}}options-lowered-ops.mlir: error: npu-prefetch: convs: does not apply: the program has no lowered conv's weights in L1 (npu.resident_weights or npu.streamed_weights){{$}}
// NO-CONV-NOT: error
// TAKEN-LABEL: func.func @mm(
// TAKEN-NOT: ascend.
// TAKEN: return
func.func @mm(%a: memref<4x4x16x16xf16, "gm">, %b: memref<4x4x16x16xf16, "gm"> {npu.constant = dense<0.5> : tensor<4x4x16x16xf16>}, %c: memref<4x4x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<4x4x16x16xf16, "gm">, memref<4x4x16x16xf16, "gm">, memref<4x4x16x16xf32, "gm">) -> ()
  return
}
