"""The same transformer computations written the ways exporters write them,
as ONNX models built with onnx.helper: GELU in its erf and tanh forms and
operand orders, the attention scale on the scores or split over Q and K, K^T
by one or two transposes, pre-norm or post-norm layers. `npu-canonicalize`
must bring every spelling of one computation to the same kernels: the tests
(test/python/fusion/test_spellings*.py) and bench/spellings.py compare them.

The spellings are those of real exports:
  GELU    "canonical"  x*(0.5*(1+erf(x/sqrt2)))
          "torch"      (x*(1+erf(x/sqrt2)))*0.5   torch.onnx below opset 20, examples/ffn_block.onnx
          "hf"         (x*0.5)*(1+erf(x/sqrt2))   HF BERT traced
          "halved"     (x*(1+erf(x/sqrt2)))/2
          "sqrt_half"  x*(0.5*(1+erf(x*sqrt(1/2))))
          "op"         the ONNX Gelu op (opset 20)
          "tanh"       0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*Pow(x,3))))   GPT-2's gelu_new
          "tanh_cube"  the same with x*x*x
          "tanh_torch" 0.5*(x*(1+tanh(..)))          torch.onnx's gelu(approximate="tanh") below opset 20
          "fast"       0.5*x*(1+tanh(x*sqrt(2/pi)*(1+0.044715*x*x)))   HF's gelu_fast
          "tanh_op"    Gelu approximate="tanh"
  scale   "scores"     Mul(Q.K^T, 1/sqrt(d))
          "div"        Div(Q.K^T, sqrt(d))        HF eager BERT
          "q"          (Q*(1/sqrt(d))).K^T
          "qk"         (Q*d^-1/4).(K^T*d^-1/4)    torch.onnx's scaled_dot_product_attention
          "proj"       the Q projection scaled before the heads split (BART: q_proj(x) * scaling)
          "qk_zero_mask"  "qk" and an all-zero mask added to the scores (dynamo's sdpa without
                       a mask; the linalg -> ascend conversion drops the add)
  k_t     "one"        K [B,S,H,D] -> K^T [B,H,D,S] by one Transpose
          "two"        K -> [B,H,S,D] -> [B,H,D,S] by two (HF: transpose(1,2), transpose(-1,-2))
          "dynamo"     the heads [B,H,S,D] reshaped to [B*H,S,D], transposed, reshaped back
                       (the dynamo exporter's sdpa)
  norm    "post"       BERT: LN(x + attn(x)), LN(h + ffn(h))
          "pre"        GPT-2: h = x + attn(LN(x)), y = h + ffn(LN(h))
  ln      "op"         LayerNormalization (opset 17)
          "ops"        spelled out as exports below opset 17 write it: ReduceMean, Sub, Pow,
                       ReduceMean, Add eps, Sqrt, Div, Mul gamma, Add beta
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ERF_GELUS = ("canonical", "torch", "hf", "halved", "sqrt_half", "op")
TANH_GELUS = ("tanh", "tanh_cube", "tanh_torch", "fast", "tanh_op")
GELUS = ERF_GELUS + TANH_GELUS
SCALES = ("scores", "div", "q", "qk", "proj", "qk_zero_mask")
K_TRANSPOSES = ("one", "two", "dynamo")
NORMS = ("post", "pre")
LAYERNORMS = ("op", "ops")


@dataclass(frozen=True)
class Spelling:
    """How one layer is written: each field one of the tuples above."""

    gelu: str = "canonical"
    scale: str = "scores"
    k_t: str = "one"
    norm: str = "post"
    ln: str = "op"

    def __post_init__(self) -> None:
        for field, allowed in (("gelu", GELUS), ("scale", SCALES), ("k_t", K_TRANSPOSES),
                               ("norm", NORMS), ("ln", LAYERNORMS)):
            if getattr(self, field) not in allowed:
                raise ValueError(f"{field} must be one of {', '.join(allowed)}")


class _Graph:
    """Nodes and initializers under construction; names are made unique."""

    def __init__(self) -> None:
        from onnx import helper

        self.helper = helper
        self.nodes: list = []
        self.inits: dict[str, np.ndarray] = {}
        self.count = 0

    def const(self, name: str, value) -> str:
        self.inits[name] = np.asarray(value, np.float32) if not isinstance(value, np.ndarray) \
            else value
        return name

    def node(self, op: str, inputs: list[str], name: str, **attrs) -> str:
        self.count += 1
        out = f"{name}_out{self.count}"
        self.nodes.append(self.helper.make_node(op, inputs, [out], name=name, **attrs))
        return out


def gelu(g: _Graph, x: str, spelling: str) -> str:
    """GELU of `x` written as `spelling`; returns the output's name."""
    n = g.node
    if spelling in ("op", "tanh_op"):
        return n("Gelu", [x], "gelu", approximate="none" if spelling == "op" else "tanh")
    one = g.const("one", 1.0)
    half = g.const("half", 0.5) if spelling != "halved" else None
    if spelling == "fast":
        poly = n("Add", [one, n("Mul", [g.const("c044715", 0.044715), n("Mul", [x, x], "gelu_sq")],
                                "gelu_c")], "gelu_poly")
        inner = n("Mul", [n("Mul", [x, g.const("sqrt_2_pi", np.sqrt(2 / np.pi))], "gelu_s"), poly],
                  "gelu_in")
        gate = n("Add", [one, n("Tanh", [inner], "gelu_tanh")], "gelu_one")
        return n("Mul", [n("Mul", [half, x], "gelu_half"), gate], "gelu")
    if spelling in ("tanh", "tanh_cube", "tanh_torch"):
        if spelling != "tanh_cube":
            cube = n("Pow", [x, g.const("three", 3.0)], "gelu_pow")
        else:
            cube = n("Mul", [n("Mul", [x, x], "gelu_sq"), x], "gelu_cube")
        inner = n("Add", [x, n("Mul", [g.const("c044715", 0.044715), cube], "gelu_c")], "gelu_in")
        t = n("Tanh", [n("Mul", [g.const("sqrt_2_pi", np.sqrt(2 / np.pi)), inner], "gelu_s")],
              "gelu_tanh")
        gate = n("Add", [one, t], "gelu_one")
        if spelling == "tanh_torch":
            return n("Mul", [half, n("Mul", [x, gate], "gelu_gate")], "gelu")
        return n("Mul", [n("Mul", [half, x], "gelu_half"), gate], "gelu")
    if spelling == "sqrt_half":
        scaled = n("Mul", [x, g.const("sqrt_half", np.sqrt(0.5))], "gelu_scale")
    else:
        scaled = n("Div", [x, g.const("sqrt2", np.sqrt(2.0))], "gelu_scale")
    gate = n("Add", [n("Erf", [scaled], "gelu_erf"), one], "gelu_one")
    if spelling in ("canonical", "sqrt_half"):
        return n("Mul", [x, n("Mul", [half, gate], "gelu_half")], "gelu")
    if spelling == "torch":
        return n("Mul", [n("Mul", [x, gate], "gelu_gate"), half], "gelu")
    if spelling == "halved":
        return n("Div", [n("Mul", [x, gate], "gelu_gate"), g.const("two", 2.0)], "gelu")
    return n("Mul", [n("Mul", [x, half], "gelu_half"), gate], "gelu")  # hf


