// RUN: npu-opt %s | npu-opt | FileCheck %s
// Every hivm op parses, verifies and prints back (generic form), twice.
// Config words are packed as in dialects/README.md (see dialects/hivm.py).

// CHECK-LABEL: func.func @copies(
// CHECK:      %c51539869712_i64 = arith.constant 51539869712 : i64
// CHECK-NEXT: "hivm.copy_gm_to_l1"(%arg2, %arg0, %c51539869712_i64) : (i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.copy_gm_to_ub"(%arg1, %arg0, %c51539869712_i64) : (i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.copy_ub_to_gm"(%arg0, %arg1, %c51539869712_i64) : (i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.copy_ub_to_l1"(%arg2, %arg1, %c51539869712_i64) : (i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.copy_ub_to_ub"(%arg1, %arg1, %c51539869712_i64) : (i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.copy_l0c_to_ub"(%arg1, %arg3, %c51539869712_i64) : (i64, i64, i64) -> ()
// CHECK-NEXT: %c1056769_i64 = arith.constant 1056769 : i64
// CHECK-NEXT: "hivm.copy_l0c_to_ub"(%arg1, %arg3, %c1056769_i64) : (i64, i64, i64) -> ()
// CHECK-NEXT: return
func.func @copies(%gm: i64, %ub: i64, %l1: i64, %l0c: i64) {
  // n_burst 16, burst_len 4, src_gap 12, dst_gap 0.
  %cfg = arith.constant 51539869712 : i64
  "hivm.copy_gm_to_l1"(%l1, %gm, %cfg) : (i64, i64, i64) -> ()
  "hivm.copy_gm_to_ub"(%ub, %gm, %cfg) : (i64, i64, i64) -> ()
  "hivm.copy_ub_to_gm"(%gm, %ub, %cfg) : (i64, i64, i64) -> ()
  "hivm.copy_ub_to_l1"(%l1, %ub, %cfg) : (i64, i64, i64) -> ()
  "hivm.copy_ub_to_ub"(%ub, %ub, %cfg) : (i64, i64, i64) -> ()
  "hivm.copy_l0c_to_ub"(%ub, %l0c, %cfg) : (i64, i64, i64) -> ()
  // n_burst 1, burst_len 16, convert 2 (f32_to_f16_relu: the move's ReLU).
  %relu = arith.constant 1056769 : i64
  "hivm.copy_l0c_to_ub"(%ub, %l0c, %relu) : (i64, i64, i64) -> ()
  return
}

// CHECK-LABEL: func.func @cube(
// CHECK:      %c288230376151777281_i64 = arith.constant 288230376151777281 : i64
// CHECK-NEXT: %c144115192370888706_i64 = arith.constant 144115192370888706 : i64
// CHECK-NEXT: "hivm.load_l1_to_l0a"(%arg1, %arg0, %c288230376151777281_i64) : (i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.load_l1_to_l0b"(%arg2, %arg0, %c144115192370888706_i64) : (i64, i64, i64) -> ()
// CHECK-NEXT: %c-9223372036317773792_i64 = arith.constant -9223372036317773792 : i64
// CHECK-NEXT: %c1073872912_i64 = arith.constant 1073872912 : i64
// CHECK-NEXT: "hivm.mad"(%arg3, %arg1, %arg2, %c-9223372036317773792_i64) {dtype = f16} : (i64, i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.mad"(%arg3, %arg1, %arg2, %c1073872912_i64) {dtype = i8} : (i64, i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.mad"(%arg3, %arg1, %arg2, %arg4) {dtype = f16} : (i64, i64, i64, i64) -> ()
// CHECK-NEXT: return
func.func @cube(%l1: i64, %a: i64, %b: i64, %c: i64, %runtime_cfg: i64) {
  // repeat 4, strides 1, no transpose; then repeat 2, src_stride 2, transpose.
  %load = arith.constant 288230376151777281 : i64
  %load_t = arith.constant 144115192370888706 : i64
  "hivm.load_l1_to_l0a"(%a, %l1, %load) : (i64, i64, i64) -> ()
  "hivm.load_l1_to_l0b"(%b, %l1, %load_t) : (i64, i64, i64) -> ()
  // m = k = n = 32 with init (bit 63); then m 16, k 32, n 64 accumulating.
  %mad_init = arith.constant -9223372036317773792 : i64
  %mad_acc = arith.constant 1073872912 : i64
  "hivm.mad"(%c, %a, %b, %mad_init) {dtype = f16} : (i64, i64, i64, i64) -> ()
  "hivm.mad"(%c, %a, %b, %mad_acc) {dtype = i8} : (i64, i64, i64, i64) -> ()
  // A config computed at run time is not checked statically.
  "hivm.mad"(%c, %a, %b, %runtime_cfg) {dtype = f16} : (i64, i64, i64, i64) -> ()
  return
}

