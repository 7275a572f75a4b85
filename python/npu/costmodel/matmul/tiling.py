"""The matmul cost model: which strategy and tiles (m, n, k) to lower with.

Thesis section 6.4.1, with A: M x N, B: N x K, C = A x B: M x K (N is the
reduction) and tiles (m, n, k). The model counts elements moved between GM
and the core:

  IS (A tile stationary):  A once, B once per row strip    S = MN + MNK/m
  WS (B tile stationary):  B once, A once per column strip S = KN + MNK/k
  OS (C tile stationary):  A per column strip, B per row   S = MNK(m+k)/(mk)

plus the write-back of C (MK elements, once, in every strategy). Edge tiles
are counted as they are loaded (ceil instead of exact division), so the model
is exact for the code `npu-lower-matmul` generates.

Fitting is derived from the target: the A tile must fit L0A, the B tile L0B,
the accumulator L0C (a whole C row strip for IS / column strip for WS when the
reduction takes more than one step, because partial sums can only live in
L0C), and the staged A and B tiles together L1. On ascend910 with f16 in and
f32 out that is mn <= 2^15, nk <= 2^15, mk <= 2^16 elements. The C write-back
goes through UB in chunks of whole column blocks, so UB only needs one column
block of the tile.

With `pipelined=True` (the OS tiles feed `npu-lower-matmul`'s pipelined
schedule) tilings are ranked by estimated time first: the pipelined schedule
streams only C tiles that divide M x K, overlapping GM reads (MTE2), cube work
and the C drain (L0C -> UB, UB -> GM), so its estimate is the busiest of
those pipes plus one GM latency of fill; any other tile runs the simple nest,
whose pipes mostly wait on each other, estimated as their sum. Without it (and
for IS/WS) the sum ranks exactly as traffic does. Measured in
bench/matmul_tiling_sweep.py: BERT's 128x768x2304 took k=512 (no pipelining,
123.6k cycles) where k=384 pipelines (85.3k).

With `resident_a=True` as well (the pipelined schedule may keep A resident),
a chosen OS tiling with one row of C tiles (m = M) and several column tiles
keeps A in L1 across them when `residency.resident_a_chunks` finds B chunks
for it: A is then read once (S = MN + NK, IS's traffic with C still in
L0C) and only the weights stream. Its L1 footprint is bounded by (m + k) x N, the A and B
tiles of the whole reduction (B chunks of at most half of it, the
ping-pong's two in flight), which is what streaming A and B in two halves
would take: the room `npu-prefetch` finds for the next op's weights is the
same either way. Measured: BERT seq 128's q_proj loop (128x768x2304) 89.3k
-> 73.9k cycles, its MTE2 busy 74.3k -> 55.6k (plus the strip's 3.5k copy
before it).

Among tilings of equal time and traffic the one using more buffer bytes wins
(the thesis's empirical rule: bigger buffers mean fewer, longer instructions).
"""

from __future__ import annotations

from functools import lru_cache

from npu.costmodel.matmul.fitting import (Capacities, MatmulShape, TilingChoice, Tiles, Traffic,
                                          capacities, first_overflow, largest_fitting_n, multiples,
                                          pipelines)
from npu.costmodel.matmul.col_strips import col_strips_or, col_strips_time
from npu.costmodel.matmul.pipelined import Drain, best_chunk, pipelined_time
from npu.costmodel.matmul.residency import make_choice, resident_a_chunks, resident_or_streamed
from npu.costmodel.matmul.row_strips import row_strips_time
from npu.target import Target

STRATEGIES = ("os", "is", "ws")


class TilingError(ValueError):
    """No tiling fits, or an explicit one does not (names buffer and overflow)."""


def estimated_cycles(shape: MatmulShape, tiles: Tiles, traffic: Traffic, rates: Capacities,
                     overlapped: bool, epilogue_cycles: float = 0.0) -> float:
    """Time of a tiling from the target's rates: the busiest pipe plus the GM
    latency when the schedule overlaps its pipes, else the pipes' sum. An
    epilogue's vector work runs on the pipe that drains C (the vector unit)."""
    blocks = shape.M * shape.N * shape.K * shape.batch / rates.fractal ** 3
    pipes = (traffic.read_bytes(shape) / rates.gm_read_bytes_per_cycle,
             blocks * rates.cube_cycles_per_block,
             traffic.c_writes * shape.acc_bytes / rates.drain_bytes_per_cycle + epilogue_cycles,
             traffic.write_bytes(shape) / rates.gm_write_bytes_per_cycle)
    return max(pipes) + rates.gm_latency if overlapped else sum(pipes)


def _score(choice: TilingChoice, shape: MatmulShape, rates: Capacities, pipelined: bool,
           epilogue_cycles: float = 0.0) -> tuple:
    t = choice.tiles
    used = sum(choice.buffer_bytes[b] for b in ("l0a", "l0b", "l0c"))
    overlapped = pipelined and choice.strategy == "os" and pipelines(shape, t)
    time = estimated_cycles(shape, t, choice.traffic, rates, overlapped, epilogue_cycles)
    return (time, choice.traffic.total, -used, -t.m, -t.k, -t.n)


