// The three loop orders of thesis 6.4.1 on the BERT shape (512, 768, 768),
// the cost model's choice per strategy, `auto`, and explicit tiles.
// RUN: npu-opt %s --npu-lower-matmul="strategy=is" 2>&1 | FileCheck %s --check-prefix=IS
// RUN: npu-opt %s --npu-lower-matmul="strategy=is m=32 n=768 k=32" 2>&1 | FileCheck %s --check-prefix=IS1
// RUN: npu-opt %s --npu-lower-matmul="strategy=ws" 2>&1 | FileCheck %s --check-prefix=WS
// RUN: npu-opt %s --npu-lower-matmul="strategy=auto" 2>&1 | FileCheck %s --check-prefix=AUTO
// RUN: npu-opt %s --npu-lower-matmul="m=128 n=256 k=128" 2>&1 | FileCheck %s --check-prefix=OS128
// RUN: npu-opt %s --npu-lower-matmul="n=64" 2>&1 | FileCheck %s --check-prefix=N64

// Input-stationary: the A tile is loaded once per (x, s) and stays in L0A
// while the inner loop streams B tiles; partial sums of the whole C row
// strip (m x K) stay in L0C across the reduction loop.
// IS: remark: matmul tiling: strategy=is tiles (m=80, n=400, k=80); modelled GM traffic: read 4521984 elements (A 393216, B 4128768)
// IS-LABEL: func.func @bert
// IS:       scf.for %[[X:.*]] = %c0{{.*}} to %c30{{.*}} step %c5{{.*}} {
// IS-NEXT:    %[[STRIP:.*]] = memref.alloc() : memref<240x16x16xf32, "l0c">
// First reduction step (n = 400): the A tile is loaded once ...
// IS:         scf.for %[[S:.*]] = %c0{{.*}} to %c25{{.*}} step %c25{{.*}} {
// IS:           memref.subview %arg0[%[[S]], %[[X]], 0, 0] [25, 5, 16, 16]
// IS:           %[[A0:.*]] = memref.alloc() : memref<5x25x16x16xf16, "l0a">
// ... and stays in L0A while the B tiles stream past it.
// IS:           scf.for %[[Y:.*]] = %c0{{.*}} to %c45{{.*}} step %c5{{.*}} {
// IS:             memref.alloc() : memref<25x5x16x16xf16, "l0b">
// IS:             "cce.mad"(%[[A0]], %{{.*}}, %{{.*}}) {accumulate = false, k = 80 : i64, m = 80 : i64, n = 400 : i64}
// IS:           }
// IS:           scf.for
// IS:             "cce.mad"(%[[A0]], %{{.*}}, %{{.*}}) {accumulate = false, k = 48 : i64, m = 80 : i64, n = 400 : i64}
// The second (edge) reduction step, n = 368, accumulates into the strip.
// IS:         scf.for %{{.*}} = %c25{{.*}} to %c48{{.*}} step %c23{{.*}} {
// IS:           %[[A0E:.*]] = memref.alloc() : memref<5x23x16x16xf16, "l0a">
// IS:           scf.for
// IS:             "cce.mad"(%[[A0E]], %{{.*}}, %{{.*}}) {accumulate = true, k = 80 : i64, m = 80 : i64, n = 368 : i64}
// The strip leaves after the reduction, one C tile at a time.
// IS:         scf.for
// IS:           "cce.copy_l0c_to_ub"
// IS:           "cce.copy_ub_to_gm"

// With the whole reduction in one step (n = N) no strip is needed: each C
// tile is written right after its single mad. This is the thesis's IS (32,768,32).
// IS1: remark: matmul tiling: strategy=is tiles (m=32, n=768, k=32); modelled GM traffic: read 9830400 elements (A 393216, B 9437184)
// IS1-LABEL: func.func @bert
// IS1:       scf.for %[[X:.*]] = %c0{{.*}} to %c32{{.*}} step %c2{{.*}} {
// IS1:         %[[A0:.*]] = memref.alloc() : memref<2x48x16x16xf16, "l0a">
// IS1:         scf.for %[[Y:.*]] = %c0{{.*}} to %c48{{.*}} step %c2{{.*}} {
// IS1-NEXT:      memref.alloc() : memref<2x2x16x16xf32, "l0c">
// IS1:           "cce.mad"(%[[A0]], %{{.*}}, %{{.*}}) {accumulate = false, k = 32 : i64, m = 32 : i64, n = 768 : i64}
// IS1-NOT:       "cce.mad"
// IS1:           "cce.copy_ub_to_gm"