// CHECK-LABEL: func.func @vector(
// CHECK:      %c144124018662899969_i64 = arith.constant 144124018662899969 : i64
// CHECK-NEXT: %c0_i64 = arith.constant 0 : i64
// CHECK-NEXT: %c-1_i64 = arith.constant -1 : i64
// CHECK-NEXT: "hivm.set_vector_mask"(%c0_i64, %c-1_i64) : (i64, i64) -> ()
// CHECK-NEXT: "hivm.vadd"(%arg0, %arg1, %arg2, %c144124018662899969_i64) {dtype = f16} : (i64, i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.vsub"(%arg0, %arg1, %arg2, %c144124018662899969_i64) {dtype = f32} : (i64, i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.vmul"(%arg0, %arg1, %arg2, %c144124018662899969_i64) {dtype = i32} : (i64, i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.vdiv"(%arg0, %arg1, %arg2, %c144124018662899969_i64) {dtype = f16} : (i64, i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.vmax"(%arg0, %arg1, %arg2, %c144124018662899969_i64) {dtype = f16} : (i64, i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.vmin"(%arg0, %arg1, %arg2, %c144124018662899969_i64) {dtype = f32} : (i64, i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.vadds"(%arg0, %arg1, %c144124018662899969_i64) {dtype = f16, scalar = 1.000000e+00 : f64} : (i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.vmuls"(%arg0, %arg1, %c144124018662899969_i64) {dtype = f16, scalar = -1.000000e+00 : f64} : (i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.vmaxs"(%arg0, %arg1, %c144124018662899969_i64) {dtype = f32, scalar = 0.000000e+00 : f64} : (i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.vmins"(%arg0, %arg1, %c144124018662899969_i64) {dtype = f32, scalar = 6.000000e+00 : f64} : (i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.vrelu"(%arg0, %arg1, %c144124018662899969_i64) {dtype = f16} : (i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.vabs"(%arg0, %arg1, %c144124018662899969_i64) {dtype = f16} : (i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.vexp"(%arg0, %arg1, %c144124018662899969_i64) {dtype = f16} : (i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.vln"(%arg0, %arg1, %c144124018662899969_i64) {dtype = f32} : (i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.vsqrt"(%arg0, %arg1, %c144124018662899969_i64) {dtype = f32} : (i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.vrsqrt"(%arg0, %arg1, %c144124018662899969_i64) {dtype = f16} : (i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.vrec"(%arg0, %arg1, %c144124018662899969_i64) {dtype = f16} : (i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.vconv"(%arg0, %arg1, %c144124018662899969_i64) {dtype = f32, round_mode = "none", src_dtype = f16} : (i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.vdup"(%arg0, %c144124018662899969_i64) {dtype = f16, scalar = 0.000000e+00 : f64} : (i64, i64) -> ()
// CHECK-NEXT: "hivm.vcadd"(%arg0, %arg1, %c144124018662899969_i64) {dtype = f16} : (i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.vcmax"(%arg0, %arg1, %c144124018662899969_i64) {dtype = f32} : (i64, i64, i64) -> ()
// CHECK-NEXT: %c72057594037927936_i64 = arith.constant 72057594037927936 : i64
// CHECK-NEXT: "hivm.vnchwconv"(%arg0, %arg1, %c72057594037927936_i64) {dst_offsets = array<i64: 0, 16, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240>, dtype = f16, src_offsets = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15>} : (i64, i64, i64) -> ()
// CHECK-NEXT: return
func.func @vector(%d: i64, %x: i64, %y: i64) {
  // All block strides 1, repeat strides 8, repeat 2.
  %cfg = arith.constant 144124018662899969 : i64
  %hi = arith.constant 0 : i64
  %lo = arith.constant -1 : i64
  "hivm.set_vector_mask"(%hi, %lo) : (i64, i64) -> ()
  "hivm.vadd"(%d, %x, %y, %cfg) {dtype = f16} : (i64, i64, i64, i64) -> ()
  "hivm.vsub"(%d, %x, %y, %cfg) {dtype = f32} : (i64, i64, i64, i64) -> ()
  "hivm.vmul"(%d, %x, %y, %cfg) {dtype = i32} : (i64, i64, i64, i64) -> ()
  "hivm.vdiv"(%d, %x, %y, %cfg) {dtype = f16} : (i64, i64, i64, i64) -> ()
  "hivm.vmax"(%d, %x, %y, %cfg) {dtype = f16} : (i64, i64, i64, i64) -> ()
  "hivm.vmin"(%d, %x, %y, %cfg) {dtype = f32} : (i64, i64, i64, i64) -> ()
  "hivm.vadds"(%d, %x, %cfg) {dtype = f16, scalar = 1.0 : f64} : (i64, i64, i64) -> ()
  "hivm.vmuls"(%d, %x, %cfg) {dtype = f16, scalar = -1.0 : f64} : (i64, i64, i64) -> ()
  "hivm.vmaxs"(%d, %x, %cfg) {dtype = f32, scalar = 0.0 : f64} : (i64, i64, i64) -> ()
  "hivm.vmins"(%d, %x, %cfg) {dtype = f32, scalar = 6.0 : f64} : (i64, i64, i64) -> ()
  "hivm.vrelu"(%d, %x, %cfg) {dtype = f16} : (i64, i64, i64) -> ()
  "hivm.vabs"(%d, %x, %cfg) {dtype = f16} : (i64, i64, i64) -> ()
  "hivm.vexp"(%d, %x, %cfg) {dtype = f16} : (i64, i64, i64) -> ()
  "hivm.vln"(%d, %x, %cfg) {dtype = f32} : (i64, i64, i64) -> ()
  "hivm.vsqrt"(%d, %x, %cfg) {dtype = f32} : (i64, i64, i64) -> ()
  "hivm.vrsqrt"(%d, %x, %cfg) {dtype = f16} : (i64, i64, i64) -> ()
  "hivm.vrec"(%d, %x, %cfg) {dtype = f16} : (i64, i64, i64) -> ()
  "hivm.vconv"(%d, %x, %cfg) {dtype = f32, src_dtype = f16, round_mode = "none"} : (i64, i64, i64) -> ()
  "hivm.vdup"(%d, %cfg) {dtype = f16, scalar = 0.0 : f64} : (i64, i64) -> ()
  "hivm.vcadd"(%d, %x, %cfg) {dtype = f16} : (i64, i64, i64) -> ()
  "hivm.vcmax"(%d, %x, %cfg) {dtype = f32} : (i64, i64, i64) -> ()
  // repeat 1, repeat strides 0.
  %nchw = arith.constant 72057594037927936 : i64
  "hivm.vnchwconv"(%d, %x, %nchw) {dtype = f16, src_offsets = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15>, dst_offsets = array<i64: 0, 16, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240>} : (i64, i64, i64) -> ()
  return
}