def clamp_tiles(shape: MatmulShape, m: int, n: int, k: int) -> tuple[int, int, int]:
    """A tile larger than its dimension is the whole dimension (0 stays 'free')."""
    return (min(m, shape.M) if m else 0, min(n, shape.N) if n else 0, min(k, shape.K) if k else 0)


def choose_tiling(shape: MatmulShape, target: Target, strategy: str = "os",
                  m: int = 0, n: int = 0, k: int = 0, pipelined: bool = False,
                  epilogue_cycles: float = 0.0, resident_a: bool = False,
                  a_in_l1: bool = False, drain: Drain | None = None,
                  timed_residency: bool = True, col_strips: bool = True) -> TilingChoice:
    """The fastest fitting tiling; `m`, `n`, `k` > 0 fix that tile edge;
    `pipelined`: OS tiles for the pipelined schedule (see the module doc);
    `resident_a` (with `pipelined`): it may keep A's row strip in L1
    (`resident_or_streamed`, with `drain`: what the schedule's time
    estimate knows of C's way out; `timed_residency=False`: the streaming
    search's tiles, the strip resident where (m + k) x N fits L1, as before
    that estimate);
    `epilogue_cycles`: vector work of an epilogue on the drained C (it adds
    to the drain's pipe in the time estimate); `col_strips`: a one-tile C
    may run as row tiles with B's strip resident (`col_strips_or`).

    `strategy="auto"` compares the three strategies. Raises TilingError when
    an explicit tile edge is not a fractal multiple or nothing fits; the
    message names the overflowing buffer and the overflow in bytes.

    A choice is made once per target and arguments: npu-split-cores,
    npu-fuse, npu-lower-matmul and the split's prefetch model ask again for
    the same matmuls (BERT-12 at 32 cores: 1,435 calls, 48 distinct, 0.15
    CPU s). A target (unhashable: its dicts) is known by identity, held by
    its entry so that its id is not reused while the entry lives.
    """
    key = (id(target), shape, strategy, m, n, k, pipelined, float(epilogue_cycles), resident_a,
           a_in_l1, drain, timed_residency, col_strips)
    known = _CHOICES.get(key)
    if known is not None and known[0] is target:
        return known[1]
    choice = _choose_tiling(shape, target, strategy, m, n, k, pipelined, epilogue_cycles,
                            resident_a, a_in_l1, drain, timed_residency, col_strips)
    if len(_CHOICES) >= _CHOICES_KEPT:
        _CHOICES.pop(next(iter(_CHOICES)))  # the oldest
    _CHOICES[key] = (target, choice)
    return choice


# `choose_tiling`'s choices: key -> (target, choice), oldest first.
_CHOICES: dict[tuple, tuple[Target, TilingChoice]] = {}
_CHOICES_KEPT = 256


def _choose_tiling(shape: MatmulShape, target: Target, strategy: str, m: int, n: int, k: int,
                   pipelined: bool, epilogue_cycles: float, resident_a: bool, a_in_l1: bool,
                   drain: Drain | None, timed_residency: bool, col_strips: bool) -> TilingChoice:
    """`choose_tiling` itself, without its cache."""
    step = target.fractal
    for name, value in (("m", m), ("n", n), ("k", k)):
        if value < 0 or value % step:
            raise TilingError(f"tile {name}={value} must be a positive multiple of the "
                              f"fractal size {step}")
    m, n, k = clamp_tiles(shape, m, n, k)
    strategies = STRATEGIES if strategy == "auto" else (strategy,)
    if any(s not in STRATEGIES for s in strategies):
        raise TilingError(f"unknown strategy '{strategy}' (known: os, is, ws, auto)")
    # A model repeats its matmul shapes (BERT: six per layer, twelve layers):
    # the search depends only on these, so it runs once per distinct shape.
    best = _search(shape, strategies, m, n, k, step, capacities(target), pipelined,
                   float(epilogue_cycles))
    if best is not None and pipelined and resident_a and best.strategy == "os":
        if a_in_l1:
            return make_choice("os", shape, best.tiles, target, resident_a=True, a_in_l1=True)
        choice = resident_or_streamed(shape, best, target, fixed_k=k, fixed_n=n,
                                      drain=drain or Drain(epilogue_cycles), timed=timed_residency)
        if m or not timed_residency or not col_strips:
            return choice
        return col_strips_or(shape, choice, target, drain or Drain(epilogue_cycles), n)
    if best is not None:
        return best
    # Nothing fits: explain with the smallest tile allowed by the explicit edges.
    probe = Tiles(m or step, n or step, k or step)
    over = first_overflow(strategies[0], shape, probe, target)
    if over is not None:
        raise TilingError(over.message(probe))
    raise TilingError(f"no tiling of strategy {'/'.join(strategies)} fits target "
                      f"'{target.name}' for M={shape.M}, N={shape.N}, K={shape.K}")


