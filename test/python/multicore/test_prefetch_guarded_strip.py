"""npu-prefetch and a resident weight strip in a share's guard
(`passes/prefetch/resident.py`, `guarded.py`): BERT seq 512 on 32 cores
runs Q, K and V's projections as column strips on shares of the cores,
each loop keeping its strip of B resident in a function-level L1 buffer
outside the guard. The pass used to refuse those loops outright ("a
resident weight part is not a function-level buffer"). Now each loads the
whole bursts of its first part that fit the MTE2 gap after the input
cast's last load (288 cycles: one 192-cycle burst), the rest in the loop's
first iteration: 103,365 -> 103,109 cycles (bench/chip_phases.py)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))


def test_strips_in_share_guards_load_their_first_bursts_before_the_barrier() -> None:
    from fusion_estimates import compile_with_remarks
    from npu.frontend.bert import bert_layer

    _, remarks = compile_with_remarks(bert_layer(512, 768, 12, 3072), "bert_layer.onnx",
                                      "npu-lower{cores=32 prefetch-remarks=true}")
    messages = [(d.line, d.message) for d in remarks if d.message.startswith("npu-prefetch:")]
    assert not any("not a function-level buffer" in m for _, m in messages), messages
    # The ops on shares of the cores (their rows moved before the barrier):
    # Q, K and V. Q's and K's strips (on the cores that cast the input) load
    # part of their first part there, the rest (whole bursts only in the
    # gap: the gap model's figures) later; V's cores run nothing before the
    # barrier (the cast is on 16 cores: `split_cores/idle_shares.py`), so
    # its share (row tiles over B's strip since the projections store Nz,
    # docs/multicore.md) loads whole chunks there, as many as the gap holds.
    shares = {line for line, m in messages if "of this op on cores" in m}
    assert len(shares) == 3, messages
    whole_parts = 0
    for line in shares:
        mine = [m for l, m in messages if l == line and "weight slot(s)" in m]
        assert len(mine) == 1, (line, messages)
        if "bursts in the loop's first iteration" not in mine[0]:
            found = re.search(r"\((\d+) bytes, (\d+) copies\) loaded before the chip barrier "
                              r"its cores wait at, on its cores alone.*idle gaps from [^:]*: "
                              r"(\d+) cycles; a chunk of (\d+) bytes takes (\d+)", mine[0])
            assert found, mine[0]
            size, copies, gap, chunk, takes = (int(g) for g in found.groups())
            assert size == copies * chunk and copies * takes <= gap, mine[0]
            whole_parts += 1
            continue
        found = re.search(r"\((\d+) bytes.*of the last, (\d+) bursts in the loop's first "
                          r"iteration.*idle gaps from [^:]*: ([\d, ]+) cycles; a chunk of \d+ "
                          r"bytes takes (\d+)", mine[0])
        assert found, mine[0]
        size, rest, gaps, whole = found.groups()
        # the bursts loaded early fit the largest gap's idle time
        bursts = 16 if size == "196608" else 12
        early = (bursts - int(rest)) * int(whole) / bursts
        assert 0 < early <= max(int(g) for g in gaps.split(", ")), mine[0]
    assert whole_parts == 1, messages  # V's
