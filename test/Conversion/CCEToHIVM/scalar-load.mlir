// RUN: npu-opt %s --npu-lower-cce-to-hivm | FileCheck %s

// A scalar load of a GM i32 (a gather's index) becomes hivm.load_gm_scalar
// at its byte address: a loop index needs one hivm.addr (argument #1 starts
// at byte 512 of the argument area: #0 is 128 f32), a constant index folds
// into an i64 constant. cf.assert stays as it is.
// CHECK-LABEL: func.func @scalar_load
// CHECK-DAG: %[[C:.*]] = arith.constant 524 : i64
// CHECK: %[[A:.*]] = "hivm.addr"(%{{.*}}) {base = 512 : i64, scales = array<i64: 4>} : (index) -> i64
// CHECK: %[[X:.*]] = "hivm.load_gm_scalar"(%[[A]]) : (i64) -> i32
// CHECK: %[[Y:.*]] = "hivm.load_gm_scalar"(%[[C]]) : (i64) -> i32
// CHECK: cf.assert
func.func @scalar_load(%t: memref<128xf32, "gm">, %a: memref<8xi32, "gm">) {
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c8 step %c1 {
    %x = memref.load %a[%i] : memref<8xi32, "gm">
    %y = memref.load %a[%c3] : memref<8xi32, "gm">
    %ok = arith.cmpi slt, %x, %y : i32
    cf.assert %ok, "ids in order"
  }
  return
}