@lru_cache(maxsize=256)
def _search(shape: MatmulShape, strategies: tuple[str, ...], m: int, n: int, k: int, step: int,
            target: Capacities, pipelined: bool = False, epilogue_cycles: float = 0.0
            ) -> TilingChoice | None:
    """The best fitting tiling (None if nothing fits); m, n, k > 0 are fixed."""
    best: TilingChoice | None = None
    best_score: tuple = ()
    for choice in _fitting(shape, strategies, m, n, k, step, target):
        score = _score(choice, shape, target, pipelined, epilogue_cycles)
        if best is None or score < best_score:
            best, best_score = choice, score
    return best


@lru_cache(maxsize=256)
def _fitting(shape: MatmulShape, strategies: tuple[str, ...], m: int, n: int, k: int, step: int,
             target: Capacities) -> tuple[TilingChoice, ...]:
    """The tilings `_search` scores, in its order. They do not depend on the
    epilogue's cycles, which differ from one epilogue to the next (BERT-12
    at 32 cores: 47 searches, most over tilings an earlier one listed)."""
    ms = [m] if m else multiples(shape.M, step)
    ks = [k] if k else multiples(shape.K, step)
    ns = [n] if n else multiples(shape.N, step)
    found: list[TilingChoice] = []
    # Every buffer need grows with m and with k, so the (m, k) pairs that fit
    # (with the smallest n) form a staircase: the search walks only that,
    # stopping each row at its first misfit; the buffers bound it, not the
    # matrix (a 65536^3 matmul has 2^24 pairs, a few hundred of which fit).
    for s in strategies:
        for mm in ms:
            if largest_fitting_n(s, shape, mm, ks[0], target, ns) is None:
                break  # larger m fits no k either
            for kk in ks:
                # Traffic does not depend on n: the largest fitting n is best.
                nn = largest_fitting_n(s, shape, mm, kk, target, ns)
                if nn is None:
                    break  # larger k does not fit either
                found.append(make_choice(s, shape, Tiles(mm, nn, kk), target))
    return tuple(found)


def kernel_cycles(shape: MatmulShape, target: Target, drain: Drain = Drain()) -> float:
    """The pipelined schedule's time estimate of the matmul as npu-lower-matmul
    runs it by default (OS tiles, A's strip resident where it pays, the B
    chunk of `plan_pipelined`), with `drain` (an epilogue's vector work and
    stores): the figure npu-fuse's epilogue decisions take for the fused
    kernel. The larger of the cube's and the A/B traffic's time, which they
    took before, left out the fill, the per-chunk GM latency, the mads'
    completion waits and the drain's tail (BERT seq 256: out_proj with its
    bias took 1.84x that, the lowering's estimate is within 1.4x). Falls back
    to that larger time where the schedule is not pipelined.

    The tiling is the lowering's choice (the pipe sums); the time adds the
    L0C-piece / drain / store hand-offs (`pipelined_time`'s `handoffs`),
    which the lowering's choice leaves out: BERT's Q/K/V projection apart
    from attention simulated 1.43x / 1.50x this estimate without them at
    seq 197 / 256."""

    frac = target.fractal
    choice = choose_tiling(shape, target, "os", pipelined=True,
                           epilogue_cycles=drain.vector_cycles, resident_a=True, drain=drain)
    t = choice.traffic
    rough = max(target.cube_cycles(shape.M * shape.N * shape.K * shape.batch // frac ** 3),
                t.read_bytes(shape) / target.path("gm_to_l1").bytes_per_cycle)
    tiles = choice.tiles
    if choice.strategy != "os" or not pipelines(shape, tiles):
        return rough
    if choice.row_strips:
        return row_strips_time(shape, tiles, choice.chunk // frac, target, drain, True)
    if choice.col_strips:
        return col_strips_time(shape, tiles.m // frac, tiles.k // frac, choice.chunk // frac,
                               target, drain, True)
    mb, kb, n1 = tiles.m // frac, tiles.k // frac, shape.N // frac
    blk = target.fractal_bytes(shape.in_bytes)
    l1 = target.capacity("l1")
    resident = resident_a_chunks(shape, tiles, l1, frac) if choice.a_resident else []
    if resident and choice.chunk // frac in resident:
        chunk = choice.chunk // frac
    else:
        fitting = resident or [d for d in range(n1, 0, -1)
                               if n1 % d == 0 and 2 * (mb + kb) * d * blk <= l1]
        count = shape.batch * (shape.M // tiles.m) * (shape.K // tiles.k)
        chunk = best_chunk(fitting, mb, kb, n1, count, not resident, target)
    if chunk is None:
        return rough
    return pipelined_time(shape.M, shape.N, shape.K, shape.batch, mb, kb, chunk, bool(resident),
                          t.read_bytes(shape), t.c_writes * shape.acc_bytes,
                          t.write_bytes(shape), target, drain, handoffs=True)