def _linear(g: _Graph, rng, x: str, k: int, n_out: int, name: str, gemm: bool = False) -> str:
    """x W + b; `gemm`: as torch.onnx writes nn.Linear on 2-D rows, one Gemm
    with the weight stored [out, in] (transB=1)."""
    w = (rng.standard_normal((k, n_out)) / np.sqrt(k)).astype(np.float32)
    b = g.const(f"{name}_b", (rng.standard_normal(n_out) * 0.02).astype(np.float32))
    if gemm:
        return g.node("Gemm", [x, g.const(f"{name}_wt", np.ascontiguousarray(w.T)), b], name,
                      transB=1)
    return g.node("Add", [g.node("MatMul", [x, g.const(f"{name}_w", w)], name), b], f"{name}_bias")


def _layernorm(g: _Graph, rng, x: str, hidden: int, name: str, spelling: str = "op") -> str:
    gamma = g.const(f"{name}_g", (1 + 0.1 * rng.standard_normal(hidden)).astype(np.float32))
    beta = g.const(f"{name}_b", (0.1 * rng.standard_normal(hidden)).astype(np.float32))
    if spelling == "op":
        return g.node("LayerNormalization", [x, gamma, beta], name, axis=-1, epsilon=1e-12)
    n = g.node
    d = n("Sub", [x, n("ReduceMean", [x], f"{name}_mean", axes=[-1])], f"{name}_sub")
    var = n("ReduceMean", [n("Pow", [d, g.const("two", 2.0)], f"{name}_sq")], f"{name}_var",
            axes=[-1])
    std = n("Sqrt", [n("Add", [var, g.const("eps", 1e-12)], f"{name}_eps")], f"{name}_std")
    return n("Add", [n("Mul", [n("Div", [d, std], f"{name}_div"), gamma], f"{name}_gamma"), beta],
             name)


