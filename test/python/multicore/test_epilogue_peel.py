"""A matmul epilogue whose row-major result has rows that are not whole
fractals (197: C's 13 row blocks, the last of 5 rows) split by C's columns
only, every core reading all of A (`groups._c_cut`). Peeled like a row
group (`peel`: its 12 whole row blocks, then the rest), the blocks take a
grid of rows too: 197 x 768 x 768 on 32 cores, 24 column parts -> 8 x 4
(A 75 KB a core, not 300) and the rest on 24 column parts after them;
ViT-base's patch embedding and out_proj phases 10,452 -> 5,019 and
12,946 -> 5,386 cycles, the export on 32 cores 89,742 -> 77,584."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_epilogue_odd_rows as odd  # noqa: E402
from helpers import assert_close, compile_remarks  # noqa: E402


def test_the_whole_row_blocks_of_an_epilogue_take_a_grid(monkeypatch) -> None:
    from onnx import load_from_string
    from onnx.numpy_helper import to_array

    from npu.passes.split_cores import peel

    monkeypatch.setattr(odd, "HIDDEN", 768)
    monkeypatch.setattr(odd, "OUT", 768)
    model = odd._model()
    x = np.random.default_rng(5).standard_normal((1, odd.ROWS, 768)).astype(np.float32)

    def run() -> tuple:
        kernel, remarks = compile_remarks(model, target="ascend910",
                                          pipeline="npu-lower{cores=32 split-cores-remarks=true}")
        (said,) = [r for r in remarks if "npu-split-cores:" in r]
        (y,), report = kernel(x)
        assert report["hazards"] == []
        return y, report["cycles"], said

    y, cycles, said = run()
    assert "matmul epilogue 8x4; matmul epilogue 24x1" in said, said
    w, b = (to_array(t) for t in load_from_string(model).graph.initializer)
    want = x.astype(np.float16).astype(np.float32) @ w.astype(np.float16).astype(np.float32) + b
    assert_close(y, want, np.float16)
    monkeypatch.setattr(peel, "PEEL_EPILOGUES", False)
    _, before, said = run()
    assert "matmul epilogue 24x1" in said and "8x4" not in said
    assert cycles < before  # 9,830 against 12,692
