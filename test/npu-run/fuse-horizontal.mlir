// Sibling matmuls with host-constant weights (`npu.constant`, as the
// frontend writes them): npu-lower's npu-fuse-horizontal replaces the six
// constant arguments by two concatenated ones; npu-run feeds the lowered
// function its constants and compares the outputs by the program's own
// arguments with the numpy reference. The npz output keeps those arguments.
// RUN: npu-run %s --check -o %t.npz | FileCheck %s
// RUN: npu-run %s --check --pipeline "npu-lower{fuse-horizontal=false}" | FileCheck %s
// RUN: %PYTHON -c "import numpy as np,sys; d=np.load(sys.argv[1]); print(len(d.files), d['arg1'].tolist()[0][0][0][0], d['arg9'].shape)" %t.npz | FileCheck %s --check-prefix=NPZ
// CHECK: check: passed
// NPZ: 10 1.0 (32, 48)
func.func @qkv(%a: memref<2x2x16x16xf16, "gm">,
               %wq: memref<2x2x16x16xf16, "gm"> {npu.constant = dense<1.0> : tensor<2x2x16x16xf16>},
               %wk: memref<2x2x16x16xf16, "gm"> {npu.constant = dense<2.0> : tensor<2x2x16x16xf16>},
               %wv: memref<3x2x16x16xf16, "gm"> {npu.constant = dense<0.5> : tensor<3x2x16x16xf16>},
               %bq: memref<2x2x16x16xf32, "gm"> {npu.constant = dense<0.25> : tensor<2x2x16x16xf32>},
               %bk: memref<2x2x16x16xf32, "gm"> {npu.constant = dense<0.5> : tensor<2x2x16x16xf32>},
               %bv: memref<3x2x16x16xf32, "gm"> {npu.constant = dense<1.0> : tensor<3x2x16x16xf32>},
               %yq: memref<32x32xf32, "gm">, %yk: memref<32x32xf32, "gm">, %yv: memref<32x48xf32, "gm">) {
  %cq = memref.alloc() : memref<2x2x16x16xf32, "gm">
  // expected-remark @+1 {{are one matmul 32x32x112 over host-concatenated weights (3 column slices of C, views of one buffer); modelled GM bytes 27648 -> 23552; 4 dependent op(s) moved after it}}
  "ascend.matmul"(%a, %wq, %cq) : (memref<2x2x16x16xf16, "gm">, memref<2x2x16x16xf16, "gm">, memref<2x2x16x16xf32, "gm">) -> ()
  %dq = memref.alloc() : memref<2x2x16x16xf32, "gm">
  // expected-remark @+1 {{are one ascend.add over the combined result (the same GM bytes in one kernel instead of 3)}}
  "ascend.add"(%cq, %bq, %dq) : (memref<2x2x16x16xf32, "gm">, memref<2x2x16x16xf32, "gm">, memref<2x2x16x16xf32, "gm">) -> ()
  "ascend.defractalize"(%dq, %yq) : (memref<2x2x16x16xf32, "gm">, memref<32x32xf32, "gm">) -> ()
  %ck = memref.alloc() : memref<2x2x16x16xf32, "gm">
  "ascend.matmul"(%a, %wk, %ck) : (memref<2x2x16x16xf16, "gm">, memref<2x2x16x16xf16, "gm">, memref<2x2x16x16xf32, "gm">) -> ()
  %dk = memref.alloc() : memref<2x2x16x16xf32, "gm">
  "ascend.add"(%ck, %bk, %dk) : (memref<2x2x16x16xf32, "gm">, memref<2x2x16x16xf32, "gm">, memref<2x2x16x16xf32, "gm">) -> ()
  "ascend.defractalize"(%dk, %yk) : (memref<2x2x16x16xf32, "gm">, memref<32x32xf32, "gm">) -> ()
  %cv = memref.alloc() : memref<3x2x16x16xf32, "gm">
  "ascend.matmul"(%a, %wv, %cv) : (memref<2x2x16x16xf16, "gm">, memref<3x2x16x16xf16, "gm">, memref<3x2x16x16xf32, "gm">) -> ()
  %dv = memref.alloc() : memref<3x2x16x16xf32, "gm">
  "ascend.add"(%cv, %bv, %dv) : (memref<3x2x16x16xf32, "gm">, memref<3x2x16x16xf32, "gm">, memref<3x2x16x16xf32, "gm">) -> ()
  "ascend.defractalize"(%dv, %yv) : (memref<3x2x16x16xf32, "gm">, memref<32x48xf32, "gm">) -> ()
  return
}

