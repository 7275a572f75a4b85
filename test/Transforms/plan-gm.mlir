// RUN: not npu-opt %s --split-input-file --npu-plan-gm 2>/dev/null | FileCheck %s
// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-plan-gm="remarks=true" -o %t
// RUN: not npu-opt %s --split-input-file --npu-plan-gm="algorithm=pushdown" 2>/dev/null | FileCheck %s --check-prefix=PUSH

// A chain: %a dies at the second op, so %c reuses its bytes; %b is live with
// both. The allocs become views of one workspace argument.
// CHECK-LABEL: func.func @chain_reuse
// CHECK-SAME: %[[WS:arg[0-9]+]]: memref<8192xi8, "gm"> {npu.workspace}
// CHECK-SAME: npu.gm_plan = {algorithm = "{{.*}}", allocated = 8192 : i64, lower_bound = 8192 : i64, sum = 12288 : i64, tensors = 3 : i64}
// CHECK: %[[OA:c[0-9_]+]] = arith.constant [[A:[0-9]+]] : index
// CHECK: memref.view %[[WS]][%[[OA]]][] : memref<8192xi8, "gm"> to memref<1024xf32, "gm">
// CHECK: %[[OB:c[0-9_]+]] = arith.constant [[B:[0-9]+]] : index
// CHECK: memref.view %[[WS]][%[[OB]]][] : memref<8192xi8, "gm"> to memref<1024xf32, "gm">
// CHECK: %[[OC:c[0-9_]+]] = arith.constant [[A]] : index
// CHECK: memref.view %[[WS]][%[[OC]]][] : memref<8192xi8, "gm"> to memref<1024xf32, "gm">
// CHECK-NOT: memref.alloc
// CHECK: return
// PUSH-LABEL: func.func @chain_reuse
// PUSH-SAME: npu.gm_plan = {algorithm = "pushdown", allocated = 8192 : i64
// expected-remark@+1 {{gm workspace: allocated 8192 B, lower bound 8192 B, sum of sizes 12288 B (3 tensors,}}
func.func @chain_reuse(%in: memref<1024xf32, "gm">, %out: memref<1024xf32, "gm">) {
  %a = memref.alloc() : memref<1024xf32, "gm">
  "ascend.relu"(%in, %a) : (memref<1024xf32, "gm">, memref<1024xf32, "gm">) -> ()
  %b = memref.alloc() : memref<1024xf32, "gm">
  "ascend.exp"(%a, %b) : (memref<1024xf32, "gm">, memref<1024xf32, "gm">) -> ()
  %c = memref.alloc() : memref<1024xf32, "gm">
  "ascend.exp"(%b, %c) : (memref<1024xf32, "gm">, memref<1024xf32, "gm">) -> ()
  "ascend.relu"(%c, %out) : (memref<1024xf32, "gm">, memref<1024xf32, "gm">) -> ()
  return
}

// -----

