"""Make the corpus of real exports in this folder (run by hand).

Tiny HuggingFace `transformers` configs with seeded random weights, exported
as a new user would: `torch.onnx.export` with the TorchScript exporter
(opset 17, `dynamo=False`) and with the dynamo exporter, each with the eager
and the sdpa attention, static shapes and batch 1. The files are committed;
torch and transformers are not test dependencies. Run with a Python that has
torch, transformers, onnx, onnxscript and onnxruntime:

    python test/models/make_exports.py [--only bert] [--out test/models]
    python test/models/make_exports.py --block 128 --out /tmp   # a full-size GPT-2 block
    python test/models/make_exports.py --full bert --seq 100 --out /tmp   # BERT-base, ViT-base

Every file written is run once in onnxruntime; the README table lists them.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from dataclasses import dataclass
from typing import Callable

import cnn_models  # (beside this script)

SEQ = 16
VOCAB = 100
IMAGE = 32


@dataclass
class Spec:
    """One model family: how to build it and its example inputs."""
    name: str
    build: Callable[[str], object]  # attention implementation -> nn.Module
    inputs: Callable[[], dict]      # input name -> example tensor


def _text_inputs(seq: int = SEQ) -> dict:
    import torch

    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, VOCAB, (1, seq), generator=g, dtype=torch.int64)
    mask = torch.ones(1, seq, dtype=torch.int64)
    mask[0, -3:] = 0  # padding, so the mask is not all ones
    return {"input_ids": ids, "attention_mask": mask}


def _image_inputs() -> dict:
    import torch

    g = torch.Generator().manual_seed(2)
    return {"pixel_values": torch.randn(1, 3, IMAGE, IMAGE, generator=g)}


class _LastHidden:
    """Wraps a HF model so the export has one output: last_hidden_state."""

    @staticmethod
    def wrap(model, names: tuple[str, ...] = ("input_ids", "attention_mask")):
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, *args):
                kwargs = dict(zip(names, args))
                if "use_cache" in self.inner.config.to_dict():
                    kwargs["use_cache"] = False
                return self.inner(**kwargs, return_dict=False)[0]

        return Wrapped(model).eval()


def _bert(attn: str):
    from transformers import BertConfig, BertModel

    cfg = BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=64, attn_implementation=attn)
    return _LastHidden.wrap(BertModel(cfg, add_pooling_layer=False))


def _distilbert(attn: str):
    from transformers import DistilBertConfig, DistilBertModel

    cfg = DistilBertConfig(vocab_size=VOCAB, dim=32, n_layers=2, n_heads=2, hidden_dim=64,
                           max_position_embeddings=64, attn_implementation=attn)
    return _LastHidden.wrap(DistilBertModel(cfg))


def _gpt2(attn: str):
    from transformers import GPT2Config, GPT2Model

    cfg = GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=2, n_positions=64,
                     attn_implementation=attn)
    return _LastHidden.wrap(GPT2Model(cfg))


def _gpt2_block(attn: str):
    """One full-size GPT-2 small block (hidden 768, 12 heads) with its
    embeddings: for the bench figures of docs/exports.md, not committed
    (about 32 MB)."""
    from transformers import GPT2Config, GPT2Model

    cfg = GPT2Config(vocab_size=VOCAB, n_embd=768, n_layer=1, n_head=12, n_positions=1024,
                     attn_implementation=attn)
    return _LastHidden.wrap(GPT2Model(cfg))


def _full_size(family: str, seq: int, layers: int, vocab: int) -> Spec:
    """A full-size BERT-base or ViT-base encoder (hidden 768, 12 heads, FFN
    3072; `layers` of them) with random weights: for docs/exports.md's
    figures at full size, not committed (30-435 MB)."""
    if family == "bert":
        def build(attn: str):
            from transformers import BertConfig, BertModel

            cfg = BertConfig(vocab_size=vocab, hidden_size=768, num_hidden_layers=layers,
                             num_attention_heads=12, intermediate_size=3072,
                             max_position_embeddings=512, attn_implementation=attn)
            return _LastHidden.wrap(BertModel(cfg, add_pooling_layer=False))
        return Spec(f"bertbase{seq}x{layers}v{vocab}", build, lambda: _text_inputs(seq))

    def build_vit(attn: str):
        from transformers import ViTConfig, ViTModel

        cfg = ViTConfig(image_size=224, patch_size=16, num_channels=3, hidden_size=768,
                        num_hidden_layers=layers, num_attention_heads=12, intermediate_size=3072,
                        attn_implementation=attn)
        return _LastHidden.wrap(ViTModel(cfg, add_pooling_layer=False), ("pixel_values",))

    def image():
        import torch

        return {"pixel_values": torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(2))}
    return Spec(f"vitbase224x{layers}", build_vit, image)


def _vit(attn: str):
    from transformers import ViTConfig, ViTModel

    cfg = ViTConfig(image_size=IMAGE, patch_size=8, num_channels=3, hidden_size=32, num_hidden_layers=2,
                    num_attention_heads=2, intermediate_size=64, attn_implementation=attn)
    return _LastHidden.wrap(ViTModel(cfg, add_pooling_layer=False), ("pixel_values",))


def _t5enc(attn: str):
    from transformers import T5Config, T5EncoderModel

    cfg = T5Config(vocab_size=VOCAB, d_model=32, d_kv=16, d_ff=64, num_layers=2, num_heads=2,
                   relative_attention_num_buckets=8, attn_implementation=attn)
    return _LastHidden.wrap(T5EncoderModel(cfg))


def _bartenc(attn: str):
    from transformers import BartConfig
    from transformers.models.bart.modeling_bart import BartEncoder

    cfg = BartConfig(vocab_size=VOCAB, d_model=32, encoder_layers=2, encoder_attention_heads=2,
                     encoder_ffn_dim=64, max_position_embeddings=64, attn_implementation=attn)
    return _LastHidden.wrap(BartEncoder(cfg))


def _llama(attn: str):
    """Rotary embeddings, RMSNorm, 2 heads sharing 1 KV head, the causal mask."""
    from transformers import LlamaConfig, LlamaModel

    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                      num_key_value_heads=1, intermediate_size=64, max_position_embeddings=64,
                      attn_implementation=attn)
    return _LastHidden.wrap(LlamaModel(cfg))


def _whisperenc(attn: str):
    """Whisper's encoder: two 1-D convs over 16 mel bins x 16 frames."""
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    cfg = WhisperConfig(vocab_size=VOCAB, d_model=32, encoder_layers=2, encoder_attention_heads=2,
                        encoder_ffn_dim=64, num_mel_bins=16, max_source_positions=8, decoder_layers=1,
                        decoder_attention_heads=2, pad_token_id=0, bos_token_id=0, eos_token_id=0,
                        decoder_start_token_id=0, attn_implementation=attn)
    return _LastHidden.wrap(WhisperEncoder(cfg), ("input_features",))


