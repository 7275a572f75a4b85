"""Which candidates to simulate: all (grid), a random sample, or the ones the
cost model ranks best (guided). The cost model's own choice (npu-lower's
defaults) is always simulated: it is the baseline every result is compared
with."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

SEARCHES = ("grid", "random", "guided")
DEFAULT_BUDGET = {"random": 16, "guided": 8}


@dataclass
class Candidate:
    """One canonical option set of one op (or target point), before running."""

    signature: str
    family: str
    options: dict[str, Any]
    key: str
    estimate: float = math.nan
    default: bool = False
    label: str = ""  # short name of what it belongs to (the op), for progress


def select(search: str, candidates: list[Candidate], budget: int | None = None,
           seed: int = 0) -> list[Candidate]:
    """The candidates to simulate, the default first."""
    if search not in SEARCHES:
        raise ValueError(f"unknown search '{search}' (known: {', '.join(SEARCHES)})")
    default = [c for c in candidates if c.default]
    others = [c for c in candidates if not c.default]
    if search == "grid":
        chosen = others
    else:
        n = budget if budget is not None else DEFAULT_BUDGET[search]
        n = max(0, n - len(default))
        if search == "random":
            chosen = random.Random(seed).sample(others, min(n, len(others)))
        else:  # cost model first; infeasible (inf) and unknown (nan) last
            ranked = sorted(others, key=lambda c: (not math.isfinite(c.estimate), c.estimate))
            chosen = ranked[:n]
    return default + chosen
