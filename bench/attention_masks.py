"""Attention with an additive mask on the scores, on ascend910, one core:
a key mask [1, 1, 1, S] (HF encoders' attention_mask) against a mask of the
scores [1, 1, S, S] shared by the heads (a decoder's causal mask, as GPT-2
exports it), fused (`npu-lower`) and unfused (`fuse-attention=false`).
12 heads of 64, f32 Q, K, V and mask in, f32 context out; every run is
checked against onnxruntime (a causal mask of finfo.min).

Columns: cycles; the program's own bound (its busiest unit, from the
report); the problem's ideal: the larger of the cube's cycles for Q.K^T and
P.V and the minimal GM traffic (Q, K, V, the mask and the context once)
over the GM bandwidth.

    .venv/bin/python bench/attention_masks.py [--seq 128 512] [--heads 12]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "python", "fusion"))
sys.path.insert(0, HERE)

HEAD_DIM = 64


def run(model, feeds: dict, options: str) -> dict:
    import onnxruntime

    import npu

    kernel = npu.compile(model, where="attention.onnx", cores=1,
                         pipeline=f"npu-lower{{{options}}}" if options else "npu-lower")
    (y,), report = kernel(*[feeds[n] for n in kernel.input_names])
    (want,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, feeds)
    np.testing.assert_allclose(y, want, rtol=2e-2, atol=2e-2)
    return report


def ideal(target, heads: int, seq: int, mask_elems: int) -> int:
    blocks = 2 * heads * -(-seq // 16) ** 2 * (HEAD_DIM // 16)
    gm = (4 * heads * seq * HEAD_DIM + mask_elems) * 4
    return max(blocks // target.cube_blocks_per_cycle,
               -(-gm // target.path("gm_to_ub").bytes_per_cycle))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seq", type=int, nargs="*", default=[128, 512])
    p.add_argument("--heads", type=int, default=12)
    args = p.parse_args()
    import test_attention_key_mask as patterns

    from npu.target import get_target

    target = get_target("ascend910")
    patterns.HEADS = args.heads
    print(f"{'case':<38} {'cycles':>9} {'own bound':>22} {'ideal':>8} {'/ ideal':>8}")
    for seq in args.seq:
        rng = np.random.default_rng(seq)
        qkv = {n: rng.standard_normal((1, args.heads, seq, HEAD_DIM)).astype(np.float32)
               for n in "qkv"}
        causal = np.where(np.tril(np.ones((seq, seq), bool)), 0.0,
                          np.finfo(np.float32).min).astype(np.float32)[None, None]
        key = np.zeros((1, 1, 1, seq), np.float32)
        key[..., seq - seq // 4:] = np.finfo(np.float32).min
        cases = [("mask of the scores, unfused", causal, "fuse-attention=false"),
                 ("mask of the scores, fused", causal, ""),
                 ("key mask, fused", key, "")]
        for name, mask, options in cases:
            t0 = time.perf_counter()
            model = patterns.masked_attention(seq, mask_shape=list(mask.shape))
            report = run(model, {**qkv, "mask": mask}, options)
            best = ideal(target, args.heads, seq, mask.size)
            own = f"{report['bound_cycles']} ({report['bound_unit']})"
            print(f"{f'seq {seq}, {name}':<38} {report['cycles']:>9} {own:>22} {best:>8} "
                  f"{report['cycles'] / best:>8.2f}  ({time.perf_counter() - t0:.0f} s)",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
