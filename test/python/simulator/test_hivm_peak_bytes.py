"""The report's peak bytes per buffer at the hivm level: hivm has no
allocations, so the peak is the highest byte an operand touches; it must
be the touched extent, not 0."""

from __future__ import annotations

import json

from pathlib import Path

from npu.tools import npu_run

# a matmul and vector ops: every on-chip buffer is used
PROGRAM = Path(__file__).resolve().parents[2] / "npu-run" / "fuse-horizontal.mlir"


def _peaks(emit: str, capsys) -> dict:
    assert npu_run.main([str(PROGRAM), "--emit", emit, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["level"] == emit
    return report["peak_bytes"]


def test_hivm_peak_bytes_are_the_touched_extent(capsys):
    """At cce a peak is the end of the last placed alloc; at hivm the end of
    the bytes really touched, so it is positive wherever cce's is and never
    above it (an alloc's unused tail, a double buffer's idle half, are not)."""
    cce, hivm = _peaks("cce", capsys), _peaks("hivm", capsys)
    assert set(cce) == set(hivm)
    for space, n in cce.items():
        assert (hivm[space] > 0) == (n > 0) and hivm[space] <= n, (space, cce, hivm)
