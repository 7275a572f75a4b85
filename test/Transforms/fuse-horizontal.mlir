// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-fuse-horizontal | FileCheck %s

// Q/K/V: three matmuls read the same A with host-constant weights (N = 32,
// 32, 48): one matmul over the weights concatenated on the host (a new
// constant argument; the three old ones leave the signature), its result
// one buffer whose column-block slices are views; the three bias adds one
// add over it with the biases concatenated. The consumers read dense views
// at byte shifts 0, 4096 and 8192 (2 and 2 column blocks of 32 rows f32).
// CHECK-LABEL: func.func @qkv
// CHECK-SAME:  (%[[A:.*]]: memref<2x2x16x16xf16, "gm">, %[[Y0:.*]]: memref<32x32xf32, "gm">, %[[Y1:.*]]: memref<32x32xf32, "gm">, %[[Y2:.*]]: memref<32x48xf32, "gm">, %[[W:.*]]: memref<7x2x16x16xf16, "gm"> {npu.constant = dense<{{.*}}> : tensor<7x2x16x16xf16>}, %[[B:.*]]: memref<7x2x16x16xf32, "gm"> {npu.constant = {{.*}}})
// CHECK:       %[[BIASED:.*]] = memref.alloc() : memref<14336xi8, "gm">
// CHECK:       %[[D:.*]] = memref.view %[[BIASED]][%{{.*}}][] : memref<14336xi8, "gm"> to memref<7x2x16x16xf32, "gm">
// CHECK:       %[[CBUF:.*]] = memref.alloc() : memref<14336xi8, "gm">
// CHECK:       %[[C:.*]] = memref.view %[[CBUF]][%{{.*}}][] : memref<14336xi8, "gm"> to memref<7x2x16x16xf32, "gm">
// CHECK:       %[[D0:.*]] = memref.view %[[BIASED]][%[[S0:.*]]][] : memref<14336xi8, "gm"> to memref<2x2x16x16xf32, "gm">
// CHECK:       %[[D1:.*]] = memref.view %[[BIASED]][%{{.*}}][] : memref<14336xi8, "gm"> to memref<2x2x16x16xf32, "gm">
// CHECK:       "ascend.matmul"(%[[A]], %[[W]], %[[C]])
// CHECK:       %[[D2:.*]] = memref.view %[[BIASED]][%{{.*}}][] : memref<14336xi8, "gm"> to memref<3x2x16x16xf32, "gm">
// CHECK-NEXT:  "ascend.add"(%[[C]], %[[B]], %[[D]])
// CHECK-NEXT:  "ascend.defractalize"(%[[D0]], %[[Y0]])
// CHECK-NEXT:  "ascend.defractalize"(%[[D1]], %[[Y1]])
// CHECK-NEXT:  "ascend.defractalize"(%[[D2]], %[[Y2]])
// CHECK-NEXT:  return
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

// -----

