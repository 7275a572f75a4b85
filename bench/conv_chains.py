"""What keeping a conv's result on chip for the next 1x1 conv would save (one
core): every pair of a CNN where a conv's result, through its epilogue
(BatchNorm, Add, ReLU, Clip), is the input map of a 1x1 stride-1 conv
(ResNet-50's conv3 -> next block's conv1 and conv2 -> conv3, MobileNetV2's
projection -> next expansion; the totals keep 1x1 and kxk producers apart).

Fused M tile by M tile, the consumer would take each band of the map from
the producer's drained tiles (UB -> L1 on MTE3) instead of GM -> L1 (MTE2);
the producer still writes the map to GM where others read it (the residual).
Per pair:
  map        the consumer's input map (bytes it no longer reads from GM)
  excl       the consumer's exclusive cycles in the compiled model
  ideal      its ideal as `bench/conv.py` has it: max(cube, its GM bytes / the
             gm_to_l1 rate), with the map read from GM
  fused      the same ideal without the map
  ub->l1     the producer's added MTE3 cycles (the map at the ub_to_l1 rate)
  prod       the producer's bound in the model (cycles, unit) and its MTE3
             cycles (result bytes at ub_to_gm) + ub->l1
  (a map no other op reads need not reach GM: its store goes too, its
  bytes count twice in the totals' GM bytes)
  rows       the M tiles (output rows per band) `choose_tiling` gives the
             producer and the consumer alone: fused, the consumer's bands must
             be the producer's (or whole multiples of them)
  gain       excl - the consumer's floor (max of fused, its own bound when not
             its map's GM path, its f32 drain at the l0c_to_ub rate), at most
             the map's GM read time, less the ub->l1 cycles the producer's
             bound cannot hide (its MTE3 past its bound): an upper estimate of
             the pair's saving, which assumes the pair's units overlap as well
             as each conv's alone do

    .venv/bin/python bench/conv_chains.py [--models resnet50,mobilenetv2] [--size 224] [--width 1.0]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

EPILOGUE_OPS = ("Add", "Relu", "Clip", "BatchNormalization")  # (BN folds into the conv)


def pairs(model) -> list[tuple[str, str, str, list[str]]]:
    """(producer conv, consumer conv, the map's name, the map's other readers)
    of every 1x1 stride-1 conv whose input map a conv made through elementwise ops."""
    made = {o: n for n in model.graph.node for o in n.output}
    readers: dict[str, list] = {}
    for n in model.graph.node:
        for i in n.input:
            readers.setdefault(i, []).append(n)
    found = []
    for node in model.graph.node:
        if node.op_type != "Conv":
            continue
        attrs = {a.name: list(a.ints) if a.ints else a.i for a in node.attribute}
        if attrs.get("group", 1) != 1 or attrs.get("strides", [1, 1]) != [1, 1] \
                or any(attrs.get("pads", [0] * 4)) or attrs.get("kernel_shape", [1, 1]) != [1, 1]:
            continue
        src = made.get(node.input[0])
        while src is not None and src.op_type in EPILOGUE_OPS:  # an Add's first operand: the main path
            src = made.get(src.input[0])
        if src is None or src.op_type != "Conv":
            continue
        others = [r.name for r in readers[node.input[0]] if r is not node]
        found.append((src.name, node.name, node.input[0], others))
    return found


def short(name: str) -> str:
    return name.strip("/").replace("/Conv", "")[-38:]


def m_rows(spec, target) -> int:
    """Output rows per band `choose_tiling` gives the conv alone (`bench/conv.py`'s module)."""
    import conv as conv_bench
    from npu.costmodel.conv.tiling import choose_tiling, conv_shape
    from npu.ir import functions, make_context, parse_module

    text, _ = conv_bench.conv_module(*spec)
    module = parse_module(text, make_context())
    op = next(o for o in functions(module)[0].regions[0].blocks[0].operations
              if o.operation.name == "ascend.conv2d")
    return choose_tiling(conv_shape(op.operation), target).rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="resnet50")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--width", type=float, default=1.0, help="a ResNet's stem channels / 64")
    args = ap.parse_args(argv)

    import npu
    from cnn import build
    from cnn_breakdown import conv_specs
    from npu.target import get_target

    target = get_target("ascend910")
    rate = {p: target.path(p).bytes_per_cycle for p in ("gm_to_l1", "ub_to_gm", "ub_to_l1", "l0c_to_ub")}
    for name in args.models.split(","):  # (one compile and one timing-only run each)
        model = build(name, args.size, args.width)
        kernel = npu.compile(model, target="ascend910", cores=1)
        x = np.random.default_rng(0).standard_normal((1, 3, args.size, args.size)).astype(np.float16)
        _, report = kernel(x, numerics=False)
        ops = {r["op"].split(" (")[0]: r for r in report["per_op"]}
        specs = conv_specs(model)
        print(f"{name} {args.size}x{args.size} one core: {report['cycles']} cycles")
        print(f"{'producer -> consumer':<40} {'map':>10} {'excl':>7} {'ideal':>7} {'fused':>7} {'ub->l1':>7} "
              f"{'prod bound':>14} {'prod MTE3':>9} {'rows':>5} {'gain':>7}  other readers")
        tots = {k: dict(n=0, bytes=0, excl=0.0, ideal=0.0, fused=0.0, copy=0.0, gain=0.0) for k in (1, 3)}
        for prod, cons, _, others in pairs(model):
            if prod not in specs:  # a grouped (depthwise) producer: left out
                print(f"(left out: {prod} -> {cons}, a grouped producer)")
                continue
            c, h, w, cout, _, _, _ = specs[cons]
            pc, ph, pw, pcout, pk, ps, pp = specs[prod]
            nbytes = 2 * c * h * w
            cube = h * w * cout * c / 4096
            gm = 2 * (c * h * w + cout * c + cout * h * w)
            ideal = max(cube, gm / rate["gm_to_l1"])
            fused = max(cube, (gm - nbytes) / rate["gm_to_l1"])
            copy = nbytes / rate["ub_to_l1"]
            excl = ops[cons]["exclusive_cycles"]
            p = ops[prod]
            # read by the consumer alone, the map need not reach GM at all
            mte3 = (2 * pcout * h * w / rate["ub_to_gm"] if others else 0.0) + copy
            # the consumer's floor once fused: its fused ideal, its own bound where
            # that is not its map's GM path, its f32 accumulators' drain on V
            q = ops[cons]
            own = q["bound_cycles"] if not q["bound_unit"].startswith(("path:gm", "MTE2")) else 0
            floor = max(fused, own, 4 * cout * h * w / rate["l0c_to_ub"])
            # no more than the map's own GM read time
            gain = max(0.0, min(excl - floor, nbytes / rate["gm_to_l1"])
                       - max(0.0, mte3 - p["bound_cycles"]))
            rows = f"{m_rows(specs[prod], target)}/{m_rows(specs[cons], target)}"
            tot = tots[1 if pk == 1 else 3]
            tot["n"] += 1
            for k, v in (("bytes", nbytes * (1 if others else 2)), ("excl", excl), ("ideal", ideal),
                         ("fused", fused), ("copy", copy), ("gain", gain)):
                tot[k] += v
            print(f"{pk}x{pk} -> {short(cons):<34} {nbytes:>10,} {excl:>7,.0f} {ideal:>7,.0f} {fused:>7,.0f} "
                  f"{copy:>7,.0f} {p['bound_cycles']:>7,} {p['bound_unit'][-6:]:>6} {mte3:>9,.0f} "
                  f"{rows:>5} {gain:>7,.0f}  {','.join(short(o) for o in others)}")
        for k, tot in tots.items():
            print(f"producers {'1x1' if k == 1 else 'kxk'}: {tot['n']} pairs, GM bytes -{tot['bytes']:,} "
                  f"({tot['bytes'] / rate['gm_to_l1']:,.0f} mover cycles); "
                  f"consumers {tot['excl']:,.0f} cycles, ideal {tot['ideal']:,.0f} -> fused "
                  f"{tot['fused']:,.0f}; "
                  f"ub->l1 {tot['copy']:,.0f} MTE3 cycles; estimated gain {tot['gain']:,.0f} cycles "
                  f"({report['cycles']:,} -> {report['cycles'] - tot['gain']:,.0f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
