// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-canonicalize | FileCheck %s

// T5's eager export: a constant position bias and the key mask
// where(keep, 0, min) added to the scores of each layer one after the other.
// Both layers add where(keep, bias, min) instead, made once before the first,
// and the mask's own select goes.
// CHECK-LABEL: func.func @bias_then_mask_in_two_layers
// CHECK:       "ascend.cmp"
// CHECK-NEXT:  memref.expand_shape
// CHECK-NEXT:  %[[B:.*]] = memref.alloc() : memref<1x2x16x16xf32, "gm">
// CHECK-NEXT:  "ascend.select"(%{{.*}}, %arg3, %arg5, %[[B]])
// CHECK-NEXT:  "ascend.add"(%arg0, %[[B]], %arg6)
// CHECK-NEXT:  "ascend.add"(%arg1, %[[B]], %arg7)
// CHECK-NOT:   "ascend.select"
// CHECK:       return
func.func @bias_then_mask_in_two_layers(
    %s0: memref<1x2x16x16xf32, "gm">, %s1: memref<1x2x16x16xf32, "gm">, %ids: memref<1x16xi32, "gm">,
    %bias: memref<1x2x16x16xf32, "gm"> {npu.constant = dense<0.5> : tensor<1x2x16x16xf32>},
    %zero: memref<1x1x1x1xf32, "gm"> {npu.constant = dense<0.0> : tensor<1x1x1x1xf32>},
    %min: memref<1x1x1x1xf32, "gm"> {npu.constant = dense<-3.40282347E+38> : tensor<1x1x1x1xf32>},
    %y0: memref<1x2x16x16xf32, "gm">, %y1: memref<1x2x16x16xf32, "gm">,
    %pad: memref<1x1xi32, "gm"> {npu.constant = dense<0> : tensor<1x1xi32>}) {
  %keep = memref.alloc() : memref<1x16xi8, "gm">
  "ascend.cmp"(%ids, %pad, %keep) {predicate = "ne"} : (memref<1x16xi32, "gm">, memref<1x1xi32, "gm">, memref<1x16xi8, "gm">) -> ()
  %keep4 = memref.expand_shape %keep [[0, 1, 2], [3]] output_shape [1, 1, 1, 16] : memref<1x16xi8, "gm"> into memref<1x1x1x16xi8, "gm">
  %mask = memref.alloc() : memref<1x1x1x16xf32, "gm">
  "ascend.select"(%keep4, %zero, %min, %mask) : (memref<1x1x1x16xi8, "gm">, memref<1x1x1x1xf32, "gm">, memref<1x1x1x1xf32, "gm">, memref<1x1x1x16xf32, "gm">) -> ()
  %t0 = memref.alloc() : memref<1x2x16x16xf32, "gm">
  // expected-remark @+1 {{npu-canonicalize: a constant bias and a mask added to the scores combined into one where(mask, bias, fill)}}
  "ascend.add"(%s0, %bias, %t0) : (memref<1x2x16x16xf32, "gm">, memref<1x2x16x16xf32, "gm">, memref<1x2x16x16xf32, "gm">) -> ()
  "ascend.add"(%t0, %mask, %y0) : (memref<1x2x16x16xf32, "gm">, memref<1x1x1x16xf32, "gm">, memref<1x2x16x16xf32, "gm">) -> ()
  %t1 = memref.alloc() : memref<1x2x16x16xf32, "gm">
  // expected-remark @+1 {{npu-canonicalize: a constant bias and a mask added to the scores combined into one where(mask, bias, fill)}}
  "ascend.add"(%s1, %bias, %t1) : (memref<1x2x16x16xf32, "gm">, memref<1x2x16x16xf32, "gm">, memref<1x2x16x16xf32, "gm">) -> ()
  "ascend.add"(%mask, %t1, %y1) : (memref<1x1x1x16xf32, "gm">, memref<1x2x16x16xf32, "gm">, memref<1x2x16x16xf32, "gm">) -> ()
  return
}

// -----

// A fill of -10000 does not absorb the bias (0.5 - 10000 is not -10000):
// combining would change the masked scores, so nothing moves.
// CHECK-LABEL: func.func @fill_that_keeps_the_bias
// CHECK-COUNT-2: "ascend.add"
// CHECK:       return
func.func @fill_that_keeps_the_bias(
    %s0: memref<1x2x16x16xf32, "gm">, %keep: memref<1x1x1x16xi8, "gm">,
    %bias: memref<1x2x16x16xf32, "gm"> {npu.constant = dense<0.5> : tensor<1x2x16x16xf32>},
    %zero: memref<1x1x1x1xf32, "gm"> {npu.constant = dense<0.0> : tensor<1x1x1x1xf32>},
    %fill: memref<1x1x1x1xf32, "gm"> {npu.constant = dense<-1.0E+4> : tensor<1x1x1x1xf32>},
    %y0: memref<1x2x16x16xf32, "gm">) {
  %mask = memref.alloc() : memref<1x1x1x16xf32, "gm">
  "ascend.select"(%keep, %zero, %fill, %mask) : (memref<1x1x1x16xi8, "gm">, memref<1x1x1x1xf32, "gm">, memref<1x1x1x1xf32, "gm">, memref<1x1x1x16xf32, "gm">) -> ()
  %t0 = memref.alloc() : memref<1x2x16x16xf32, "gm">
  "ascend.add"(%s0, %bias, %t0) : (memref<1x2x16x16xf32, "gm">, memref<1x2x16x16xf32, "gm">, memref<1x2x16x16xf32, "gm">) -> ()
  "ascend.add"(%t0, %mask, %y0) : (memref<1x2x16x16xf32, "gm">, memref<1x1x1x16xf32, "gm">, memref<1x2x16x16xf32, "gm">) -> ()
  return
}

// -----

// A bias that is an input, not a constant: its values are not known, so
// nothing moves.
// CHECK-LABEL: func.func @bias_not_constant
// CHECK:       "ascend.select"
// CHECK-COUNT-2: "ascend.add"
func.func @bias_not_constant(
    %s0: memref<1x2x16x16xf32, "gm">, %keep: memref<1x1x1x16xi8, "gm">, %bias: memref<1x2x16x16xf32, "gm">,
    %zero: memref<1x1x1x1xf32, "gm"> {npu.constant = dense<0.0> : tensor<1x1x1x1xf32>},
    %min: memref<1x1x1x1xf32, "gm"> {npu.constant = dense<-3.40282347E+38> : tensor<1x1x1x1xf32>},
    %y0: memref<1x2x16x16xf32, "gm">) {
  %mask = memref.alloc() : memref<1x1x1x16xf32, "gm">
  "ascend.select"(%keep, %zero, %min, %mask) : (memref<1x1x1x16xi8, "gm">, memref<1x1x1x1xf32, "gm">, memref<1x1x1x1xf32, "gm">, memref<1x1x1x16xf32, "gm">) -> ()
  %t0 = memref.alloc() : memref<1x2x16x16xf32, "gm">
  "ascend.add"(%s0, %bias, %t0) : (memref<1x2x16x16xf32, "gm">, memref<1x2x16x16xf32, "gm">, memref<1x2x16x16xf32, "gm">) -> ()
  "ascend.add"(%t0, %mask, %y0) : (memref<1x2x16x16xf32, "gm">, memref<1x1x1x16xf32, "gm">, memref<1x2x16x16xf32, "gm">) -> ()
  return
}