// Weights the program computes (fractalized on the device into GM
// temporaries): their allocs become adjacent views of one buffer, so the
// fractalize ops write the concatenated weight in place. The first
// sibling's consumer moves after the fused matmul.
// CHECK-LABEL: func.func @device_weights
// CHECK:       %[[CBUF:.*]] = memref.alloc() : memref<4096xi8, "gm">
// CHECK:       %[[C:.*]] = memref.view %[[CBUF]]{{.*}} to memref<2x2x16x16xf32, "gm">
// CHECK:       %[[WBUF:.*]] = memref.alloc() : memref<2048xi8, "gm">
// CHECK:       %[[W:.*]] = memref.view %[[WBUF]]{{.*}} to memref<2x2x16x16xf16, "gm">
// CHECK:       %[[W0:.*]] = memref.view %[[WBUF]]{{.*}} to memref<1x2x16x16xf16, "gm">
// CHECK:       "ascend.fractalize"(%{{.*}}, %[[W0]])
// CHECK:       %[[C0:.*]] = memref.view %[[CBUF]]{{.*}} to memref<1x2x16x16xf32, "gm">
// CHECK:       %[[S1:.*]] = arith.constant 1024 : index
// CHECK:       %[[W1:.*]] = memref.view %[[WBUF]][%[[S1]]][] : memref<2048xi8, "gm"> to memref<1x2x16x16xf16, "gm">
// CHECK:       "ascend.fractalize"(%{{.*}}, %[[W1]])
// CHECK:       %[[C1:.*]] = memref.view %[[CBUF]]{{.*}} to memref<1x2x16x16xf32, "gm">
// CHECK-NEXT:  "ascend.matmul"(%{{.*}}, %[[W]], %[[C]])
// CHECK-NEXT:  "ascend.defractalize"(%[[C0]],
// CHECK-NEXT:  "ascend.defractalize"(%[[C1]],
// CHECK-NEXT:  return
func.func @device_weights(%a: memref<2x2x16x16xf16, "gm">, %w0: memref<32x16xf16, "gm">, %w1: memref<32x16xf16, "gm">,
                          %y0: memref<32x16xf32, "gm">, %y1: memref<32x16xf32, "gm">) {
  %b0 = memref.alloc() : memref<1x2x16x16xf16, "gm">
  "ascend.fractalize"(%w0, %b0) : (memref<32x16xf16, "gm">, memref<1x2x16x16xf16, "gm">) -> ()
  %c0 = memref.alloc() : memref<1x2x16x16xf32, "gm">
  // expected-remark @+1 {{over adjacent weights (2 column slices of C, views of one buffer); modelled GM bytes 10240 -> 8192; 1 dependent op(s) moved after it}}
  "ascend.matmul"(%a, %b0, %c0) : (memref<2x2x16x16xf16, "gm">, memref<1x2x16x16xf16, "gm">, memref<1x2x16x16xf32, "gm">) -> ()
  "ascend.defractalize"(%c0, %y0) : (memref<1x2x16x16xf32, "gm">, memref<32x16xf32, "gm">) -> ()
  %b1 = memref.alloc() : memref<1x2x16x16xf16, "gm">
  "ascend.fractalize"(%w1, %b1) : (memref<32x16xf16, "gm">, memref<1x2x16x16xf16, "gm">) -> ()
  %c1 = memref.alloc() : memref<1x2x16x16xf32, "gm">
  "ascend.matmul"(%a, %b1, %c1) : (memref<2x2x16x16xf16, "gm">, memref<1x2x16x16xf16, "gm">, memref<1x2x16x16xf32, "gm">) -> ()
  "ascend.defractalize"(%c1, %y1) : (memref<1x2x16x16xf32, "gm">, memref<32x16xf32, "gm">) -> ()
  return
}

// -----

// Weights that are plain function arguments: joining them would copy them
// through GM, more bytes than the A loads it saves. Left apart.
// CHECK-LABEL: func.func @argument_weights
// CHECK-COUNT-2: "ascend.matmul"
func.func @argument_weights(%a: memref<2x2x16x16xf16, "gm">, %b0: memref<1x2x16x16xf16, "gm">, %b1: memref<1x2x16x16xf16, "gm">) {
  %c0 = memref.alloc() : memref<1x2x16x16xf32, "gm">
  // expected-remark @+1 {{stay apart: a weight is a function argument: joining would copy 2048 weight bytes through GM twice (4096 bytes) to save at least 2048 bytes of A loads}}
  "ascend.matmul"(%a, %b0, %c0) : (memref<2x2x16x16xf16, "gm">, memref<1x2x16x16xf16, "gm">, memref<1x2x16x16xf32, "gm">) -> ()
  %c1 = memref.alloc() : memref<1x2x16x16xf32, "gm">
  "ascend.matmul"(%a, %b1, %c1) : (memref<2x2x16x16xf16, "gm">, memref<1x2x16x16xf16, "gm">, memref<1x2x16x16xf32, "gm">) -> ()
  return
}

// -----

