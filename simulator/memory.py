"""Byte arrays of the simulated buffers and the static placement of allocations.

Every memory is one `uint8` array with typed views over it (so an instruction
reads fp16 lanes without copying) and the shadow state the hazard detector
keeps per byte (`stamps.Stamps`, stored per granule while a granule's bytes
agree): the stamp of the last writer (-1 = never written), per pipe the
stamp of the last reader, and (only once some data movement has carried
uninitialised bytes into or out of this memory) which bytes hold such
uninitialised data.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass, field

import numpy as np

from npu.simulator.errors import ALIGNMENT, CAPACITY, SimulationError
from npu.simulator.stamps import Stamps

DTYPES: dict[str, type] = {"f16": np.float16, "f32": np.float32, "i8": np.int8, "i32": np.int32}
NEVER_WRITTEN = -1
INPUT_STAMP = 0  # the values the caller passes in: ordered before every instruction
# Blank buffers this large are mapped pages, zeroed by the kernel when first
# touched: a model's weights get a blank GM memory at decode that `share`
# replaces unread (BERT-base x12: 170 MB of them). `np.zeros` cleared them
# from the reused heap: 0.17 CPU s of a 6.7 s 32-core timing-only run.
LAZY_BYTES = 1 << 18


def blank_bytes(n: int) -> np.ndarray:
    """`n` zero bytes, writable; large ones cost nothing until touched."""
    if n >= LAZY_BYTES:
        return np.frombuffer(mmap.mmap(-1, n), np.uint8)
    return np.zeros(n, np.uint8)


@dataclass(eq=False, slots=True)
class Memory:
    """One addressable buffer: an on-chip space, or one GM argument/allocation.
    Slotted: the compiled checks read `wstamp`, `rstamp`, `writers` and
    `uninit` at their offsets (`csrc/stamps.c`, `mem_slot`)."""

    name: str
    space: str
    nbytes: int
    granule: int = 32  # how the stamps are stored (any size is exact; see `Stamps`)
    data: np.ndarray = field(init=False)
    typed: dict[str, np.ndarray] = field(init=False)
    wstamp: Stamps = field(init=False)
    rstamp: dict[int, Stamps] = field(init=False)
    writers: set[int] = field(init=False)  # pipes that wrote it
    # None until a movement instruction carries uninitialised bytes (see `Shadow`).
    uninit: "Shadow | None" = field(init=False)
    # An `npu.constant` argument: the compiled data, which no instruction may write.
    constant: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        self.import_state(None)

    def export_state(self) -> tuple:
        """The bytes and shadow state, to put aside while another core of a
        launch uses this buffer (`launch.CoreBuffers`)."""
        return self.data, self.typed, self.wstamp, self.rstamp, self.writers, self.uninit

    def import_state(self, state: tuple | None) -> None:
        """Install an exported state, or (None) a blank, never-written one."""
        if state is None:
            padded = -(-max(self.nbytes, 1) // 8) * 8  # every typed view needs whole elements
            data = blank_bytes(padded)
            state = (data, {name: data.view(dt) for name, dt in DTYPES.items()},
                     Stamps(padded, self.granule, NEVER_WRITTEN), {}, set(), None)
        self.data, self.typed, self.wstamp, self.rstamp, self.writers, self.uninit = state

    def share(self, raw: np.ndarray) -> None:
        """Hold `raw`, a read-only uint8 array of exactly this memory's size
        (a compiled model's constant), as its bytes without copying them: a
        model's weights then exist once in a run."""
        self.data = raw
        self.typed = {name: raw.view(dt) for name, dt in DTYPES.items()}

    def readers(self, pipe: int) -> Stamps:
        stamps = self.rstamp.get(pipe)
        if stamps is None:
            stamps = self.rstamp[pipe] = Stamps(self.data.size, self.granule, NEVER_WRITTEN)
        return stamps

    def uninit_shadow(self) -> "Shadow":
        if self.uninit is None:
            self.uninit = Shadow(np.zeros(self.data.size, np.uint8))
        return self.uninit


class Shadow:
    """Per byte: 1 = holds uninitialised data; 0 = initialised unless its
    `wstamp` says it was never written.

    It has the `data`/`typed` shape of a `Memory`, so a movement instruction's
    own `compute` moves these flags exactly as it moves the bytes (copy,
    fractal transpose, vnchwconv permutation). A byte is uninitialised when
    its `wstamp` is NEVER_WRITTEN or its flag here is 1.
    """

    __slots__ = ("data", "typed")

    def __init__(self, data: np.ndarray):
        self.data = data
        self.typed = {name: data.view(dt) for name, dt in DTYPES.items()}


@dataclass(eq=False)
class Region:
    """A root allocation: where a memref.alloc (or a GM argument) lives.

    `group` numbers the set of regions whose bytes may overlap (planned
    allocations that share addresses); the hazard detector keeps one summary
    per group so disjoint buffers never slow each other's checks down.
    """

    mem: Memory
    base: int
    size: int
    group: int = 0
    label: str = ""


@dataclass
class Placement:
    """Static addresses of on-chip allocations (one per alloc op, no reuse)."""

    capacity: dict[str, int]
    granule: dict[str, int]
    next_free: dict[str, int] = field(default_factory=dict)
    regions: list[Region] = field(default_factory=list)
    peak: dict[str, int] = field(default_factory=dict)

    def place(self, mem: Memory, space: str, size: int, offset: int | None, where: str,
              type_text: str) -> Region:
        granule = self.granule[space]
        if offset is None:
            start = self.next_free.get(space, 0)
            offset = -(-start // granule) * granule
            self.next_free[space] = offset + size
        elif offset % granule:
            raise SimulationError(
                ALIGNMENT, f"'memref.alloc' of {type_text} at npu.offset {offset} is not aligned "
                f"to the {granule}-byte granule of {space}", where)
        if offset < 0 or offset + size > self.capacity[space]:
            raise SimulationError(
                CAPACITY, f"'memref.alloc' of {type_text} ({size} bytes at offset {offset}) "
                f"overflows {space}: bytes [{offset}, {offset + size}) past its capacity of "
                f"{self.capacity[space]} bytes", where)
        self.peak[space] = max(self.peak.get(space, 0), offset + size)
        region = Region(mem, offset, size, label=f"{type_text} @ {where}")
        self.regions.append(region)
        return region

    def assign_groups(self, first_group: int) -> int:
        """Number the overlap groups of the placed regions; returns the next free id."""
        gid = first_group
        by_mem: dict[int, list[Region]] = {}
        for r in self.regions:
            by_mem.setdefault(id(r.mem), []).append(r)
        for regions in by_mem.values():
            regions.sort(key=lambda r: r.base)
            end = -1
            for r in regions:
                if r.base >= end:
                    gid += 1
                r.group = gid
                end = max(end, r.base + r.size)
        return gid + 1