// Weight-stationary: the B tile stays in L0B while A tiles stream; the C
// column strip (M x k) accumulates in L0C.
// WS: remark: matmul tiling: strategy=ws tiles (m=128, n=256, k=128); modelled GM traffic: read 2949120 elements (A 2359296, B 589824)
// WS-LABEL: func.func @bert
// WS:       scf.for %[[Y:.*]] = %c0{{.*}} to %c48{{.*}} step %c8{{.*}} {
// WS-NEXT:    %[[STRIP:.*]] = memref.alloc() : memref<256x16x16xf32, "l0c">
// WS:         scf.for %[[S:.*]] = %c0{{.*}} to %c48{{.*}} step %c16{{.*}} {
// WS:           %[[FIRST:.*]] = arith.cmpi eq, %[[S]], %c0{{.*}} : index
// WS:           memref.subview %arg1[%[[Y]], %[[S]], 0, 0] [8, 16, 16, 16]
// WS:           %[[B0:.*]] = memref.alloc() : memref<16x8x16x16xf16, "l0b">
// WS:           scf.for %[[X:.*]] = %c0{{.*}} to %c32{{.*}} step %c8{{.*}} {
// WS:             memref.alloc() : memref<8x16x16x16xf16, "l0a">
// WS:             scf.if %[[FIRST]] {
// WS-NEXT:          "cce.mad"(%{{.*}}, %[[B0]], %{{.*}}) {accumulate = false, k = 128 : i64, m = 128 : i64, n = 256 : i64}
// WS-NEXT:        } else {
// WS-NEXT:          "cce.mad"(%{{.*}}, %[[B0]], %{{.*}}) {accumulate = true, k = 128 : i64, m = 128 : i64, n = 256 : i64}
// The strip leaves after the reduction, one C tile per x.
// WS:         scf.for %{{.*}} = %c0{{.*}} to %c32{{.*}} step %c8{{.*}} {
// WS:           "cce.copy_l0c_to_ub"
// WS:           "cce.copy_ub_to_gm"

// auto compares the three: OS wins for this shape.
// AUTO: remark: matmul tiling: strategy=os tiles (m=256, n=128, k=256); modelled GM traffic: read 2359296 elements

// Explicit tiles override the model; (128, 256, 128) reads twice as much.
// OS128: remark: matmul tiling: strategy=os tiles (m=128, n=256, k=128); modelled GM traffic: read 4718592 elements (A 2359296, B 2359296)
// OS128-LABEL: func.func @bert
// OS128:       scf.for {{.*}} = %c0{{.*}} to %c32{{.*}} step %c8{{.*}} {
// OS128:         scf.for {{.*}} = %c0{{.*}} to %c48{{.*}} step %c8{{.*}} {
// OS128:           scf.for {{.*}} = %c0{{.*}} to %c48{{.*}} step %c16{{.*}} {
// OS128:             "cce.mad"({{.*}}) {accumulate = false, k = 128 : i64, m = 128 : i64, n = 256 : i64}
// OS128:             "cce.mad"({{.*}}) {accumulate = true, k = 128 : i64, m = 128 : i64, n = 256 : i64}

// Fixing one edge lets the model choose the others.
// N64: remark: matmul tiling: strategy=os tiles (m=256, n=64, k=256); modelled GM traffic: read 2359296 elements
func.func @bert(%a: memref<48x32x16x16xf16, "gm">, %b: memref<48x48x16x16xf16, "gm">,
                %c: memref<48x32x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<48x32x16x16xf16, "gm">, memref<48x48x16x16xf16, "gm">, memref<48x32x16x16xf32, "gm">) -> ()
  return
}