def attention(g: _Graph, rng, x: str, seq: int, hidden: int, heads: int, s: Spelling) -> str:
    """Multi-head self-attention of `x` [1, S, hidden] with its out projection."""
    d = hidden // heads
    n = g.node
    split = g.const("split", np.array([1, seq, heads, d], np.int64))
    merge = g.const("merge", np.array([1, seq, hidden], np.int64))
    proj = {p: _linear(g, rng, x, hidden, hidden, f"{p}_proj") for p in "qkv"}
    if s.scale == "proj":
        proj["q"] = n("Mul", [proj["q"], g.const("scale", 1 / np.sqrt(d))], "q_scale")
    q, k, v = (n("Reshape", [proj[p], split], f"{p}_split") for p in "qkv")
    q = n("Transpose", [q], "q_heads", perm=[0, 2, 1, 3])
    v = n("Transpose", [v], "v_heads", perm=[0, 2, 1, 3])
    if s.k_t == "one":
        kt = n("Transpose", [k], "k_heads", perm=[0, 2, 3, 1])
    elif s.k_t == "two":
        kt = n("Transpose", [n("Transpose", [k], "k_heads", perm=[0, 2, 1, 3])], "k_t",
               perm=[0, 1, 3, 2])
    else:
        flat = g.const("k_flat", np.array([-1, seq, d], np.int64))
        back = g.const("k_back", np.array([1, heads, d, seq], np.int64))
        kt = n("Transpose", [n("Reshape", [n("Transpose", [k], "k_heads", perm=[0, 2, 1, 3]), flat],
                               "k_flat")], "k_t", perm=[0, 2, 1])
        kt = n("Reshape", [kt, back], "k_back")
    if s.scale == "q":
        q = n("Mul", [q, g.const("scale", 1 / np.sqrt(d))], "q_scale")
    elif s.scale in ("qk", "qk_zero_mask"):
        root = g.const("scale_root", np.sqrt(1 / np.sqrt(d)))
        q = n("Mul", [q, root], "q_scale")
        kt = n("Mul", [kt, root], "k_scale")
    scores = n("MatMul", [q, kt], "scores")
    if s.scale == "scores":
        scores = n("Mul", [scores, g.const("scale", 1 / np.sqrt(d))], "scale")
    elif s.scale == "div":
        scores = n("Div", [scores, g.const("sqrt_d", np.sqrt(d))], "scale")
    elif s.scale == "qk_zero_mask":
        scores = n("Add", [scores, g.const("mask", np.zeros((1, 1, seq, seq), np.float32))], "mask")
    p = n("Softmax", [scores], "softmax", axis=-1)
    ctx = n("Transpose", [n("MatMul", [p, v], "context")], "merge_heads", perm=[0, 2, 1, 3])
    return _linear(g, rng, n("Reshape", [ctx, merge], "merge"), hidden, hidden, "out_proj")


def ffn(g: _Graph, rng, x: str, hidden: int, ffn_dim: int, s: Spelling, gemm: bool = False,
        rows: int = 0) -> str:
    """`rows`: the activation is viewed as [1, rows, ffn_dim] around the
    GELU (GPT-2's Conv1D: a 2-D Gemm whose result is reshaped to 3-D)."""
    h = _linear(g, rng, x, hidden, ffn_dim, "ffn_in", gemm)
    if rows:
        h = g.node("Reshape", [h, g.const("to_3d", np.array([1, rows, ffn_dim], np.int64))],
                   "ffn_in_3d")
    h = gelu(g, h, s.gelu)
    if rows:
        h = g.node("Reshape", [h, g.const("to_2d", np.array([rows, ffn_dim], np.int64))],
                   "ffn_in_2d")
    return _linear(g, rng, h, ffn_dim, hidden, "ffn_out", gemm)


