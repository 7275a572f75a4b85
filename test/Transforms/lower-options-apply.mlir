// An npu-lower option given (other than at its default) where it does not
// apply is refused, naming the option and why, in one line: each forwarded
// option applies when a pass it sets runs (its switch on; npu-split-cores
// over several cores only) and what its declaration needs holds.
// Conditions on options only npu-lower reads are refused before any work
// (no output file); those an op's own options could meet (the matmul
// schedule, double-buffer) when npu-lower sees the ops.

// RUN: rm -f %t
// RUN: not npu-opt %s --pass-pipeline="builtin.module(npu-lower{cores=1 prefetch-remainder-phases=1})" -o %t 2>&1 | FileCheck %s --check-prefix=REMAINDER
// RUN: not ls %t
// RUN: not npu-opt %s --pass-pipeline="builtin.module(npu-lower{cores=1 prefetch-rest-phases=0})" 2>&1 | FileCheck %s --check-prefix=REST
// RUN: not npu-opt %s --pass-pipeline="builtin.module(npu-lower{cores=1 matmul-last-chunk-parts=false})" 2>&1 | FileCheck %s --check-prefix=PARTS
// RUN: not npu-opt %s --pass-pipeline="builtin.module(npu-lower{prefetch=false prefetch-chunks=2})" 2>&1 | FileCheck %s --check-prefix=CHUNKS
// RUN: not npu-opt %s --pass-pipeline="builtin.module(npu-lower{cores=1 split-cores-share=false})" 2>&1 | FileCheck %s --check-prefix=SHARE
// RUN: not npu-opt %s --pass-pipeline="builtin.module(npu-lower{fuse=false fuse-epilogues=false})" 2>&1 | FileCheck %s --check-prefix=FUSE
// RUN: not npu-opt %s --pass-pipeline="builtin.module(npu-lower{fuse-epilogues=false fuse-epilogue-f16=false})" 2>&1 | FileCheck %s --check-prefix=EPILOGUE
// RUN: not npu-opt %s --pass-pipeline="builtin.module(npu-lower{fuse-attention=false fuse-attention-projection=false})" 2>&1 | FileCheck %s --check-prefix=PROJECTION
// RUN: not npu-opt %s --pass-pipeline="builtin.module(npu-lower{canonicalize=false canonicalize-transposes=false})" 2>&1 | FileCheck %s --check-prefix=CANON
// RUN: not npu-opt %s --pass-pipeline="builtin.module(npu-lower{plan-gm=false plan-gm-remarks=true})" 2>&1 | FileCheck %s --check-prefix=PLAN-GM
// RUN: not npu-opt %s --pass-pipeline="builtin.module(npu-lower{sync=barrier carried-span=block})" 2>&1 | FileCheck %s --check-prefix=SYNC
// RUN: rm -f %t
// RUN: not npu-opt %s --split-input-file --pass-pipeline="builtin.module(npu-lower{double-buffer=false c-pieces=2})" -o %t 2>&1 | FileCheck %s --check-prefix=PIECES
// RUN: not ls %t
// RUN: not npu-opt %s --split-input-file --pass-pipeline="builtin.module(npu-lower{matmul-schedule=simple fuse-chains=false})" 2>&1 | FileCheck %s --check-prefix=CHAINS
// RUN: not npu-opt %s --split-input-file --pass-pipeline="builtin.module(npu-lower{double-buffer=false double-buffer-min-trip-count=4})" 2>&1 | FileCheck %s --check-prefix=TRIPS

// Left at their defaults, or where they apply, they are taken; an op's own
// options may ask for the pipelined schedule npu-lower's does not pick (the
// second function: only the first is refused).
// RUN: npu-opt %s --pass-pipeline="builtin.module(npu-lower{cores=1 prefetch=false prefetch-chunks=0 prefetch-rest-phases=2 split-cores-share=true})" | FileCheck %s --check-prefix=OK
// RUN: npu-opt %s --pass-pipeline="builtin.module(npu-lower{cores=1 fuse=false fuse-remarks=true double-buffer=false matmul-schedule=pipelined c-pieces=2})" 2>/dev/null | FileCheck %s --check-prefix=OK

// REMAINDER: {{^}}npu-opt: error: invalid pass pipeline: npu-lower: prefetch-remainder-phases: does not apply: no split over cores (cores=1){{$}}
// REST: npu-opt: error: invalid pass pipeline: npu-lower: prefetch-rest-phases: does not apply: no split over cores (cores=1){{$}}
// CHUNKS: npu-opt: error: invalid pass pipeline: npu-lower: prefetch-chunks: does not apply: npu-prefetch is not run (prefetch=false){{$}}
// PARTS: npu-opt: error: invalid pass pipeline: npu-lower: matmul-last-chunk-parts: does not apply: no split over cores (cores=1){{$}}
// SHARE: npu-opt: error: invalid pass pipeline: npu-lower: split-cores-share: does not apply: no split over cores (cores=1){{$}}
// FUSE: npu-opt: error: invalid pass pipeline: npu-lower: fuse-epilogues: does not apply: npu-fuse is not run (fuse=false){{$}}
// EPILOGUE: npu-opt: error: invalid pass pipeline: npu-lower: fuse-epilogue-f16: does not apply: it needs fuse-epilogues=true{{$}}
// PROJECTION: npu-opt: error: invalid pass pipeline: npu-lower: fuse-attention-projection: does not apply: it needs fuse-attention=true{{$}}
// CANON: npu-opt: error: invalid pass pipeline: npu-lower: canonicalize-transposes: does not apply: npu-canonicalize is not run (canonicalize=false){{$}}
// PLAN-GM: npu-opt: error: invalid pass pipeline: npu-lower: plan-gm-remarks: does not apply: npu-plan-gm is not run (plan-gm=false){{$}}
// SYNC: npu-opt: error: invalid pass pipeline: npu-lower: carried-span: does not apply: it needs sync=precise{{$}}
// PIECES: lower-options-apply.mlir: error: npu-lower: c-pieces: does not apply: it needs matmul-schedule=pipelined (here matmul-schedule=auto is simple: double-buffer=false){{$}}
// PIECES-NOT: error
// CHAINS: error: npu-lower: fuse-chains: does not apply: it needs matmul-schedule=pipelined{{$}}
// TRIPS: error: npu-lower: double-buffer-min-trip-count: does not apply: it needs double-buffer=true{{$}}
// OK: func.func @mm(
// OK: func.func @mm_pipelined(

func.func @mm(%a: memref<4x4x16x16xf16, "gm">, %b: memref<4x4x16x16xf16, "gm">, %c: memref<4x4x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<4x4x16x16xf16, "gm">, memref<4x4x16x16xf16, "gm">, memref<4x4x16x16xf32, "gm">) -> ()
  return
}

// -----

func.func @mm_pipelined(%a: memref<4x4x16x16xf16, "gm">, %b: memref<4x4x16x16xf16, "gm">, %c: memref<4x4x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) {npu.options = {schedule = "pipelined"}} : (memref<4x4x16x16xf16, "gm">, memref<4x4x16x16xf16, "gm">, memref<4x4x16x16xf32, "gm">) -> ()
  return
}