// %a's last use is through a reshape (a collapse_shape of it): it stays live
// until then, so %b, allocated in between, cannot take its bytes; %c,
// allocated after, can. %b's last use is through an expand_shape after %c is
// made, so %b and %c stay apart. The reshapes now start from the views.
// CHECK-LABEL: func.func @uses_through_views
// CHECK-SAME: memref<2048xi8, "gm"> {npu.workspace}
// CHECK-SAME: allocated = 2048 : i64, lower_bound = 2048 : i64, sum = 3072 : i64, tensors = 3
// CHECK: %[[OA:c[0-9_]+]] = arith.constant [[A:[0-9]+]] : index
// CHECK: %[[VA:view[0-9_]*]] = memref.view %{{.*}}[%[[OA]]][] : memref<2048xi8, "gm"> to memref<16x32xf16, "gm">
// CHECK: %[[OB:c[0-9_]+]] = arith.constant [[B:[0-9]+]] : index
// CHECK: %[[VB:view[0-9_]*]] = memref.view %{{.*}}[%[[OB]]][] : memref<2048xi8, "gm"> to memref<512xf16, "gm">
// CHECK: %[[AF:.*]] = memref.collapse_shape %[[VA]] {{\[\[}}0, 1]]
// CHECK: "ascend.neg"(%[[AF]], %[[VB]])
// CHECK: %[[OC:c[0-9_]+]] = arith.constant [[A]] : index
// CHECK: %[[VC:view[0-9_]*]] = memref.view %{{.*}}[%[[OC]]][]
// CHECK: memref.expand_shape %[[VB]]
// expected-remark@+1 {{gm workspace: allocated 2048 B, lower bound 2048 B, sum of sizes 3072 B}}
func.func @uses_through_views(%in: memref<16x32xf16, "gm">, %out: memref<512xf16, "gm">) {
  %a = memref.alloc() : memref<16x32xf16, "gm">
  "ascend.relu"(%in, %a) : (memref<16x32xf16, "gm">, memref<16x32xf16, "gm">) -> ()
  %b = memref.alloc() : memref<512xf16, "gm">
  %af = memref.collapse_shape %a [[0, 1]] : memref<16x32xf16, "gm"> into memref<512xf16, "gm">
  "ascend.neg"(%af, %b) : (memref<512xf16, "gm">, memref<512xf16, "gm">) -> ()
  %c = memref.alloc() : memref<512xf16, "gm">
  "ascend.relu"(%b, %c) : (memref<512xf16, "gm">, memref<512xf16, "gm">) -> ()
  %bx = memref.expand_shape %b [[0, 1]] output_shape [16, 32] : memref<512xf16, "gm"> into memref<16x32xf16, "gm">
  "ascend.relu"(%bx, %in) : (memref<16x32xf16, "gm">, memref<16x32xf16, "gm">) -> ()
  "ascend.relu"(%c, %out) : (memref<512xf16, "gm">, memref<512xf16, "gm">) -> ()
  return
}

// -----

// Allocs hoisted to the top: a lifetime starts at the first use, not at the
// alloc, so %c still takes %a's bytes.
// CHECK-LABEL: func.func @hoisted_allocs
// CHECK-SAME: allocated = 8192 : i64, lower_bound = 8192 : i64, sum = 12288 : i64
// CHECK: arith.constant [[A:[0-9]+]] : index
// CHECK: arith.constant [[B:[0-9]+]] : index
// CHECK: arith.constant [[A]] : index
// expected-remark@+1 {{gm workspace: allocated 8192 B, lower bound 8192 B}}
func.func @hoisted_allocs(%in: memref<1024xf32, "gm">, %out: memref<1024xf32, "gm">) {
  %a = memref.alloc() : memref<1024xf32, "gm">
  %b = memref.alloc() : memref<1024xf32, "gm">
  %c = memref.alloc() : memref<1024xf32, "gm">
  "ascend.relu"(%in, %a) : (memref<1024xf32, "gm">, memref<1024xf32, "gm">) -> ()
  "ascend.exp"(%a, %b) : (memref<1024xf32, "gm">, memref<1024xf32, "gm">) -> ()
  "ascend.exp"(%b, %c) : (memref<1024xf32, "gm">, memref<1024xf32, "gm">) -> ()
  "ascend.relu"(%c, %out) : (memref<1024xf32, "gm">, memref<1024xf32, "gm">) -> ()
  return
}

// -----

// Sizes are whole units of the workspace alignment (512 B on ascend910): a
// 20-byte tensor takes 512. Deallocs are erased and do not extend a lifetime.
// CHECK-LABEL: func.func @alignment_and_dealloc
// CHECK-SAME: memref<1024xi8, "gm"> {npu.workspace}
// CHECK-SAME: allocated = 1024 : i64, lower_bound = 1024 : i64, sum = 1536 : i64
// CHECK-NOT: memref.dealloc
// CHECK: return
// expected-remark@+1 {{gm workspace: allocated 1024 B, lower bound 1024 B, sum of sizes 1536 B (3 tensors}}
func.func @alignment_and_dealloc(%in: memref<10xf16, "gm">, %out: memref<10xf16, "gm">) {
  %a = memref.alloc() : memref<10xf16, "gm">
  "ascend.relu"(%in, %a) : (memref<10xf16, "gm">, memref<10xf16, "gm">) -> ()
  %b = memref.alloc() : memref<10xf16, "gm">
  "ascend.relu"(%a, %b) : (memref<10xf16, "gm">, memref<10xf16, "gm">) -> ()
  %c = memref.alloc() : memref<10xf16, "gm">
  "ascend.relu"(%b, %c) : (memref<10xf16, "gm">, memref<10xf16, "gm">) -> ()
  "ascend.relu"(%c, %out) : (memref<10xf16, "gm">, memref<10xf16, "gm">) -> ()
  memref.dealloc %a : memref<10xf16, "gm">
  memref.dealloc %b : memref<10xf16, "gm">
  memref.dealloc %c : memref<10xf16, "gm">
  return
}

