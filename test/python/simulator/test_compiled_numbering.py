"""The compiled numbering of a trace's instructions (`csrc/numbering.c`,
`number_entries`) against `InstrTable.numbers_of`'s Python loop: the same
numbers and the same table, call after call on one launch's table (each
call a core), or the test fails."""

from __future__ import annotations

import random

import numpy as np
import pytest

from npu.simulator import compiled
from npu.simulator.instruction import OP
from npu.simulator.trace_codes import InstrTable, _Numbering

pytestmark = pytest.mark.skipif(not compiled.available(),
                                reason="npu.simulator._cengine is not built (no C compiler?)")


class _Instr:
    """Stands for an `Instr` (an OP on V): hashed by identity, as instructions are."""

    facts = (OP, 1, 1, 0, 0, 1, "-", "-", "vadd")
    latency = 0
    gm_operand = None


def _numbers(traces: list[list], use_c: bool) -> tuple[list[list[int]], list[int]]:
    """Each trace's numbers on one table, and the table's instructions in number order."""
    ids = _Numbering()
    out = []
    for trace in traces:
        if use_c:
            nums = np.empty(len(trace), np.int64)
            compiled._cengine.number_entries(trace, ids, nums)
        else:
            nums = np.fromiter(map(ids.__getitem__, (e[0] for e in trace)), np.int64, len(trace))
        out.append(nums.tolist())
    return out, [id(i) for i in ids]


@pytest.mark.parametrize("seed", range(5))
def test_numbers_match_python(seed: int) -> None:
    rng = random.Random(seed)
    pool = [_Instr() for _ in range(rng.randint(1, 40))]
    traces = [[(rng.choice(pool), (), rng.randint(0, 3)) for _ in range(rng.randint(0, 300))]
              for _ in range(rng.randint(1, 5))]
    got, table = _numbers(traces, True)
    want, want_table = _numbers(traces, False)
    assert got == want
    assert table == want_table
    assert sorted(set(sum(got, []))) == list(range(len(table)))


def test_more_instructions_than_the_address_cache() -> None:
    """2,000 instructions revisited at random: number_entries' cache of
    recent addresses (256 slots) collides and is overwritten; the numbers
    are still the dict's."""
    rng = random.Random(7)
    pool = [_Instr() for _ in range(2000)]
    traces = [[(rng.choice(pool), (), 0) for _ in range(5000)] for _ in range(2)]
    got, table = _numbers(traces, True)
    want, want_table = _numbers(traces, False)
    assert got == want
    assert table == want_table


def test_numbers_of_same_with_either_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    pool = [_Instr() for _ in range(7)]
    trace = [(pool[k], (), 1) for k in (3, 3, 1, 4, 1, 5, 6, 2, 6, 5, 3)]
    tables = []
    for engine in ("compiled", "python"):
        monkeypatch.setenv("NPU_SIM", engine)
        table = InstrTable()
        table.ids[pool[0]]  # a number taken before the trace: the next is 1
        tables.append((table.numbers_of(trace).tolist(), list(table.ids)))
    assert tables[0] == tables[1]
    assert tables[0][0] == [1, 1, 2, 3, 2, 4, 5, 6, 5, 4, 1]


def test_refuses_what_is_not_a_trace() -> None:
    nums = np.empty(2, np.int64)
    with pytest.raises(TypeError):
        compiled._cengine.number_entries([(_Instr(),), 5], _Numbering(), nums)
    with pytest.raises(TypeError):  # `out` of the wrong length
        compiled._cengine.number_entries([(_Instr(),)], _Numbering(), nums)
    with pytest.raises(TypeError):  # `out` of another type
        compiled._cengine.number_entries([(_Instr(),)] * 2, _Numbering(), np.empty(2, np.int32))
