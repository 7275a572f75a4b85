"""A patch-embedding `Conv` (a ViT's first layer) written as a MatMul.

A convolution of an image (fewer than 16 channels) whose kernel equals its
stride (16 or more), without padding, dilation or groups, cuts it into disjoint p x p
patches and applies one linear map to each: a matmul of the patches [N, Hp*Wp, C*p*p] by the weight reshaped
[C*p*p, O]. That is written out here with Reshape/Transpose (rank 4 at
most), a constant weight (reshaped and transposed on the host) and MatMul,
so the cube runs it. The MatMul carries the Conv's node name; the other
nodes are named after it. Any other Conv is left as it is, 1x1 convs
included: as `ascend.conv2d` their results stay NC1HWC0 for the next conv.
"""

from __future__ import annotations

import numpy as np


# Only an image's few channels (under one f16 C0 block of 16) make the conv
# pad its reduction (3 -> 16); with more, `ascend.conv2d` runs the patches
# without waste and keeps NC1HWC0, where the rewrite's transposes of a
# feature map (ConvNeXt's 2x2 downsampling over 96 channels: [96, 784, 4])
# would not fit UB.
PATCH_CHANNELS_BELOW = 16
# Only patches whose rows are whole f16 blocks (16 elements) are cut for the
# matmul: the rewrite's transposes move runs of p elements, and shorter runs
# are element gathers the scalar unit issues a few elements at a time.
# img2col gathers them in hardware (ascend910, a 224x224 image, 3 channels,
# cycles on 1 / 32 cores as a matmul and as ascend.conv2d): ConvNeXt's 4x4
# stem to 96 channels 701,564 / 29,550 and 85,978 / 16,246; 8x8 to 128
# 126,754 / 36,137 and 54,555 / 13,749; ViT's 16x16 to 768 130,295 / 24,791
# and 206,511 / 23,866 (the small-channel K, 4 x 256, is 4/3 of 3 x 256).
PATCH_SIZE_FROM = 16


def rewrite_patch_convs(model) -> list[str]:
    """Rewrite (in place) every patch-embedding Conv with a constant weight;
    the names of the Convs rewritten."""
    from onnx import numpy_helper

    from npu.frontend.onnx_fold import inferred_types

    if not any(n.op_type == "Conv" for n in model.graph.node):
        return []
    types = inferred_types(model) or {}
    inits = {t.name: t for t in model.graph.initializer}
    done, nodes, new_inits = [], [], []
    for node in model.graph.node:
        plan = _patch_plan(node, types, inits)
        if plan is None:
            nodes.append(node)
            continue
        weight = numpy_helper.to_array(inits[node.input[1]])
        made, made_inits = _as_matmul(node, plan, weight)
        nodes.extend(made)
        new_inits.extend(made_inits)
        done.append(node.name)
    if done:
        from npu.frontend.onnx_fold import remove_dead_nodes, replace_nodes

        model.graph.initializer.extend(new_inits)
        replace_nodes(model.graph, nodes)
        remove_dead_nodes(model)
    return done


def _patch_plan(node, types, inits) -> tuple[int, int, int, int, int, int] | None:
    """(N, C, H, W, O, p) when `node` is a patch-embedding Conv we rewrite."""
    if node.op_type != "Conv" or node.domain not in ("", "ai.onnx") or len(node.input) < 2:
        return None
    if node.input[1] not in inits or (len(node.input) > 2 and node.input[2] and node.input[2] not in inits):
        return None
    x, elem = types.get(node.input[0], (None, 0))
    w = list(inits[node.input[1]].dims)
    if x is None or len(x) != 4 or len(w) != 4 or elem != 1:
        return None
    attrs = {a.name: a for a in node.attribute}
    p = w[2]
    if w[3] != p or w[1] != x[1] or p < 2:  # a 1x1 conv stays a conv: NC1HWC0 between convs
        return None
    ints = {name: list(attrs[name].ints) for name in ("strides", "pads", "dilations", "kernel_shape")
            if name in attrs}
    if ints.get("strides", [1, 1]) != [p, p] or any(ints.get("pads", [0])) or \
            ints.get("dilations", [1, 1]) != [1, 1] or ints.get("kernel_shape", [p, p]) != [p, p]:
        return None
    if ("group" in attrs and attrs["group"].i != 1) or \
            ("auto_pad" in attrs and attrs["auto_pad"].s not in (b"NOTSET", b"VALID")):
        return None
    n, c, h, wd = x
    if h % p or wd % p or c >= PATCH_CHANNELS_BELOW or p < PATCH_SIZE_FROM:
        return None
    return n, c, h, wd, w[0], p


