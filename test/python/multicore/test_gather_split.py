"""An embedding lookup over every core: each core gathers the rows of its
run of ids. The scalar unit reads the ids one by one, so a core's run need
not start on a 32-byte boundary: 128 i32 token ids (a transformers BERT
export at seq 128) split over 32 cores, 4 ids (16 bytes) a core, not over
16 as the burst alignment of dense slices allowed. The embeddings'
layernorm after it takes 4 rows a core too (BERT-base, seq 128, 32 cores,
with the real 30,522-token vocabulary: 45,441 -> 43,777 cycles)."""

from __future__ import annotations

import numpy as np

from npu.ir import make_context, parse_module
from npu.pipeline import run_pipeline
from npu.simulator import simulate
from npu.target import get_target

VOCAB, SEQ, HIDDEN = 64, 128, 768
GATHER = f"""func.func @embed(%table: memref<{VOCAB}x{HIDDEN}xf32, "gm">, %ids: memref<{SEQ}xi32, "gm">,
    %y: memref<{SEQ}x{HIDDEN}xf32, "gm">) {{
  "ascend.gather"(%table, %ids, %y) {{axis = 0 : i64}}
      : (memref<{VOCAB}x{HIDDEN}xf32, "gm">, memref<{SEQ}xi32, "gm">, memref<{SEQ}x{HIDDEN}xf32, "gm">) -> ()
  return
}}
"""


def _run(cores: int):
    rng = np.random.default_rng(3)
    table = rng.standard_normal((VOCAB, HIDDEN)).astype(np.float32)
    ids = rng.integers(-VOCAB, VOCAB, SEQ).astype(np.int32)  # negative ids count from the end
    module = parse_module(GATHER, make_context())
    target = get_target("ascend910")
    options = "" if cores == 1 else " split-cores-min-bytes=0 split-cores-estimate=false"
    run_pipeline(module, f"builtin.module(npu-lower{{cores={cores}{options}}})", target)
    out = np.zeros((SEQ, HIDDEN), np.float32)
    return simulate(module, [table, ids, out], target=target), table[ids]


def test_token_ids_split_over_every_core() -> None:
    many, want = _run(32)
    assert many.report["block_dim"] == 32 and many.hazards == []
    one, _ = _run(1)
    np.testing.assert_array_equal(many.outputs[-1], want)
    np.testing.assert_array_equal(one.outputs[-1], many.outputs[-1])