// A result that is a function argument (an output) cannot become a view of
// the combined buffer.
// CHECK-LABEL: func.func @result_is_output
// CHECK-COUNT-2: "ascend.matmul"
func.func @result_is_output(%a: memref<2x2x16x16xf16, "gm">,
                            %b0: memref<1x2x16x16xf16, "gm"> {npu.constant = dense<1.0> : tensor<1x2x16x16xf16>},
                            %b1: memref<1x2x16x16xf16, "gm"> {npu.constant = dense<1.0> : tensor<1x2x16x16xf16>},
                            %c1: memref<1x2x16x16xf32, "gm">) {
  %c0 = memref.alloc() : memref<1x2x16x16xf32, "gm">
  // expected-remark @+1 {{is not a GM temporary (memref.alloc) it can place}}
  "ascend.matmul"(%a, %b0, %c0) : (memref<2x2x16x16xf16, "gm">, memref<1x2x16x16xf16, "gm">, memref<1x2x16x16xf32, "gm">) -> ()
  "ascend.matmul"(%a, %b1, %c1) : (memref<2x2x16x16xf16, "gm">, memref<1x2x16x16xf16, "gm">, memref<1x2x16x16xf32, "gm">) -> ()
  return
}

// -----

// An op between the siblings overwrites a weight after the first matmul
// read it and the second reads the new value: no place for one matmul.
// CHECK-LABEL: func.func @weight_rewritten
// CHECK-COUNT-2: "ascend.matmul"
func.func @weight_rewritten(%a: memref<2x2x16x16xf16, "gm">, %w: memref<32x16xf16, "gm">) {
  %b0 = memref.alloc() : memref<1x2x16x16xf16, "gm">
  "ascend.fractalize"(%w, %b0) : (memref<32x16xf16, "gm">, memref<1x2x16x16xf16, "gm">) -> ()
  %c0 = memref.alloc() : memref<1x2x16x16xf32, "gm">
  // expected-remark @+1 {{between them must stay after the first (it touches what that one reads or writes) but writes an input of the group}}
  "ascend.matmul"(%a, %b0, %c0) : (memref<2x2x16x16xf16, "gm">, memref<1x2x16x16xf16, "gm">, memref<1x2x16x16xf32, "gm">) -> ()
  %b1 = memref.alloc() : memref<1x2x16x16xf16, "gm">
  "ascend.muls"(%b0, %b0) {scalar = 2.0 : f64} : (memref<1x2x16x16xf16, "gm">, memref<1x2x16x16xf16, "gm">) -> ()
  %c1 = memref.alloc() : memref<1x2x16x16xf32, "gm">
  "ascend.matmul"(%a, %b0, %c1) : (memref<2x2x16x16xf16, "gm">, memref<1x2x16x16xf16, "gm">, memref<1x2x16x16xf32, "gm">) -> ()
  return
}

// -----

// Two siblings read the same weight: joining it with itself would need a
// copy of it (the weights' allocs become views of one buffer), so they stay
// apart.
// CHECK-LABEL: func.func @same_weight_twice
// CHECK-COUNT-2: "ascend.matmul"
func.func @same_weight_twice(%a: memref<2x2x16x16xf16, "gm">, %w: memref<32x16xf16, "gm">) {
  %b0 = memref.alloc() : memref<1x2x16x16xf16, "gm">
  "ascend.fractalize"(%w, %b0) : (memref<32x16xf16, "gm">, memref<1x2x16x16xf16, "gm">) -> ()
  %c0 = memref.alloc() : memref<1x2x16x16xf32, "gm">
  // expected-remark @+1 {{stay apart: two of them read the same weight}}
  "ascend.matmul"(%a, %b0, %c0) : (memref<2x2x16x16xf16, "gm">, memref<1x2x16x16xf16, "gm">, memref<1x2x16x16xf32, "gm">) -> ()
  %c1 = memref.alloc() : memref<1x2x16x16xf32, "gm">
  "ascend.matmul"(%a, %b0, %c1) : (memref<2x2x16x16xf16, "gm">, memref<1x2x16x16xf16, "gm">, memref<1x2x16x16xf32, "gm">) -> ()
  return
}
