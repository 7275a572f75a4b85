"""Convolution layers on one ascend910 core: cycles against the cube bound.

Each layer is one `ascend.conv2d` in the cube's layout (NC1HWC0 f16 input,
fractal-Z weights, f16 NC1HWC0 output with an f16 bias: fp16 inference), compiled by `npu-lower`
(npu-lower-conv: img2col + mad) and simulated (timing only, every check on).
The layout conversions a network pays at its edges are not part of a layer.

  cycles   simulated cycles of the layer
  cube     the problem's cube bound: real MACs / (16*16*16 per cycle)
  ideal    max(cube, the compulsory GM traffic: the input pixels some window
           reads (a 1x1 stride-2 conv reads a quarter of its map), weights
           and output once each, over the core's GM rate): one core of this
           target cannot beat it (1x1 layers are bound by GM, not by the cube)
  padded   the cube work of the padded problem (C to whole 16-channel blocks,
           Ho*Wo rows to whole fractals per band): what this kernel feeds the cube
  own      the simulator's bound for this program (busiest unit's work)
  x cube   cycles / cube (target: <= 1.3 for 3x3 and 1x1 layers)
  x own    cycles / own (depthwise layers: target <= 1.5)

With --cores N (N > 1) each layer is compiled with `npu-lower{cores=N}`
(npu-split-cores' grid) and simulated as one launch: cycles are its
slowest core's; the bounds stay one core's (x cube and x ideal then read as
one core's bound over the launch's cycles).

Run: .venv/bin/python bench/conv.py [--layers name,...] [--cores N]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from npu.costmodel.conv.depthwise_vector import DwShape, plan as vector_plan
from npu.costmodel.conv.tiling import choose_tiling, conv_shape
from npu.ir import constant_argument, functions, make_context, parse_module
from npu.pipeline import run_pipeline
from npu.simulator import simulate
from npu.target import get_target

# name: (C, H, W, Cout, K, stride, pad)  (ResNet-50 at 224x224, batch 1)
LAYERS = {
    "stem 7x7/2 3->64 224": (3, 224, 224, 64, 7, 2, 3),
    # the same conv reading the NCHW f16 image itself (what a model's stem
    # compiles to: each segment of bands laid out in L1 on the way, no NC1HWC0 copy in GM)
    "stem image 7x7/2 3->64 224": (3, 224, 224, 64, 7, 2, 3),
    "3x3 64->64 56": (64, 56, 56, 64, 3, 1, 1),
    "1x1 64->256 56": (64, 56, 56, 256, 1, 1, 0),
    "1x1 256->64 56": (256, 56, 56, 64, 1, 1, 0),
    "3x3 128->128 28": (128, 28, 28, 128, 3, 1, 1),
    "3x3/2 128->128 56": (128, 56, 56, 128, 3, 2, 1),
    "1x1 512->128 28": (512, 28, 28, 128, 1, 1, 0),
    "1x1/2 256->512 56": (256, 56, 56, 512, 1, 2, 0),
    "3x3 256->256 14": (256, 14, 14, 256, 3, 1, 1),
    "3x3 512->512 7": (512, 7, 7, 512, 3, 1, 1),
    "1x1 1024->256 14": (1024, 14, 14, 256, 1, 1, 0),
    # MobileNetV2's depthwise 3x3 layers (groups = C), in the block-diagonal
    # form (layout "nc1hwc0_bd"): the cube bound counts real MACs, so x cube
    # is at least 16 (one channel of each 16x16 diagonal fractal is real);
    # "padded" and "own" are the bounds of this form.
    "dw 3x3 32 112": (32, 112, 112, 32, 3, 1, 1),
    "dw 3x3/2 144 56": (144, 56, 56, 144, 3, 2, 1),
    "dw 3x3 576 14": (576, 14, 14, 576, 3, 1, 1),
    "dw 3x3 960 7": (960, 7, 7, 960, 3, 1, 1),
}
DEPTHWISE = {name for name in LAYERS if name.startswith("dw ")}
IMAGE = {name for name in LAYERS if " image " in name}


def conv_module(c: int, h: int, w: int, cout: int, k: int, stride: int, pad: int,
                depthwise: bool = False, image: bool = False) -> tuple[str, list]:
    c1, co1 = -(-c // 16), -(-cout // 16)
    ho = (h + 2 * pad - k) // stride + 1
    wo = (w + 2 * pad - k) // stride + 1
    t_x = f'memref<1x{c}x{h}x{w}xf16, "gm">' if image else f'memref<1x{c1}x{h}x{w}x16xf16, "gm">'
    small = c <= 4 and k > 1  # img2col's small-channel mode
    k1 = -(-k * k // 4) if small else k * k if depthwise else c1 * k * k
    form = "nc1hwc0_bd" if depthwise else "nc1hwc0_c4" if small else "nc1hwc0"
    t_w = f'memref<{k1}x{co1}x16x16xf16, "gm">'
    t_b = f'memref<{co1 * 16}xf16, "gm">'
    t_y = f'memref<1x{co1}x{ho}x{wo}x16xf16, "gm">'
    # a depthwise layer's weights are host constants, as a model's are: the
    # vector path loads them as its compact per-channel operand
    # and so are a stem's (npu-lower-conv reorders them and puts its bias in them: stem_fold.py)
    w_attr = (f' {{npu.constant = dense<0.0> : tensor<{k1}x{co1}x16x16xf16>}}'
              if depthwise or image else '')
    b_attr = f' {{npu.constant = dense<0.0> : tensor<{co1 * 16}xf16>}}' if image else ''
    text = (f'func.func @conv(%x: {t_x}, %w: {t_w}{w_attr}, %b: {t_b}{b_attr}, %y: {t_y}) {{\n'
            f'  "ascend.conv2d"(%x, %w, %b, %y) {{strides = array<i64: {stride}, {stride}>, '
            f'pads = array<i64: {pad}, {pad}, {pad}, {pad}>, dilations = array<i64: 1, 1>, '
            f'groups = 1 : i64, layout = "{form}", '
            f'{"group_channels = 1 : i64, " if depthwise else ""}'
            f'kernel = array<i64: {k}, {k}>}} : '
            f'({t_x}, {t_w}, {t_b}, {t_y}) -> ()\n  return\n}}\n')
    inputs = [np.zeros((1, c, h, w) if image else (1, c1, h, w, 16), np.float16), np.zeros((k1, co1, 16, 16), np.float16),
              np.zeros(co1 * 16, np.float16), np.zeros((1, co1, ho, wo, 16), np.float16)]
    return text, inputs


def run(name: str, spec, target, cores: int = 1) -> dict:
    c, h, w, cout, k, stride, pad = spec
    dw = name in DEPTHWISE
    text, inputs = conv_module(*spec, depthwise=dw, image=name in IMAGE)
    module = parse_module(text, make_context())
    # the cube's view of the conv, as npu-lower-conv takes it (its tiling's remark)
    shape = conv_shape(next(op for op in module.body.operations[0].regions[0].blocks[0].operations
                            if op.operation.name == "ascend.conv2d"))
    run_pipeline(module, f"npu-lower{{cores={cores}}}", target)
    weights = constant_argument(functions(module)[0].regions[0].blocks[0].arguments[1])
    if weights is not None:  # npu-lower-conv may have retyped it (compact depthwise weights)
        inputs[1] = weights
    res = simulate(module, inputs, target=target, numerics=False)
    ho = (h + 2 * pad - k) // stride + 1
    wo = (w + 2 * pad - k) // stride + 1
    cin = 1 if dw else c  # input channels per output channel
    cube = ho * wo * cout * cin * k * k / 4096
    gm_bytes = 2 * (c * read_pixels(h, w, k, stride, pad) + cout * cin * k * k + cout * ho * wo)
    ideal = max(cube, gm_bytes / target.path("gm_to_l1").bytes_per_cycle)
    tiling = choose_tiling(shape, target)
    vector = "vmla" in str(module)  # npu-lower-conv put this depthwise conv on the vector unit
    bands = -(-ho // tiling.rows)
    m_fracs = (bands - 1) * tiling.m1 + -(-(ho - (bands - 1) * tiling.rows) * wo // 16)
    padded = m_fracs * shape.co1 * shape.k1
    return dict(name=name, cycles=res.cycles, cube=cube, ideal=ideal, padded=padded,
                own=res.report["bound_cycles"], unit=res.report["bound_unit"],
                tiling=_vector_tiling(spec, target) if vector else
                f"rows {tiling.rows} n1 {tiling.n1} kc {tiling.kc}"
                f"{' w-resident' if tiling.weights_resident else ''}")


def read_pixels(h: int, w: int, k: int, stride: int, pad: int) -> int:
    """Input pixels of one channel that some window reads (all of them
    unless the stride skips rows and columns, as a 1x1 stride-2 conv's)."""
    def read(n: int) -> int:
        out = (n + 2 * pad - k) // stride + 1
        return len({i * stride - pad + j for i in range(out) for j in range(k)} & set(range(n)))
    return read(h) * read(w)


def _vector_tiling(spec, target) -> str:
    """The vector path's plan of a depthwise layer (as npu-lower-conv makes it)."""
    c, h, w, _, k, stride, pad = spec
    ho, wo = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    s = DwShape(1, -(-c // 16), h, w, ho, wo, k, k, (stride, stride), (pad,) * 4, (1, 1), 2, True,
                compact=True)
    p = vector_plan(s, target, target.capacity("ub"))
    return f"vector: {p.blocks} blocks x {p.rows} rows"



def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", default="", help="comma-separated layer names (default: all)")
    p.add_argument("--cores", type=int, default=1, help="cores to split each layer over")
    args = p.parse_args(argv)
    target = get_target("ascend910")
    names = [n for n in LAYERS if not args.layers or n in args.layers.split(",")]
    print(f"{'layer':24} {'cycles':>9} {'cube':>9} {'ideal':>9} {'padded':>9} {'own':>9} "
          f"{'unit':>12} {'x cube':>7} {'x ideal':>7} {'x own':>6}  tiling")
    for name in names:
        r = run(name, LAYERS[name], target, args.cores)
        print(f"{r['name']:24} {r['cycles']:>9,} {r['cube']:>9,.0f} {r['ideal']:>9,.0f} "
              f"{r['padded']:>9,} {r['own']:>9,} {r['unit']:>12} {r['cycles'] / r['cube']:>7.2f} "
              f"{r['cycles'] / r['ideal']:>7.2f} {r['cycles'] / r['own']:>6.2f}  {r['tiling']}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