def _roberta(attn: str):
    """Position ids by CumSum of the tokens that are not padding."""
    from transformers import RobertaConfig, RobertaModel

    cfg = RobertaConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=66, attn_implementation=attn)
    return _LastHidden.wrap(RobertaModel(cfg, add_pooling_layer=False))


def _cnn_inputs(size: int = 0) -> dict:
    import torch

    g = torch.Generator().manual_seed(3)
    size = size or CNN_IMAGE
    return {"input": torch.randn(1, 3, size, size, generator=g)}


# Tiny torchvision CNNs (no attention variants), written to cnn/: a ResNet
# with BasicBlocks (resnet18's block) and one with Bottlenecks (resnet50's),
# one block per stage, 8 stem channels; MobileNetV2 at width 0.25 (last conv
# 320 channels); MobileNetV3-small and EfficientNet-B0 at width 0.25, on a
# 96x96 image (their last maps 3x3: rows of at least one f32 block); a
# narrow ConvNeXt; a tiny UNet of three Resizes on a 32x32 image.
CNN_SPECS = [Spec("resnet18", lambda _: cnn_models.narrow_resnet("BasicBlock", 8), _cnn_inputs),
             Spec("resnet50", lambda _: cnn_models.narrow_resnet("Bottleneck", 8), _cnn_inputs),
             Spec("mobilenetv2", lambda _: cnn_models.tiny_mobilenet_v2(), _cnn_inputs),
             Spec("mobilenetv3", lambda _: cnn_models.tiny_mobilenet_v3(), lambda: _cnn_inputs(96)),
             Spec("efficientnet", lambda _: cnn_models.tiny_efficientnet(), lambda: _cnn_inputs(96)),
             Spec("convnext", lambda _: cnn_models.tiny_convnext(), _cnn_inputs),
             Spec("unet", lambda _: cnn_models.tiny_unet(), lambda: _cnn_inputs(32))]
