"""The sum of two 1x1 convs as one conv over their inputs side by side.

ResNet's first bottleneck block ends in Add(conv3(h), downsample(x)) (BN
folded into both convs, `onnx_batchnorm`); where both are 1x1, stride 1,
over maps of the same height and width, that sum is one 1x1 conv over
Concat(h, x) along channels, its weight [W3 | Wd] and its bias B3 + Bd.
Written so, the downsample's output (Cout channels) is never stored and
read back as the conv's residual, and two kernels become one; the concat
of the NC1HWC0 maps is C1 blocks side by side, each producer writing its
blocks in place (`linalg_to_ascend.slices.concat`). Taken
only where Ch + Cx < Cout (the concat moves fewer bytes than the residual
did: ResNet-50's layer1.0, 64 + 64 < 256) and both inputs are whole C1
blocks (multiples of 16 channels). ResNet-50 on one core 1,747,758 ->
1,728,160 cycles (layer1.0's downsample and conv3, 66,334 cycles, now one
45,064-cycle conv), on 32 cores 292,265 -> 291,689 (one phase and chip
barrier fewer; with x's blocks copied into the concat it was one more,
293,673). The Conv keeps conv3's name
and writes the Add's output; the cube sums the two products in one K
order (the last bits may differ from two rounded f16 results added).
"""

from __future__ import annotations

import numpy as np

C0 = 16  # channels a NC1HWC0 block holds (the concat's granule)


def fold_summed_convs(model) -> list[str]:
    """Rewrite (in place) each Add of two foldable 1x1 convs; the names of
    the Adds rewritten."""
    from onnx import helper, numpy_helper

    from npu.frontend.onnx_fold import (graph_uses, inferred_types, remove_dead_nodes,
                                        replace_nodes)

    graph = model.graph
    if sum(n.op_type == "Conv" for n in graph.node) < 2:
        return []
    types = inferred_types(model) or {}
    uses = graph_uses(graph)
    inits, producers, readers, outputs = uses.inits, uses.producers, uses.readers, uses.outputs
    done, nodes, new_inits, skip = [], [], [], set()
    for node in graph.node:
        pair = _pair(node, producers, inits, readers, outputs, types)
        if pair is None:
            nodes.append(node)
            continue
        (a, wa, ba), (b, wb, bb) = pair
        dtype = wa.dtype
        weight = np.concatenate([wa, wb], axis=1).astype(dtype)
        bias = (ba.astype(np.float64) + bb.astype(np.float64)).astype(dtype)
        w_name, b_name, cat = f"{a.name}/sum_weight", f"{a.name}/sum_bias", f"{a.name}/sum_input"
        new_inits += [numpy_helper.from_array(weight, w_name), numpy_helper.from_array(bias, b_name)]
        nodes.append(helper.make_node("Concat", [a.input[0], b.input[0]], [cat],
                                      name=f"{a.name}/Concat", axis=1))
        nodes.append(helper.make_node("Conv", [cat, w_name, b_name], [node.output[0]], name=a.name,
                                      kernel_shape=[1, 1]))
        skip.update((id(a), id(b)))
        done.append(node.name)
    if done:
        graph.initializer.extend(new_inits)
        replace_nodes(graph, [n for n in nodes if id(n) not in skip])
        remove_dead_nodes(model)
    return done


def _pair(add, producers, inits, readers, outputs, types):
    """((conv, weight, bias), (conv, weight, bias)) of an Add of two
    foldable 1x1 convs (`_conv`) over maps of one shape, else None."""
    if add.op_type != "Add" or add.domain not in ("", "ai.onnx") or len(add.input) != 2:
        return None
    convs = [_conv(producers.get(name), inits, readers, outputs) for name in add.input]
    if any(c is None for c in convs) or convs[0][0] is convs[1][0]:
        return None
    shapes = [types.get(c[0].input[0], (None, 0))[0] for c in convs]
    out = types.get(add.output[0], (None, 0))[0]
    if any(s is None or len(s) != 4 for s in shapes) or out is None:
        return None
    sizes = {tuple(s[2:]) for s in shapes} | {tuple(out[2:])}  # every map's H x W
    if len(sizes) != 1 or shapes[0][0] != shapes[1][0]:
        return None
    ca, cb, cout = shapes[0][1], shapes[1][1], out[1]
    if ca % C0 or cb % C0 or ca + cb >= cout:
        return None
    if convs[0][1].dtype != convs[1][1].dtype:
        return None
    return convs[0], convs[1]


def _conv(conv, inits, readers, outputs):
    """(conv, weight [O, C], bias [O]) of a Conv read once (by the Add) that
    is 1x1, stride 1, unpadded, ungrouped, with constant weight and bias."""
    from onnx import numpy_helper

    if conv is None or conv.op_type != "Conv" or conv.domain not in ("", "ai.onnx"):
        return None
    if len(conv.input) < 2 or conv.input[1] not in inits or readers.get(conv.output[0], 0) != 1:
        return None
    if conv.output[0] in outputs or (len(conv.input) > 2 and conv.input[2] and conv.input[2] not in inits):
        return None
    attrs = {a.name: (list(a.ints) if a.ints else a.i) for a in conv.attribute}
    if any(v != 1 for v in attrs.get("strides", [1, 1]) + attrs.get("dilations", [1, 1])):
        return None
    # (a 1x1 stride-1 conv pads nothing under any auto_pad)
    if any(attrs.get("pads", [0] * 4)) or attrs.get("group", 1) != 1:
        return None
    weight = numpy_helper.to_array(inits[conv.input[1]])
    if weight.ndim != 4 or weight.shape[2:] != (1, 1):
        return None
    bias = (numpy_helper.to_array(inits[conv.input[2]]) if len(conv.input) > 2 and conv.input[2]
            else np.zeros(weight.shape[0], weight.dtype))
    return conv, weight, bias