// vcmp packs its predicate in bits 48-50 of the compare word; vsel has the
// select word (4-bit block strides of dst, cond, src0, src1; 8-bit repeat
// strides); vcmin is a vector-word reduction.
// CHECK-LABEL: func.func @compare_select(
// CHECK:      %c144686968549212417_i64 = arith.constant 144686968549212417 : i64
// CHECK-NEXT: %c144124018596253969_i64 = arith.constant 144124018596253969 : i64
// CHECK-NEXT: %c144115222452371712_i64 = arith.constant 144115222452371712 : i64
// CHECK:      "hivm.vcmp"(%arg0, %arg1, %arg2, %c144686968549212417_i64) {dtype = f16} : (i64, i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.vsel"(%arg1, %arg0, %arg1, %arg2, %c144124018596253969_i64) {dtype = f16} : (i64, i64, i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.vcmin"(%arg1, %arg2, %c144115222452371712_i64) {dtype = f32} : (i64, i64, i64) -> ()
// CHECK-NEXT: return
func.func @compare_select(%mask: i64, %x: i64, %y: i64) {
  // 0x0202_0808_0401_0101: predicate 2 (lt), dst rep 4 (i8), src rep 8, repeat 2.
  %cmp = arith.constant 144686968549212417 : i64
  // 0x0200_0808_0408_1111: block strides 1, rep strides dst 8, cond 4, src 8, repeat 2.
  %sel = arith.constant 144124018596253969 : i64
  // 0x0200_0008_0100_0100: src0 blk 1, src0 rep 8, dst rep 1, repeat 2.
  %red = arith.constant 144115222452371712 : i64
  %hi = arith.constant -1 : i64
  "hivm.set_vector_mask"(%hi, %hi) : (i64, i64) -> ()
  "hivm.vcmp"(%mask, %x, %y, %cmp) {dtype = f16} : (i64, i64, i64, i64) -> ()
  "hivm.vsel"(%x, %mask, %x, %y, %sel) {dtype = f16} : (i64, i64, i64, i64, i64) -> ()
  "hivm.vcmin"(%x, %y, %red) {dtype = f32} : (i64, i64, i64) -> ()
  return
}

