// Two-layer MLP: y = relu(x W1 + b1) W2 + b2, x 128x256, W1 256x512,
// W2 512x256 (fp16 on the cube, fp32 results and biases).
func.func @mlp(%x: memref<128x256xf16, "gm">, %w1: memref<256x512xf16, "gm">, %b1: memref<512xf32, "gm">,
               %w2: memref<512x256xf16, "gm">, %b2: memref<256xf32, "gm">, %y: memref<128x256xf32, "gm">) {
  %xn = memref.alloc() : memref<16x8x16x16xf16, "gm">
  "ascend.fractalize"(%x, %xn) : (memref<128x256xf16, "gm">, memref<16x8x16x16xf16, "gm">) -> ()
  %w1n = memref.alloc() : memref<32x16x16x16xf16, "gm">
  "ascend.fractalize"(%w1, %w1n) : (memref<256x512xf16, "gm">, memref<32x16x16x16xf16, "gm">) -> ()
  %hn = memref.alloc() : memref<32x8x16x16xf32, "gm">
  "ascend.matmul"(%xn, %w1n, %hn) : (memref<16x8x16x16xf16, "gm">, memref<32x16x16x16xf16, "gm">, memref<32x8x16x16xf32, "gm">) -> ()
  %h = memref.alloc() : memref<128x512xf32, "gm">
  "ascend.defractalize"(%hn, %h) : (memref<32x8x16x16xf32, "gm">, memref<128x512xf32, "gm">) -> ()
  %hb = memref.alloc() : memref<128x512xf32, "gm">
  "ascend.add"(%h, %b1, %hb) : (memref<128x512xf32, "gm">, memref<512xf32, "gm">, memref<128x512xf32, "gm">) -> ()
  %hr = memref.alloc() : memref<128x512xf32, "gm">
  "ascend.relu"(%hb, %hr) : (memref<128x512xf32, "gm">, memref<128x512xf32, "gm">) -> ()
  %hh = memref.alloc() : memref<128x512xf16, "gm">
  "ascend.cast"(%hr, %hh) {round_mode = "rint"} : (memref<128x512xf32, "gm">, memref<128x512xf16, "gm">) -> ()
  %hhn = memref.alloc() : memref<32x8x16x16xf16, "gm">
  "ascend.fractalize"(%hh, %hhn) : (memref<128x512xf16, "gm">, memref<32x8x16x16xf16, "gm">) -> ()
  %w2n = memref.alloc() : memref<16x32x16x16xf16, "gm">
  "ascend.fractalize"(%w2, %w2n) : (memref<512x256xf16, "gm">, memref<16x32x16x16xf16, "gm">) -> ()
  %yn = memref.alloc() : memref<16x8x16x16xf32, "gm">
  "ascend.matmul"(%hhn, %w2n, %yn) : (memref<32x8x16x16xf16, "gm">, memref<16x32x16x16xf16, "gm">, memref<16x8x16x16xf32, "gm">) -> ()
  %yd = memref.alloc() : memref<128x256xf32, "gm">
  "ascend.defractalize"(%yn, %yd) : (memref<16x8x16x16xf32, "gm">, memref<128x256xf32, "gm">) -> ()
  "ascend.add"(%yd, %b2, %y) : (memref<128x256xf32, "gm">, memref<256xf32, "gm">, memref<128x256xf32, "gm">) -> ()
  return
}
