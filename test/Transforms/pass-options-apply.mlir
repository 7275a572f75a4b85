// A pass's option given (other than at its default) where it does not apply
// is refused in one line, as npu-lower's are, when the pass runs on its own:
// what its options and the target decide before any work (no output file),
// what the program decides (no function split over cores for npu-prefetch's
// several-core options; no op's own `npu.options` asking for the pipelined
// schedule a matmul option needs; no op the option acts on, e.g. a conv
// lowering's option and no conv) when the pass sees it.

// RUN: rm -f %t
// RUN: not npu-opt %s --npu-split-cores="cores=1 share=false" -o %t 2>&1 | FileCheck %s --check-prefix=SHARE
// RUN: not ls %t
// RUN: not npu-opt %s --pass-pipeline="builtin.module(npu-fuse{epilogues=false epilogue-f16=false})" 2>&1 | FileCheck %s --check-prefix=F16
// RUN: not npu-opt %s --pass-pipeline="builtin.module(npu-insert-sync{mode=barrier sink-sets=true})" 2>&1 | FileCheck %s --check-prefix=SINK
// RUN: not npu-opt %s --npu-lower-matmul --npu-prefetch=rest-phases=1 -o %t 2>&1 | FileCheck %s --check-prefix=REST
// RUN: not ls %t
// RUN: not npu-opt %s --split-input-file --npu-lower-matmul="c-pieces=2" 2>&1 | FileCheck %s --check-prefix=PIECES
// RUN: rm -f %t
// RUN: not npu-opt %s --npu-lower-conv="cube-residual=always" -o %t 2>&1 | FileCheck %s --check-prefix=NO-CONV
// RUN: not ls %t
// RUN: not npu-opt %s --pass-pipeline="builtin.module(npu-fuse{conv-chains=true})" 2>&1 | FileCheck %s --check-prefix=NO-CONV-CHAINS
// RUN: not npu-opt %s --pass-pipeline="builtin.module(npu-fuse-attention{softmax=f32})" 2>&1 | FileCheck %s --check-prefix=NO-ATTENTION
// RUN: not npu-opt %s --pass-pipeline="builtin.module(npu-lower-elementwise{max-chunk=1024})" 2>&1 | FileCheck %s --check-prefix=NO-ELEMENTWISE

// Where they apply they are taken: split over cores, or the op's own
// options asking for the pipelined schedule (the second function).
// RUN: npu-opt %s --npu-split-cores="cores=4 min-bytes=0 estimate=false share=false" --npu-lower-matmul --npu-prefetch="rest-phases=1 later-slots=false" | FileCheck %s --check-prefix=OK
// RUN: npu-opt %s --split-input-file --npu-lower-matmul="schedule=pipelined c-pieces=2" 2>/dev/null | FileCheck %s --check-prefix=OK

// SHARE: {{^}}npu-opt: error: invalid pass pipeline: npu-split-cores: share: does not apply: no split over cores (cores=1){{$}}
// F16: {{^}}npu-opt: error: invalid pass pipeline: npu-fuse: epilogue-f16: does not apply: it needs epilogues=true{{$}}
// SINK: {{^}}npu-opt: error: invalid pass pipeline: npu-insert-sync: sink-sets: does not apply: it needs mode=precise{{$}}
// REST: pass-options-apply.mlir: error: npu-prefetch: rest-phases: does not apply: no split over cores (no function runs on several cores){{$}}
// PIECES: pass-options-apply.mlir: error: npu-lower-matmul: c-pieces: does not apply: it needs schedule=pipelined{{$}}
// PIECES-NOT: error
// NO-CONV: {{^}}{{.*}}pass-options-apply.mlir: error: npu-lower-conv: cube-residual: does not apply: the program has no conv{{$}}
// NO-CONV-NOT: error
// NO-CONV-CHAINS: error: npu-fuse: conv-chains: does not apply: the program has no conv{{$}}
// NO-ATTENTION: error: npu-fuse-attention: softmax: does not apply: the program has no batch_matmul (attention's Q.K^T){{$}}
// NO-ELEMENTWISE: error: npu-lower-elementwise: max-chunk: does not apply: the program has no elementwise op{{$}}
// PIECES: func.func @mm_pipelined(
// OK: func.func @mm(

func.func @mm(%a: memref<4x4x16x16xf16, "gm">, %b: memref<4x4x16x16xf16, "gm"> {npu.constant = dense<0.5> : tensor<4x4x16x16xf16>}, %c: memref<4x4x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<4x4x16x16xf16, "gm">, memref<4x4x16x16xf16, "gm">, memref<4x4x16x16xf32, "gm">) -> ()
  return
}

// -----

func.func @mm_pipelined(%a: memref<4x4x16x16xf16, "gm">, %b: memref<4x4x16x16xf16, "gm">, %c: memref<4x4x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) {npu.options = {schedule = "pipelined"}} : (memref<4x4x16x16xf16, "gm">, memref<4x4x16x16xf16, "gm">, memref<4x4x16x16xf32, "gm">) -> ()
  return
}
