"""The fuzz corpus, which test ids index into, is the checked-in files only."""

from __future__ import annotations

from pathlib import Path

import fuzz_lib

FUNC = 'func.func @f() {\n  return\n}\n'


def _write(root: Path, rel: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(FUNC)


def test_lit_output_files_do_not_shift_the_case_a_test_id_names(tmp_path):
    # A lit run leaves `%t*.mlir` files under test/**/Output/. Counted in the
    # corpus, they changed which program `opt-0029` mutated depending on
    # whether lit had run before pytest, so its failure did not reproduce.
    for rel in ("examples/a.mlir", "test/Transforms/b.mlir", "test/npu-opt/Inputs/c.mlir"):
        _write(tmp_path, rel)
    before = fuzz_lib.corpus(tmp_path)
    for rel in ("test/Output/npu-run/Output/roundtrip.mlir.tmp.racy.mlir",
                "test/Output/Transforms/Output/b.mlir.tmp.mlir"):
        _write(tmp_path, rel)
    after = fuzz_lib.corpus(tmp_path)
    assert [p.name for p in after] == [p.name for p in before] == [
        "examples/a.mlir#0", "test/Transforms/b.mlir#0", "test/npu-opt/Inputs/c.mlir#0"]
