"""`linalg` on tensors -> `ascend` on GM memrefs (see convert.py)."""

from npu.frontend.to_ascend.convert import Converter

__all__ = ["Converter"]
