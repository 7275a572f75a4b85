"""Where the dialects are defined: the IRDL files beside this module.

Kept apart from `npu.dialects` itself so that `irdl_errors`, which reads the
same files, need not import the package that imports it.
"""

from __future__ import annotations

from pathlib import Path

DIALECT_DIR = Path(__file__).resolve().parent
DIALECT_FILES = ("ascend.irdl.mlir", "cce.irdl.mlir", "hivm.irdl.mlir")
DIALECT_NAMES = ("ascend", "cce", "hivm")


def dialect_text(name: str) -> str:
    """The IRDL source of one of `DIALECT_FILES`."""
    return (DIALECT_DIR / name).read_text()


__all__ = ["DIALECT_DIR", "DIALECT_FILES", "DIALECT_NAMES", "dialect_text"]