// CHECK-LABEL: func.func @sync(
// CHECK:      "hivm.set_flag"() {dst = "V", event = 0 : i64, src = "MTE2"} : () -> ()
// CHECK-NEXT: "hivm.wait_flag"() {dst = "V", event = 0 : i64, src = "MTE2"} : () -> ()
// CHECK-NEXT: "hivm.pipe_barrier"() {pipe = "ALL"} : () -> ()
// CHECK-NEXT: "hivm.pipe_barrier"() {pipe = "MTE3"} : () -> ()
// CHECK-NEXT: return
func.func @sync() {
  "hivm.set_flag"() {src = "MTE2", dst = "V", event = 0 : i64} : () -> ()
  "hivm.wait_flag"() {src = "MTE2", dst = "V", event = 0 : i64} : () -> ()
  "hivm.pipe_barrier"() {pipe = "ALL"} : () -> ()
  "hivm.pipe_barrier"() {pipe = "MTE3"} : () -> ()
  return
}

// CHECK-LABEL: func.func @address_arithmetic(
// CHECK:      %[[A:.*]] = "hivm.addr"(%arg0, %arg1) {base = 64 : i64, scales = array<i64: 2, 512>} : (index, index) -> i64
// CHECK-NEXT: "hivm.addr"() {base = 0 : i64, scales = array<i64>} : () -> i64
func.func @address_arithmetic(%i: index, %j: index) {
  %a = "hivm.addr"(%i, %j) {base = 64 : i64, scales = array<i64: 2, 512>} : (index, index) -> i64
  %b = "hivm.addr"() {base = 0 : i64, scales = array<i64>} : () -> i64
  return
}