CNN_IMAGE = 64

SPECS = [Spec("bert", _bert, _text_inputs), Spec("distilbert", _distilbert, _text_inputs),
         Spec("gpt2", _gpt2, _text_inputs), Spec("vit", _vit, _image_inputs),
         Spec("t5enc", _t5enc, _text_inputs), Spec("bartenc", _bartenc, _text_inputs),
         Spec("llama", _llama, _text_inputs),
         Spec("whisperenc", _whisperenc, lambda: {"input_features": _image_inputs()["pixel_values"][0, :1, :16, :16]}),
         Spec("roberta", _roberta, _text_inputs)]

EXPORTERS = {"ts": dict(dynamo=False, opset_version=17), "dynamo": dict(dynamo=True, opset_version=18)}


def export(spec: Spec, attn: str | None, exporter: str, out: str, dynamic: bool = False) -> str:
    """Export one variant to `out`/<name>_<exporter>[_<attn>][_dynamic].onnx
    (CNNs: no `attn`, output `logits`); the path. `dynamic`: batch and
    sequence as symbolic dims (TorchScript)."""
    import onnx
    import torch

    torch.manual_seed(0)
    model = spec.build(attn)
    inputs = spec.inputs()
    variant = f"_{attn}" if attn else ""
    path = os.path.join(out, f"{spec.name}_{exporter}{variant}{'_dynamic' if dynamic else ''}.onnx")
    output = "last_hidden_state" if attn else "logits"
    extra = {}
    if dynamic:
        extra["dynamic_axes"] = {name: {0: "batch", 1: "sequence"} for name in inputs}
        extra["dynamic_axes"]["last_hidden_state"] = {0: "batch", 1: "sequence"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, tuple(inputs.values()), path, input_names=list(inputs),
                          output_names=[output], external_data=False,
                          **EXPORTERS[exporter], **extra)
    proto = onnx.load(path)
    onnx.save(proto, path)  # one file, weights inline (dynamo may leave a .data file)
    for extra in (path + ".data",):
        if os.path.exists(extra):
            os.remove(extra)
    _verify(model, inputs, path)
    return path


def _verify(model, inputs: dict, path: str) -> None:
    """The export runs in onnxruntime and matches torch."""
    import numpy as np
    import onnxruntime as ort
    import torch

    with torch.no_grad():
        want = model(*inputs.values()).numpy()
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {i.name: inputs[i.name].numpy() for i in sess.get_inputs()}
    got = sess.run(None, feeds)[0]
    if not np.allclose(got, want, rtol=1e-4, atol=1e-4):
        raise RuntimeError(f"{path}: onnxruntime differs from torch by {np.abs(got - want).max()}")


