"""The committed ONNX example is exactly what its generator writes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_ffn_block_file_matches_its_generator():
    spec = importlib.util.spec_from_file_location("make_ffn_block", EXAMPLES / "make_ffn_block.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.ffn_block().SerializeToString() == (EXAMPLES / "ffn_block.onnx").read_bytes()