// Multiply-adds: (dst, src0, src1, config) with the vector word; vaxpy (dst, src, config) + scalar.
// CHECK-LABEL: func.func @multiply_add(
// CHECK:      "hivm.vmadd"(%arg0, %arg1, %arg2, %{{.*}}) {dtype = f32} : (i64, i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.vmla"(%arg0, %arg1, %arg2, %{{.*}}) {dtype = f16} : (i64, i64, i64, i64) -> ()
// CHECK-NEXT: "hivm.vaxpy"(%arg0, %arg1, %{{.*}}) {dtype = f32, scalar = 2.500000e-01 : f64} : (i64, i64, i64) -> ()
// CHECK-NEXT: return
func.func @multiply_add(%d: i64, %x: i64, %y: i64) {
  %cfg = arith.constant 144124018662899969 : i64
  "hivm.vmadd"(%d, %x, %y, %cfg) {dtype = f32} : (i64, i64, i64, i64) -> ()
  "hivm.vmla"(%d, %x, %y, %cfg) {dtype = f16} : (i64, i64, i64, i64) -> ()
  "hivm.vaxpy"(%d, %x, %cfg) {dtype = f32, scalar = 0.25 : f64} : (i64, i64, i64) -> ()
  return
}

// CHECK-LABEL: func.func @img2col(
// CHECK:      "hivm.set_fmatrix"(%c72340172821823497_i64) : (i64) -> ()
// CHECK-NEXT: "hivm.img2col_l1_to_l0a"(%arg1, %arg0, %c-4292866047_i64, %c148636448880341122_i64) : (i64, i64, i64, i64) -> ()
func.func @img2col(%l1: i64, %l0a: i64) {
  // a 9x9 map, every pad 1
  %fm = arith.constant 72340172821823497 : i64
  // c1 1, kernel point (2, 1), window top-left (-1, -1)
  %pos = arith.constant -4292866047 : i64
  // stride 2x2, kernel 3x3, dilation 1x1, dst_stride 1, repeat mode 1, repeat 2
  %cfg = arith.constant 148636448880341122 : i64
  "hivm.set_fmatrix"(%fm) : (i64) -> ()
  "hivm.img2col_l1_to_l0a"(%l0a, %l1, %pos, %cfg) : (i64, i64, i64, i64) -> ()
  return
}

// An int8 map (b8, bit 54 of the config word) whose padded taps take -128:
// the padding register (value 0x80, the pad's byte) is set before it.
// CHECK-LABEL: func.func @img2col_i8(
// CHECK:      "hivm.set_fmatrix"(%c72340172821823497_i64) : (i64) -> ()
// CHECK-NEXT: "hivm.set_padding"(%c128_i64) : (i64) -> ()
// CHECK-NEXT: "hivm.img2col_l1_to_l0a"(%arg1, %arg0, %c-4292866047_i64, %c166650847389823106_i64) : (i64, i64, i64, i64) -> ()
func.func @img2col_i8(%l1: i64, %l0a: i64) {
  %fm = arith.constant 72340172821823497 : i64
  %pad = arith.constant 128 : i64
  %pos = arith.constant -4292866047 : i64
  // the config word of @img2col with b8 = 1
  %cfg = arith.constant 166650847389823106 : i64
  "hivm.set_fmatrix"(%fm) : (i64) -> ()
  "hivm.set_padding"(%pad) : (i64) -> ()
  "hivm.img2col_l1_to_l0a"(%l0a, %l1, %pos, %cfg) : (i64, i64, i64, i64) -> ()
  return
}

// CHECK-LABEL: func.func @sync_all(
// CHECK:      "hivm.sync_all"() : () -> ()
// CHECK-NEXT: return
func.func @sync_all() {
  "hivm.sync_all"() : () -> ()
  return
}
