"""Constant additions to attention scores made one per-(window, head) bias.

torchvision's Swin adds to the scores of its windows [B*nW, H, S, S] a
relative-position bias [1, H, S, S] (one per head, shared by the windows)
and, in a shifted block, a window mask [1, nW, 1, S, S] between two
Reshapes (to [B, nW, H, S, S] and back). npu-fuse-attention takes a mask
shared by every head or one per head of the scores; neither form is this,
so each block ran as two batch matmuls and a softmax in GM. Both addends
are constants: their sum, broadcast to the scores' shape, is one constant
[B*nW, H, S, S] added to the MatMul's scores, which the fused kernel reads
tile by tile (1.8 MB for Swin-T's first stage). Only done when the result
stays under `MAX_BYTES` and no intermediate value has another reader.

Scores with two or more leading dims ([nW, H, S, S]) are added and
normalised as [1, nW*H, S, S] between two Reshapes: the kernel's heads are
the flat (window, head) pairs, and npu-split-cores cuts a tensor along one
dim of them; on [nW, H, S, S] it found none (no dim holds nW*H), and every
window attention of Swin-T's first three stages ran on one core.
"""

from __future__ import annotations

import numpy as np

# The largest bias written (a tool limit: the model grows by this per attention).
MAX_BYTES = 16 << 20


def _single_reader(name: str, readers: dict, outputs: set) -> bool:
    return len(readers.get(name, [])) == 1 and name not in outputs


def merge_attention_biases(model, types: dict | None) -> list[str]:
    """Rewrite (in place) the additions of constants between a MatMul's
    [.., S, S] scores and their Softmax; the names of the Softmax nodes."""
    if types is None or not any(n.op_type == "Softmax" for n in model.graph.node):
        return []
    from onnx import numpy_helper

    from npu.frontend.onnx_expansion import readers_of

    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    producer = {o: n for n in graph.node for o in n.output}
    readers = readers_of(graph)
    outputs = {o.name for o in graph.output}
    done, dead, new_inits = [], set(), []
    added: list = []  # the flat-heads Reshapes
    for softmax in graph.node:
        if softmax.op_type != "Softmax":
            continue
        found = _chain(softmax.input[0], producer, inits, readers, outputs)
        if found is None:
            continue
        matmul_out, chain = found
        shape, elem = types.get(matmul_out, (None, 0))
        if shape is None or elem != 1 or len(shape) < 3 or shape[-1] != shape[-2]:
            continue
        total = np.zeros(shape, np.float32)
        try:
            for kind, node in chain:  # from the MatMul towards the Softmax
                if kind == "reshape":
                    total = total.reshape(types[node.output[0]][0])
                else:
                    const = next(i for i in node.input if i in inits)
                    total = total + numpy_helper.to_array(inits[const]).astype(np.float32)
        except (ValueError, TypeError, KeyError):  # a broadcast or reshape that does not fit
            continue
        if list(total.shape) != list(shape) or total.nbytes > MAX_BYTES:
            continue
        if len(chain) == 1 and _kernel_takes(numpy_helper.to_array(inits[next(
                i for i in chain[0][1].input if i in inits)]).shape, shape):
            continue  # a mask the fused kernel takes as it is
        last = chain[-1][1]
        first_add = chain[0][1]
        name = f"{first_add.name}/window_bias"
        first_add.output[0] = last.output[0]
        dead.update(id(node) for _, node in chain[1:])
        done.append(softmax.name)
        if sum(d != 1 for d in shape[:-2]) < 2:
            new_inits.append(numpy_helper.from_array(total, name))
            first_add.input[:] = [matmul_out, name]
            continue
        flat = [1, int(np.prod(shape[:-2])), shape[-2], shape[-1]]
        new_inits.append(numpy_helper.from_array(total.reshape(flat), name))
        flat_scores = f"{first_add.name}/flat_heads"
        added.append(_reshape_node(matmul_out, flat, flat_scores, new_inits))
        first_add.input[:] = [flat_scores, name]
        first_add.output[0] = softmax.input[0] = f"{first_add.name}/flat_biased"
        probabilities = softmax.output[0]
        softmax.output[0] = f"{softmax.name}/flat_heads"
        added.append(_reshape_node(softmax.output[0], shape, probabilities, new_inits))
        for value in (flat_scores, first_add.output[0], softmax.output[0]):
            types[value] = (flat, elem)
    if done:
        graph.initializer.extend(new_inits)
        kept = [n for n in graph.node if id(n) not in dead]
        del graph.node[:]
        for n in kept:  # each Reshape right after the node it reads
            graph.node.extend([n] + [r for r in added if r.input[0] in n.output])
    return done


def _reshape_node(source: str, dims: list[int], out: str, new_inits: list):
    from onnx import helper, numpy_helper

    new_inits.append(numpy_helper.from_array(np.array(dims, np.int64), f"{out}/shape"))
    return helper.make_node("Reshape", [source, f"{out}/shape"], [out], name=out)


def _kernel_takes(mask_shape: tuple, scores_shape: list[int]) -> bool:
    """A key mask, a mask shared by all heads or one per head (every
    leading dim of the scores): what `costmodel.attention.key_mask` takes."""
    lead = [d for d in mask_shape[:-2] if d != 1]
    return len(mask_shape) < 2 or not lead or lead == [d for d in scores_shape[:-2] if d != 1] \
        or list(mask_shape[-2:]) != list(scores_shape[-2:])


def _chain(value: str, producer: dict, inits: dict, readers: dict, outputs: set):
    """(the MatMul's scores, [(kind, node)] from the MatMul's reader to the
    Softmax's input) when the Softmax reads MatMul + constant [+ Reshapes
    and constant Adds], every value read once; else None."""
    chain = []
    while True:
        node = producer.get(value)
        if node is None or not _single_reader(value, readers, outputs):
            return None
        if node.op_type == "Reshape" and node.input[1] in inits:
            chain.append(("reshape", node))
            value = node.input[0]
            continue
        if node.op_type != "Add" or len(node.input) != 2:
            return None
        consts = [i for i in node.input if i in inits]
        if len(consts) != 1:
            return None
        chain.append(("add", node))
        other = node.input[0] if node.input[1] in inits else node.input[1]
        source = producer.get(other)
        if source is not None and source.op_type == "MatMul":
            chain.reverse()
            if chain[0][0] != "add" or not _single_reader(other, readers, outputs):
                return None
            reshapes = [n for k, n in chain if k == "reshape"]
            return (other, chain) if len(reshapes) % 2 == 0 else None
        value = other
