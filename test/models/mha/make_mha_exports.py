"""Make the torch.nn encoder exports in this folder (run by hand).

`nn.TransformerEncoder` of two `nn.TransformerEncoderLayer`s (d_model 64,
4 heads, FFN 128, ReLU, no dropout) over 16 tokens, batch 1, as a user
builds one: its attention is `nn.MultiheadAttention`, whose export packs Q,
K and V in one projection (as torchvision's ViT does). Every parameter is
drawn at random (seeded; torch leaves the attention's biases at zero), so
each layer's weights and biases differ. Exported with the TorchScript
exporter (opset 17, `dynamo=False`) in eval mode with gradients on: under
`torch.no_grad()` the layer takes a fused path that has no ONNX export.
Each file is run once in onnxruntime against torch. Needs torch and
onnxruntime (not test dependencies):

    python test/models/mha/make_mha_exports.py [--out DIR] [--all]

Writes `encoder_bf_post.onnx` (batch_first=True, norm_first=False) and
`encoder_sbe_pre.onnx` (batch_first=False: [S, B, E]; norm_first=True);
`--all` also the other two combinations (not committed).
"""

from __future__ import annotations

import argparse
import os
import warnings

D_MODEL, HEADS, FFN, SEQ, LAYERS = 64, 4, 128, 16, 2
COMMITTED = [(True, False), (False, True)]
OTHERS = [(True, True), (False, False)]


def build(batch_first: bool, norm_first: bool):
    import torch

    layer = torch.nn.TransformerEncoderLayer(D_MODEL, HEADS, dim_feedforward=FFN, dropout=0.0,
                                             batch_first=batch_first, norm_first=norm_first)
    model = torch.nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
    g = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name and name.endswith("weight"):
                p.copy_(torch.rand(p.shape, generator=g) + 0.5)
            elif p.dim() == 1:
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
            else:
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[-1] ** 0.5)
    return model.eval()


def export(batch_first: bool, norm_first: bool, out: str) -> str:
    import numpy as np
    import onnxruntime as ort
    import torch

    model = build(batch_first, norm_first)
    shape = (1, SEQ, D_MODEL) if batch_first else (SEQ, 1, D_MODEL)
    x = torch.randn(shape, generator=torch.Generator().manual_seed(1))
    name = f"encoder_{'bf' if batch_first else 'sbe'}_{'pre' if norm_first else 'post'}.onnx"
    path = os.path.join(out, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), path, opset_version=17, dynamo=False,
                          input_names=["x"], output_names=["y"])
    with torch.no_grad():
        want = model(x).numpy()
    got = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x.numpy()})[0]
    if not np.allclose(got, want, rtol=1e-4, atol=1e-4):
        raise RuntimeError(f"{path}: onnxruntime differs from torch by {np.abs(got - want).max()}")
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--all", action="store_true", help="the four batch_first x norm_first forms")
    args = ap.parse_args()
    for bf, nf in COMMITTED + (OTHERS if args.all else []):
        path = export(bf, nf, args.out)
        print(f"ok   {path} ({os.path.getsize(path) // 1024} KB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
