"""What a matmul tiling holds and moves: the matmul's shape (`MatmulShape`)
and tiles (`Tiles`), the bytes each on-chip buffer holds at once
(`buffer_needs`, `first_overflow`, `largest_fitting_n`), the GM traffic of
a strategy (`traffic`) and the choice the cost model returns
(`TilingChoice`). The values `residency` and `tiling` both build on, below
them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from npu.target import Target


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class MatmulShape:
    """A (batched) matmul in elements; M, N, K are the fractal-padded sizes."""

    M: int
    N: int
    K: int
    batch: int = 1
    in_bytes: int = 2  # f16 inputs
    acc_bytes: int = 4  # f32 accumulation in L0C
    out_bytes: int = 4  # C in GM: f32, or f16 on request


@dataclass(frozen=True)
class Tiles:
    m: int
    n: int
    k: int

    def __str__(self) -> str:
        return f"(m={self.m}, n={self.n}, k={self.k})"


@dataclass(frozen=True)
class Traffic:
    """GM traffic in elements (A and B reads, C write-back)."""

    a_reads: int
    b_reads: int
    c_writes: int

    @property
    def reads(self) -> int:
        return self.a_reads + self.b_reads

    @property
    def total(self) -> int:
        return self.reads + self.c_writes

    def read_bytes(self, shape: MatmulShape) -> int:
        return self.reads * shape.in_bytes

    def write_bytes(self, shape: MatmulShape) -> int:
        return self.c_writes * shape.out_bytes


@dataclass(frozen=True)
class TilingChoice:
    strategy: str
    tiles: Tiles
    traffic: Traffic
    # Bytes each on-chip buffer holds at once (l1, l0a, l0b, l0c, ub).
    buffer_bytes: Mapping[str, int] = field(default_factory=dict)
    # The pipelined schedule keeps A's row strip in L1 across the column
    # tiles (`resident_a_chunks`): A is read once.
    a_resident: bool = False
    # With it, the B chunk (reduction elements per GM -> L1 copy) the time
    # estimate chose these tiles with (0: the schedule's own choice).
    chunk: int = 0
    # A's strips resident row by row (several rows of C tiles, `row_strips`):
    # A is read once; `chunk` is then the parts' reduction elements.
    row_strips: bool = False
    # One column of C tiles in several rows with B's strip resident in L1
    # across them (`col_strips`): A and B are read once; `chunk` is then
    # the strip's parts' reduction elements.
    col_strips: bool = False
    # With it, the C pieces each row tile drains in (0: `default_pieces`).
    pieces: int = 0
    # Why the pipelined time estimate replaced the streaming search's plan
    # (`resident_or_streamed`), for the remark; empty when it did not.
    why: str = ""

    def describe(self, shape: MatmulShape) -> str:
        """The text of the remark every lowered matmul emits."""
        t = self.traffic
        return (f"matmul tiling: strategy={self.strategy} tiles {self.tiles}"
                f"{' with the A row strip resident in L1' if self.a_resident else ''}"
                f"{' with each row strip of A resident in L1 across its column tiles' if self.row_strips else ''}"
                f"{' with the column strip of B resident in L1 across its row tiles' if self.col_strips else ''}; modelled GM "
                f"traffic: read {t.reads} elements (A {t.a_reads}, B {t.b_reads}) = "
                f"{t.read_bytes(shape)} bytes, write-back {t.c_writes} elements = "
                f"{t.write_bytes(shape)} bytes, total {t.read_bytes(shape) + t.write_bytes(shape)} bytes"
                + (f" ({self.why})" if self.why else ""))


@dataclass(frozen=True)
class Overflow:
    buffer: str
    what: str
    needed: int
    capacity: int

    def message(self, tiles: Tiles) -> str:
        return (f"tile {tiles} does not fit {self.buffer.upper()}: {self.what} needs "
                f"{self.needed} bytes, capacity {self.capacity} bytes "
                f"(overflow {self.needed - self.capacity} bytes)")


def reduction_steps(shape: MatmulShape, tiles: Tiles) -> int:
    return ceil_div(shape.N, tiles.n)


def buffer_needs(strategy: str, shape: MatmulShape, tiles: Tiles, fractal: int,
                 describe: bool = True) -> list[tuple[str, str, int]]:
    """(buffer, what, bytes) for every buffer the lowering allocates at once
    (`describe=False`: what is "", for the search's many fit tests)."""
    m, n, k = tiles.m, tiles.n, tiles.k
    needs = [
        ("l0a", f"the A tile {m}x{n}" if describe else "", m * n * shape.in_bytes),
        ("l0b", f"the B tile {n}x{k}" if describe else "", n * k * shape.in_bytes),
    ]
    multi_step = reduction_steps(shape, tiles) > 1
    if strategy == "is" and multi_step:
        needs.append(("l0c", f"the C row strip {m}x{shape.K} (IS accumulates a whole strip)"
                      if describe else "", m * shape.K * shape.acc_bytes))
    elif strategy == "ws" and multi_step:
        needs.append(("l0c", f"the C column strip {shape.M}x{k} (WS accumulates a whole strip)"
                      if describe else "", shape.M * k * shape.acc_bytes))
    else:
        needs.append(("l0c", f"the C tile {m}x{k}" if describe else "", m * k * shape.acc_bytes))
    needs.append(("l1", f"the A and B tiles staged together ({m}x{n} + {n}x{k})"
                  if describe else "", (m * n + n * k) * shape.in_bytes))
    extra = shape.out_bytes if shape.out_bytes != shape.acc_bytes else 0
    needs.append(("ub", f"one {m}x{fractal} column block of C on its way out" if describe else "",
                  m * fractal * (shape.acc_bytes + extra)))
    return needs


def first_overflow(strategy: str, shape: MatmulShape, tiles: Tiles, target: Target
                   ) -> Overflow | None:
    # Tested without the texts (the tiling search tests tens of thousands of
    # tiles, which fit or not; an overflow is described once found).
    for k, (buffer, _, needed) in enumerate(buffer_needs(strategy, shape, tiles, target.fractal,
                                                         describe=False)):
        if needed > target.capacity(buffer):
            what = buffer_needs(strategy, shape, tiles, target.fractal)[k][1]
            return Overflow(buffer, what, needed, target.capacity(buffer))
    return None


def traffic(strategy: str, shape: MatmulShape, tiles: Tiles, a_resident: bool = False
            ) -> Traffic:
    M, N, K, B = shape.M, shape.N, shape.K, shape.batch
    row_strips = ceil_div(M, tiles.m)
    col_strips = ceil_div(K, tiles.k)
    if strategy == "os":
        a, b = M * N * (1 if a_resident else col_strips), N * K * row_strips
    elif strategy == "is":
        a, b = M * N, N * K * row_strips
    elif strategy == "ws":
        a, b = M * N * col_strips, N * K
    else:
        raise ValueError(f"unknown strategy '{strategy}'")
    return Traffic(a * B, b * B, M * K * B)


def multiples(limit: int, step: int) -> list[int]:
    return list(range(step, limit + 1, step))


def largest_fitting_n(strategy: str, shape: MatmulShape, m: int, k: int, target: Target,
                      ns: list[int]) -> int | None:
    """Largest n in `ns` (ascending) that fits; needs grow with n below N, so
    after trying the single-step n >= N a binary search finds it."""
    def fits(n: int) -> bool:
        return first_overflow(strategy, shape, Tiles(m, n, k), target) is None

    if fits(ns[-1]):
        return ns[-1]
    lo, hi = 0, len(ns) - 1  # ns[hi] does not fit
    if ns[-1] >= shape.N:
        hi = len(ns) - 1
    if not fits(ns[0]):
        return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(ns[mid]):
            lo = mid
        else:
            hi = mid
    return ns[lo]


def pipelines(shape: MatmulShape, tiles: Tiles) -> bool:
    """Whether the pipelined OS schedule can stream these C tiles."""
    return shape.M % tiles.m == 0 and shape.K % tiles.k == 0


@dataclass(frozen=True)
class Capacities:
    """What the tiling search reads of a target (hashable, unlike Target)."""

    name: str
    fractal: int
    buffer_bytes: tuple[tuple[str, int], ...]
    gm_read_bytes_per_cycle: float
    gm_write_bytes_per_cycle: float
    drain_bytes_per_cycle: float
    cube_cycles_per_block: float
    gm_latency: int
    by_space: dict[str, int] = field(default_factory=dict, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        self.by_space.update(self.buffer_bytes)

    def capacity(self, space: str) -> int:
        return self.by_space[space]


def capacities(target: Target) -> Capacities:
    return Capacities(target.name, target.fractal, tuple(sorted(target.buffer_bytes.items())),
                       target.path("gm_to_l1").bytes_per_cycle,
                       target.path("ub_to_gm").bytes_per_cycle,
                       target.path("l0c_to_ub").bytes_per_cycle,
                       target.cube_cycles(1.0), target.path("gm_to_l1").latency)
