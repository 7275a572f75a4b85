// One attention head (sequence 128, head 64): softmax(Q K^T / 8) V with the
// row statistics broadcast through [128, 1] reshapes; 15 GM temporaries.
func.func @attention(%q: memref<128x64xf16, "gm">, %k: memref<128x64xf16, "gm">, %v: memref<128x64xf16, "gm">, %o: memref<128x64xf32, "gm">) {
  %kt = memref.alloc() : memref<64x128xf16, "gm">
  "ascend.transpose"(%k, %kt) {permutation = array<i64: 1, 0>} : (memref<128x64xf16, "gm">, memref<64x128xf16, "gm">) -> ()
  %qn = memref.alloc() : memref<4x8x16x16xf16, "gm">
  "ascend.fractalize"(%q, %qn) : (memref<128x64xf16, "gm">, memref<4x8x16x16xf16, "gm">) -> ()
  %ktn = memref.alloc() : memref<8x4x16x16xf16, "gm">
  "ascend.fractalize"(%kt, %ktn) : (memref<64x128xf16, "gm">, memref<8x4x16x16xf16, "gm">) -> ()
  %sn = memref.alloc() : memref<8x8x16x16xf32, "gm">
  "ascend.matmul"(%qn, %ktn, %sn) : (memref<4x8x16x16xf16, "gm">, memref<8x4x16x16xf16, "gm">, memref<8x8x16x16xf32, "gm">) -> ()
  %s = memref.alloc() : memref<128x128xf32, "gm">
  "ascend.defractalize"(%sn, %s) : (memref<8x8x16x16xf32, "gm">, memref<128x128xf32, "gm">) -> ()
  %ss = memref.alloc() : memref<128x128xf32, "gm">
  "ascend.muls"(%s, %ss) {scalar = 0.125 : f64} : (memref<128x128xf32, "gm">, memref<128x128xf32, "gm">) -> ()
  %mx = memref.alloc() : memref<128xf32, "gm">
  "ascend.reduce_max"(%ss, %mx) : (memref<128x128xf32, "gm">, memref<128xf32, "gm">) -> ()
  %mx2 = memref.expand_shape %mx [[0, 1]] output_shape [128, 1] : memref<128xf32, "gm"> into memref<128x1xf32, "gm">
  %d = memref.alloc() : memref<128x128xf32, "gm">
  "ascend.sub"(%ss, %mx2, %d) : (memref<128x128xf32, "gm">, memref<128x1xf32, "gm">, memref<128x128xf32, "gm">) -> ()
  %e = memref.alloc() : memref<128x128xf32, "gm">
  "ascend.exp"(%d, %e) : (memref<128x128xf32, "gm">, memref<128x128xf32, "gm">) -> ()
  %sum = memref.alloc() : memref<128xf32, "gm">
  "ascend.reduce_sum"(%e, %sum) : (memref<128x128xf32, "gm">, memref<128xf32, "gm">) -> ()
  %sum2 = memref.expand_shape %sum [[0, 1]] output_shape [128, 1] : memref<128xf32, "gm"> into memref<128x1xf32, "gm">
  %p = memref.alloc() : memref<128x128xf32, "gm">
  "ascend.div"(%e, %sum2, %p) : (memref<128x128xf32, "gm">, memref<128x1xf32, "gm">, memref<128x128xf32, "gm">) -> ()
  %ph = memref.alloc() : memref<128x128xf16, "gm">
  "ascend.cast"(%p, %ph) {round_mode = "rint"} : (memref<128x128xf32, "gm">, memref<128x128xf16, "gm">) -> ()
  %pn = memref.alloc() : memref<8x8x16x16xf16, "gm">
  "ascend.fractalize"(%ph, %pn) : (memref<128x128xf16, "gm">, memref<8x8x16x16xf16, "gm">) -> ()
  %vn = memref.alloc() : memref<4x8x16x16xf16, "gm">
  "ascend.fractalize"(%v, %vn) : (memref<128x64xf16, "gm">, memref<4x8x16x16xf16, "gm">) -> ()
  %on = memref.alloc() : memref<4x8x16x16xf32, "gm">
  "ascend.matmul"(%pn, %vn, %on) : (memref<8x8x16x16xf16, "gm">, memref<4x8x16x16xf16, "gm">, memref<4x8x16x16xf32, "gm">) -> ()
  "ascend.defractalize"(%on, %o) : (memref<4x8x16x16xf32, "gm">, memref<128x64xf32, "gm">) -> ()
  return
}