def _describe(path: str) -> str:
    """A README table row: file, opset, inputs, op types."""
    import onnx

    m = onnx.load(path)
    opset = next(o.version for o in m.opset_import if o.domain in ("", "ai.onnx"))
    inits = {t.name for t in m.graph.initializer}
    ins = ", ".join(f"{i.name} {onnx.helper.tensor_dtype_to_np_dtype(i.type.tensor_type.elem_type)}"
                    f"[{'x'.join(str(d.dim_value or d.dim_param) for d in i.type.tensor_type.shape.dim)}]"
                    for i in m.graph.input if i.name not in inits)
    name = os.path.basename(path)
    model, exporter, attn = (name[:-5].split("_") + ["-"])[:3]
    size = os.path.getsize(path) // 1024
    return f"| `{name}` | {model} | {exporter} | {attn} | {opset} | IR {m.ir_version} | {ins} | {size} KB |"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--only", action="append", help="model family (repeatable)")
    ap.add_argument("--block", type=int, metavar="SEQ", help="only one full-size GPT-2 small "
                    "block at this sequence length (gpt2block<SEQ>_*.onnx, not committed)")
    ap.add_argument("--cnn", action="store_true", help="the torchvision CNNs (into <out>/cnn), "
                    "needs torchvision")
    ap.add_argument("--full", choices=("bert", "vit"), help="only a full-size BERT-base or "
                    "ViT-base (TorchScript, eager; not committed)")
    ap.add_argument("--seq", type=int, default=128, help="--full bert: tokens")
    ap.add_argument("--layers", type=int, default=1, help="--full: encoder layers")
    ap.add_argument("--vocab", type=int, default=30522, help="--full bert: vocabulary")
    args = ap.parse_args(argv)
    if args.full:
        print("ok  ", export(_full_size(args.full, args.seq, args.layers, args.vocab), "eager",
                             "ts", args.out))
        return 0
    if args.block and (args.only or args.cnn):
        ap.error("--block exports one GPT-2 block: it takes neither --only nor --cnn")
    if args.block:
        spec = Spec(f"gpt2block{args.block}", _gpt2_block, lambda: _text_inputs(args.block))
        for exporter in EXPORTERS:
            for attn in ("eager", "sdpa"):
                print("ok  ", export(spec, attn, exporter, args.out))
        return 0
    if args.cnn:
        return export_cnns(os.path.join(args.out, "cnn"), args.only)
    rows, failed = [], []
    for spec in SPECS:
        if args.only and spec.name not in args.only:
            continue
        for exporter in EXPORTERS:
            for attn in ("eager", "sdpa"):
                try:
                    path = export(spec, attn, exporter, args.out)
                    rows.append(_describe(path))
                    print("ok  ", path)
                except Exception as e:  # an export that fails is reported, not fatal
                    msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                    failed.append(f"{spec.name}_{exporter}_{attn}: {type(e).__name__}: {msg[:200]}")
                    print("FAIL", failed[-1], file=sys.stderr)
    if not args.only or "bert" in args.only:  # one export with dynamic batch and sequence
        path = export(SPECS[0], "eager", "ts", args.out, dynamic=True)
        rows.append(_describe(path))
        print("ok  ", path)
    print("\n".join(rows))
    return 1 if failed else 0


def export_cnns(out: str, only: list[str] | None) -> int:
    """Every CNN with both exporters into `out` (a folder of its own: the
    transformer corpus tests list test/models/*.onnx)."""
    os.makedirs(out, exist_ok=True)
    rows, failed = [], []
    for spec in CNN_SPECS:
        if only and spec.name not in only:
            continue
        for exporter in EXPORTERS:
            try:
                path = export(spec, None, exporter, out)
                rows.append(_describe(path))
                print("ok  ", path)
            except Exception as e:  # reported, not fatal
                msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                failed.append(f"{spec.name}_{exporter}: {type(e).__name__}: {msg[:200]}")
                print("FAIL", failed[-1], file=sys.stderr)
    print("\n".join(rows))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