// -----

// A use inside a loop keeps the tensor live for the whole loop, and a tensor
// allocated in the loop body is live there too: %a, %b and %c are live
// together, %d (after the loop) reuses one of them.
// CHECK-LABEL: func.func @loops_are_conservative
// CHECK-SAME: allocated = 6144 : i64, lower_bound = 6144 : i64, sum = 8192 : i64, tensors = 4
// CHECK: scf.for
// CHECK: memref.view
// CHECK: }
// expected-remark@+1 {{gm workspace: allocated 6144 B, lower bound 6144 B, sum of sizes 8192 B (4 tensors}}
func.func @loops_are_conservative(%in: memref<512xf32, "gm">, %out: memref<512xf32, "gm">) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc() : memref<512xf32, "gm">
  "ascend.relu"(%in, %a) : (memref<512xf32, "gm">, memref<512xf32, "gm">) -> ()
  %c = memref.alloc() : memref<512xf32, "gm">
  scf.for %i = %c0 to %c2 step %c1 {
    %b = memref.alloc() : memref<512xf32, "gm">
    "ascend.exp"(%a, %b) : (memref<512xf32, "gm">, memref<512xf32, "gm">) -> ()
    "ascend.relu"(%b, %c) : (memref<512xf32, "gm">, memref<512xf32, "gm">) -> ()
  }
  %d = memref.alloc() : memref<512xf32, "gm">
  "ascend.relu"(%c, %d) : (memref<512xf32, "gm">, memref<512xf32, "gm">) -> ()
  "ascend.relu"(%d, %out) : (memref<512xf32, "gm">, memref<512xf32, "gm">) -> ()
  return
}

// -----

// A tensor that leaves the function is not a temporary: it stays an alloc.
// CHECK-LABEL: func.func @escaping_alloc_is_left
// CHECK-SAME: memref<512xi8, "gm"> {npu.workspace}
// CHECK-SAME: tensors = 1
// CHECK: memref.view
// CHECK: %[[R:.*]] = memref.alloc() : memref<64xf32, "gm">
// CHECK: return %[[R]]
// expected-remark@+1 {{gm workspace: allocated 512 B, lower bound 512 B, sum of sizes 512 B (1 tensors, greedy-by-size; 1 gm allocs left unplanned)}}
func.func @escaping_alloc_is_left(%in: memref<64xf32, "gm">) -> memref<64xf32, "gm"> {
  %t = memref.alloc() : memref<64xf32, "gm">
  "ascend.relu"(%in, %t) : (memref<64xf32, "gm">, memref<64xf32, "gm">) -> ()
  %r = memref.alloc() : memref<64xf32, "gm">
  "ascend.exp"(%t, %r) : (memref<64xf32, "gm">, memref<64xf32, "gm">) -> ()
  return %r : memref<64xf32, "gm">
}

// -----

// Nothing to plan (no GM allocs; on-chip allocs are npu-plan-memory's): the
// function is left as it is, without a workspace.
// CHECK-LABEL: func.func @nothing_to_plan
// CHECK-NOT: npu.workspace
// CHECK-NOT: npu.gm_plan
// CHECK: memref.alloc() : memref<64xf32, "ub">
func.func @nothing_to_plan(%in: memref<64xf32, "gm">, %out: memref<64xf32, "gm">) {
  %u = memref.alloc() : memref<64xf32, "ub">
  "ascend.relu"(%in, %out) : (memref<64xf32, "gm">, memref<64xf32, "gm">) -> ()
  return
}

// -----

