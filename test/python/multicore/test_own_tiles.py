"""A core's own tile of an intermediate kept on chip across the chip barrier
(`passes/own_tiles.py`, npu-lower's `own-tiles`): between two matmuls split
into the same row parts, each core stores its tile of the first's output
and, after the barrier, loads its whole row part of it as the second's A.
The tile's pieces stay in UB (one buffer a piece) and go to A's L1 parts on
MTE3; MTE2 copies the rest of each part around them. BERT seq 128 on 32
cores: ffn_out's phase 8,948 -> 8,692 cycles, the layer 37,628 -> 37,372
(bench/chip.py). The bytes are the stored ones: the bits are the same."""

from __future__ import annotations

import numpy as np
from onnx import numpy_helper

import npu
from npu.ir import make_context, parse_module, walk
from npu.passes.insert_sync.precise import _never_runs

from test_row_parts import _ffn  # noqa: E402


def _copies(module, name: str) -> int:
    return len(list(walk(module.operation, lambda o: o.name == name)))


def test_own_tile_goes_to_a_on_chip_with_the_same_bits() -> None:
    rows, width, hidden = 64, 128, 512
    model = _ffn(rows, width, hidden)
    grids = f"split-cores-grids={rows}x{width}x{hidden}:4x2;{rows}x{hidden}x{width}:4x2"
    x = np.random.default_rng(0).standard_normal((rows, width)).astype(np.float32)
    runs = {}
    for own in ("false", "true"):
        options = f"cores=8 {grids} own-tiles={own}"
        emitted = npu.compile(model, pipeline=f"builtin.module(npu-lower{{{options} emit=cce}})")
        kernel = npu.compile(model, target="ascend910", pipeline=f"npu-lower{{{options}}}")
        (out,), report = kernel(x)
        assert report["hazards"] == []
        to_l1 = _copies(emitted.module, "cce.copy_ub_to_l1")
        runs[own] = (np.asarray(out), report["cycles"], to_l1)
    (off, off_cycles, off_to_l1), (on, on_cycles, on_to_l1) = runs.values()
    assert off_to_l1 == 0 and on_to_l1 > 0, (off_to_l1, on_to_l1)
    assert np.array_equal(off.view(np.uint8), on.view(np.uint8))
    assert on_cycles < off_cycles, (on_cycles, off_cycles)  # 6,233 -> 5,502
    w1, b1, w2, b2 = (numpy_helper.to_array(i) for i in model.graph.initializer)
    want = np.maximum(x @ w1 + b1, 0) @ w2 + b2
    np.testing.assert_allclose(on, want, rtol=2e-2, atol=2e-2)



def test_a_set_sinks_past_a_copy_tree_unless_its_load_never_runs() -> None:
    """MTE2's set after a load sinks past a part's copy tree (GPT-2's
    c_proj: B's last chunk, then A's part: 62,287 -> 62,024 cycles on 32
    cores), but not after npu-prefetch's guard that never holds (BERT's
    ffn_out: its L0B loads would wait for A's part, 37,372 -> 37,536)."""
    src = """
    func.func @f(%a: index) {
      %c0 = arith.constant 0 : index
      %never = arith.cmpi ne, %c0, %c0 : index
      scf.if %never {
      }
      %always = arith.cmpi eq, %c0, %c0 : index
      scf.if %always {
      }
      %some = arith.cmpi ne, %a, %c0 : index
      scf.if %some {
      }
      return
    }
    """
    with make_context() as ctx:
        module = parse_module(src, ctx)
        assert [_never_runs(o) for o in walk(module.operation)
                if o.name == "scf.if"] == [True, False, False]