def layer(seq: int = 128, hidden: int = 768, heads: int = 12, ffn_dim: int = 3072,
          spelling: Spelling = Spelling(), seed: int = 0):
    """One encoder layer x [1, S, hidden] -> y written as `spelling`. The
    weights depend on `seed` only (drawn in the same order for every
    spelling), so two spellings compute the same function."""
    from onnx import helper

    rng = np.random.default_rng(seed)
    g = _Graph()
    ln1_rng, ln2_rng = (np.random.default_rng(seed + k) for k in (1, 2))
    if spelling.norm == "post":
        h = _layernorm(g, ln1_rng, g.node("Add", [attention(g, rng, "x", seq, hidden, heads,
                                                             spelling), "x"], "residual1"),
                       hidden, "ln1", spelling.ln)
        y = _layernorm(g, ln2_rng, g.node("Add", [ffn(g, rng, h, hidden, ffn_dim, spelling), h],
                                          "residual2"), hidden, "ln2", spelling.ln)
    else:
        a = attention(g, rng, _layernorm(g, ln1_rng, "x", hidden, "ln1", spelling.ln), seq,
                      hidden, heads, spelling)
        h = g.node("Add", [a, "x"], "residual1")
        y = g.node("Add", [ffn(g, rng, _layernorm(g, ln2_rng, h, hidden, "ln2", spelling.ln),
                               hidden, ffn_dim, spelling), h], "residual2")
    g.nodes.append(helper.make_node("Identity", [y], ["y"], name="output"))
    return _model(g, "layer", [1, seq, hidden], [1, seq, hidden],
                  opset=20 if spelling.gelu in ("op", "tanh_op") else 17)


def ffn_block(rows: int = 64, hidden: int = 128, ffn_dim: int = 512, gelu_spelling: str = "canonical",
              seed: int = 0, gemm: bool = False, unit_dims: bool = False):
    """x [rows, hidden] -> GELU(x W1 + b1) W2 + b2: the feed-forward half
    alone; `gemm`: each linear layer one Gemm with W stored transposed;
    `unit_dims`: the GELU on a [1, rows, ffn_dim] view."""
    rng = np.random.default_rng(seed)
    g = _Graph()
    y = ffn(g, rng, "x", hidden, ffn_dim, Spelling(gelu=gelu_spelling), gemm,
            rows if unit_dims else 0)
    g.nodes.append(g.helper.make_node("Identity", [y], ["y"], name="output"))
    return _model(g, "ffn", [rows, hidden], [rows, hidden],
                  opset=20 if gelu_spelling in ("op", "tanh_op") else 17)


def attention_block(seq: int = 64, hidden: int = 128, heads: int = 2, scale: str = "scores",
                    k_t: str = "one", seed: int = 0):
    """x [1, S, hidden] -> the self-attention block with its out projection."""
    rng = np.random.default_rng(seed)
    g = _Graph()
    y = attention(g, rng, "x", seq, hidden, heads, Spelling(scale=scale, k_t=k_t))
    g.nodes.append(g.helper.make_node("Identity", [y], ["y"], name="output"))
    return _model(g, "attention", [1, seq, hidden], [1, seq, hidden], opset=17)


def _model(g: _Graph, name: str, in_shape: list[int], out_shape: list[int], opset: int):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        g.nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
        [numpy_helper.from_array(v, k) for k, v in g.inits.items()])
    # IR 9: what onnxruntime and torch-mlir's importer both read.
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)
    onnx.checker.check_model(model)
    return model


# Layer 0 of the real exports in test/models/ (a26's make_exports.py) that
# need no op beyond this compiler's: ViT has no attention mask. file ->
# (the layer's input, its output, their shape: 16 patches and the class
# token, hidden size 32). The pre-norm layer as TorchScript with eager
# attention (GELU as (x*(1+erf(x/sqrt2)))*0.5, the scale on the scores),
# TorchScript with sdpa (Q and K each scaled by d^-1/4, K^T by two
# transposes) and dynamo with eager attention spell it.
EXPORT_LAYERS = {
    "vit_ts_eager": ("/inner/embeddings/Add_output_0", "/inner/layers.0/Add_1_output_0", [1, 17, 32]),
    "vit_ts_sdpa": ("/inner/embeddings/Add_output_0", "/inner/layers.0/Add_1_output_0", [1, 17, 32]),
    "vit_dynamo_eager": ("add", "add_5", [1, 17, 32]),
}


def subgraph(model, first: str, last: str, shape: list[int]):
    """The part of `model` (an export) from tensor `first` to tensor `last`
    as a model of its own, both of `shape` (static): one layer cut out of a
    whole export, to compare how exporters spell it."""
    import onnx
    from onnx import utils

    whole = onnx.shape_inference.infer_shapes(model)
    sub = utils.Extractor(whole).extract_model([first], [last])
    for value in (*sub.graph.input, *sub.graph.output):
        dims = value.type.tensor_type.shape.dim
        del dims[:]
        for d in shape:
            dims.add().dim_value = d
    del sub.graph.value_info[:]  # inferred again from the static shapes
    sub.graph.name = "layer"
    return onnx.shape_inference.infer_shapes(sub, strict_mode=True)