// Existing argument attributes are kept; the workspace comes last.
// CHECK-LABEL: func.func @keeps_arg_attrs
// CHECK-SAME: %{{.*}}: memref<64xf32, "gm"> {my.tag = 1 : i64}, %{{.*}}: memref<64xf32, "gm">, %{{.*}}: memref<512xi8, "gm"> {npu.workspace}
// expected-remark@+1 {{gm workspace}}
func.func @keeps_arg_attrs(%in: memref<64xf32, "gm"> {my.tag = 1 : i64}, %out: memref<64xf32, "gm">) {
  %t = memref.alloc() : memref<64xf32, "gm">
  "ascend.relu"(%in, %t) : (memref<64xf32, "gm">, memref<64xf32, "gm">) -> ()
  "ascend.relu"(%t, %out) : (memref<64xf32, "gm">, memref<64xf32, "gm">) -> ()
  return
}

// -----

// A function that is called cannot get a new argument.
func.func @callee(%in: memref<64xf32, "gm">, %out: memref<64xf32, "gm">) {
  %t = memref.alloc() : memref<64xf32, "gm">
  "ascend.relu"(%in, %t) : (memref<64xf32, "gm">, memref<64xf32, "gm">) -> ()
  "ascend.relu"(%t, %out) : (memref<64xf32, "gm">, memref<64xf32, "gm">) -> ()
  return
}

func.func @caller(%in: memref<64xf32, "gm">, %out: memref<64xf32, "gm">) {
  // expected-error@+1 {{npu-plan-gm cannot add a workspace argument to '@callee': it is called here}}
  func.call @callee(%in, %out) : (memref<64xf32, "gm">, memref<64xf32, "gm">) -> ()
  return
}

// -----

// Lifetimes follow op order in one block; branches between blocks are not
// supported.
// expected-error@+1 {{npu-plan-gm orders lifetimes by the ops of one block; this function has several (unstructured control flow)}}
func.func @blocks(%in: memref<64xf32, "gm">, %out: memref<64xf32, "gm">) {
  %t = memref.alloc() : memref<64xf32, "gm">
  "ascend.relu"(%in, %t) : (memref<64xf32, "gm">, memref<64xf32, "gm">) -> ()
  cf.br ^bb1
^bb1:
  "ascend.relu"(%t, %out) : (memref<64xf32, "gm">, memref<64xf32, "gm">) -> ()
  return
}

// -----

// On a kernel of 4 cores, a temporary a lowering made for its own op
// (npu.core_private: a transpose's rotation) takes one slice per core, each
// core's view at its block index times the slice; a chip-wide temporary
// (%shared) keeps one set of bytes for all cores.
// CHECK-LABEL: func.func @core_private_slices
// CHECK-SAME: %[[BLK:arg[0-9]+]]: index {npu.block_idx}
// CHECK-SAME: %[[WS:arg[0-9]+]]: memref<{{[0-9]+}}xi8, "gm"> {npu.workspace}
// CHECK-SAME: sum = 20480 : i64, tensors = 2
// CHECK: %[[BASE:c[0-9_]+]] = arith.constant {{[0-9]+}} : index
// CHECK: %[[SLICE:c[0-9_]+]] = arith.constant 4096 : index
// CHECK: %[[MINE:[0-9]+]] = arith.muli %[[BLK]], %[[SLICE]] : index
// CHECK: %[[AT:[0-9]+]] = arith.addi %[[BASE]], %[[MINE]] : index
// CHECK: memref.view %[[WS]][%[[AT]]][] : memref<{{[0-9]+}}xi8, "gm"> to memref<1024xf32, "gm">
// CHECK-NOT: memref.alloc
// CHECK: return
// expected-remark@+1 {{gm workspace: allocated}}
func.func @core_private_slices(%in: memref<1024xf32, "gm">, %out: memref<1024xf32, "gm">, %blk: index {npu.block_idx}) attributes {npu.block_dim = 4 : i64} {
  %priv = memref.alloc() {npu.core_private} : memref<1024xf32, "gm">
  "ascend.relu"(%in, %priv) : (memref<1024xf32, "gm">, memref<1024xf32, "gm">) -> ()
  %shared = memref.alloc() : memref<1024xf32, "gm">
  "ascend.exp"(%priv, %shared) : (memref<1024xf32, "gm">, memref<1024xf32, "gm">) -> ()
  "ascend.relu"(%shared, %out) : (memref<1024xf32, "gm">, memref<1024xf32, "gm">) -> ()
  return
}