def _as_matmul(node, plan, weight: np.ndarray) -> tuple[list, list]:
    """The nodes and initializers computing `node` as patches @ weight."""
    from onnx import helper, numpy_helper

    n, c, h, w, o, p = plan
    hp, wp = h // p, w // p
    base, out = node.name, node.output[0]
    inits, nodes = [], []

    def shape(name: str, dims: list[int]) -> str:
        inits.append(numpy_helper.from_array(np.array(dims, np.int64), f"{out}/{name}_shape"))
        return f"{out}/{name}_shape"

    def add(op: str, inputs: list[str], suffix: str, name: str | None = None, **attrs) -> str:
        result = f"{out}/{suffix}" if suffix else out
        nodes.append(helper.make_node(op, inputs, [result], name=name or f"{base}/{suffix}", **attrs))
        return result

    # [N, C, H, W] -> [N*C*Hp, p, Wp, p] -> [N*C*Hp, Wp, p, p] -> [N, C, Hp*Wp, p*p]
    # -> [N, Hp*Wp, C, p*p] -> [N, Hp*Wp, C*p*p]
    t = add("Reshape", [node.input[0], shape("rows", [n * c * hp, p, wp, p])], "rows")
    t = add("Transpose", [t], "cut", perm=[0, 2, 1, 3])
    t = add("Reshape", [t, shape("patches_by_channel", [n, c, hp * wp, p * p])], "patches_by_channel")
    t = add("Transpose", [t], "gather", perm=[0, 2, 1, 3])
    t = add("Reshape", [t, shape("patches", [n, hp * wp, c * p * p])], "patches")
    kernel = f"{out}/kernel"
    inits.append(numpy_helper.from_array(
        np.ascontiguousarray(weight.reshape(o, c * p * p).T).astype(weight.dtype), kernel))
    t = add("MatMul", [t, kernel], "matmul", name=base)
    if len(node.input) > 2 and node.input[2]:
        t = add("Add", [t, node.input[2]], "bias")
    # [N, Hp*Wp, O] -> [N, O, Hp*Wp] -> [N, O, Hp, Wp]
    t = add("Transpose", [t], "channels_first", perm=[0, 2, 1])
    add("Reshape", [t, shape("image", [n, o, hp, wp])], "", name=f"{base}/image")
    return nodes, inits


def check_convs(model, fail) -> None:
    """Convs we cannot run, one located error naming the node and the
    attribute: other than 2-D, or a kernel (dilated) larger than the padded
    input (checked before shape inference, whose message would name no node)."""
    from npu.frontend.onnx_fold import inferred_types

    convs = [n for n in model.graph.node if n.op_type in ("Conv", "ConvInteger")
             and n.domain in ("", "ai.onnx")]
    if not convs:
        return
    types = inferred_types(model) or {}
    inits = {t.name: list(t.dims) for t in model.graph.initializer}
    for node in convs:
        where = f"node '{node.name}' ({node.op_type})"
        attrs = {a.name: a for a in node.attribute}
        w = inits.get(node.input[1]) if len(node.input) > 1 else None
        if w is None:
            w = (types.get(node.input[1], (None, 0))[0] if len(node.input) > 1 else None)
        kernel = list(attrs["kernel_shape"].ints) if "kernel_shape" in attrs else (w[2:] if w else None)
        if kernel is not None and len(kernel) != 2:
            raise fail(f"{where}: attribute 'kernel_shape' has {len(kernel)} dimensions: only "
                       f"{'2-D' if node.op_type == 'ConvInteger' else '1-D and 2-D'} convolutions compile")
        x = types.get(node.input[0], (None, 0))[0]
        if x is None or len(x) != 4 or kernel is None:
            continue
        auto = attrs["auto_pad"].s.decode() if "auto_pad" in attrs else "NOTSET"
        if auto not in ("NOTSET", "VALID"):
            continue  # SAME_*: the padding fits the kernel by construction
        pads = list(attrs["pads"].ints) if "pads" in attrs and auto == "NOTSET" else [0, 0, 0, 0]
        dil = list(attrs["dilations"].ints) if "dilations" in attrs else [1, 1]
        for d, name in enumerate(("height", "width")):
            span = dil[d] * (kernel[d] - 1) + 1
            padded = x[2 + d] + pads[d] + pads[d + 2]
            if span > padded:
                raise fail(f"{where}: attribute 'kernel_shape': the kernel spans {span} along the "
                           f"{name} (dilations included), more than the padded input's {padded}")
