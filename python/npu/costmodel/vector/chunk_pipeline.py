"""The steady state of a fused row kernel's chunk pipeline, from one chunk's
profile: what `npu-lower-fused` compares to choose how its chunks use UB.

A chunk's loads run on MTE2, its steps on V, its stores on MTE3, each pipe
in order; chunks overlap through sets of buffers taken by turns (`slots`).
Every chunk ends its loads with a set_flag, which holds MTE2 until they
have landed (the GM latency), and its stores likewise hold MTE3. In the
steady state chunk j's loads start at j P on MTE2 and land at (j + 1) P,
when its vector work starts (P: the period). The period is the largest of

  MTE2   the chunk's loads plus the latency,
  V      the chunk's vector work,
  MTE3   its stores plus the latency once per flag after them (one per
         run of stores whose buffers have a set per slot, one after each
         store whose buffer has only one),
  reuse  for each buffer with s sets: the chunk s later writes it only
         after this chunk is done with it. A loaded buffer is reloaded at
         its load's offset in the period, (s - 1) P + offset after this
         chunk's vector work started; it is done when the vector unit last
         reads it, or, when a result is stored from it, when that store
         has landed. A buffer the vector unit writes is rewritten s P plus
         the time its first write takes into that chunk's vector work.

The kernel then takes about one chunk's loads, (chunks - 1) periods, and
the last chunk's vector work and stores (`ChunkProfile.total`). A few
chunks (a kernel's last op, a few rows a core) are priced as a chain
instead (`ChunkProfile.chain_end`).
Latencies and rates are the target's (the profile's cycles come from
`npu.analysis.pipe_work` on the emitted chunk).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ChunkProfile:
    """One chunk as emitted: `loads` (buffer, MTE2 cycles) in issue order;
    `steps` (buffers read, buffers written, V cycles) in order; `stores`
    (buffer, MTE3 cycles, index of the step after which it is issued)."""

    latency: int
    loads: list = field(default_factory=list)
    steps: list = field(default_factory=list)
    stores: list = field(default_factory=list)

    def scaled(self, factor: float) -> "ChunkProfile":
        """The profile of a chunk `factor` times as many rows (every pipe's
        work scaled; an estimate: per-chunk constants scale too)."""
        return ChunkProfile(self.latency, [(b, c * factor) for b, c in self.loads],
                            [(r, w, c * factor) for r, w, c in self.steps],
                            [(b, c * factor, a) for b, c, a in self.stores])

    def keys(self) -> set:
        """The buffers a mover touches."""
        return {b for b, _ in self.loads} | {b for b, _, _ in self.stores}

    def vector(self) -> float:
        return sum(c for _, _, c in self.steps)

    def _v_marks(self) -> tuple[dict, dict, list]:
        """Per buffer: V time when first written, last read or written; the
        V time at the end of each step."""
        first_write: dict = {}
        last: dict = {}
        ends = []
        t = 0.0
        for reads, writes, cycles in self.steps:
            start = t
            t += cycles
            ends.append(t)
            for b in writes:
                first_write.setdefault(b, start)
            for b in set(reads) | set(writes):
                last[b] = t
        return first_write, last, ends

    def landings(self, slots: dict | None = None, alone: bool = False) -> tuple[dict, float, int]:
        """(buffer -> when its store's flag fires, after the chunk's vector
        work started; MTE3 cycles of the chunk; flags MTE3 sets). A store
        whose buffer has one set is followed by its own flag (the next
        chunk's vector work waits for it within the loop body); the flags
        of the others are loop-carried, and npu-insert-sync sinks them to
        the end of their run of stores (stores with no vector work between
        them): one per run. Each flag holds MTE3 until every store before
        it has landed. `alone`: the only chunk, no flags between its stores."""
        _, _, ends = self._v_marks()
        slots = slots or {}
        t3, landed, flags, busy = 0.0, {}, 0, 0.0
        pending: list = []

        def flag() -> None:
            nonlocal t3, flags, pending
            t3 += self.latency
            flags += 1
            for r in pending:
                landed[r] = t3
            pending = []

        previous = None
        for b, cycles, after in self.stores:
            if pending and after != previous and not alone:  # vector work between: a new run
                flag()
            ready = ends[after] if after < len(ends) else ends[-1] if ends else 0.0
            t3 = max(t3, ready) + cycles
            busy += cycles
            pending.append(b)
            previous = after
            if slots.get(b, 2) < 2 and not alone:
                flag()
        if pending:
            flag()
        return landed, busy + flags * self.latency, flags

    def period(self, slots: dict, loaded: set) -> float:
        """The steady-state period with `slots[b]` sets of buffer b
        (`loaded`: the buffers a load writes)."""
        first_write, last, _ = self._v_marks()
        landed, mte3, _ = self.landings(slots)
        mte2 = sum(c for _, c in self.loads) + self.latency
        p = max(mte2, self.vector(), mte3)
        offset = 0.0
        offsets = {}
        for b, c in self.loads:
            offsets.setdefault(b, offset)
            offset += c
        for b, s in slots.items():
            done = landed.get(b, last.get(b, 0.0))
            if b in loaded:
                if s < 2:
                    return float("inf")
                p = max(p, (done - offsets.get(b, 0.0)) / (s - 1))
            else:
                p = max(p, (done - first_write.get(b, 0.0)) / s)
        return p

    def total(self, chunks: int, slots: dict, loaded: set) -> float:
        """Estimated cycles of `chunks` such chunks."""
        landed, _, _ = self.landings(slots, alone=chunks == 1)
        mte2 = sum(c for _, c in self.loads) + self.latency
        tail = max([self.vector()] + list(landed.values()))
        return mte2 + (chunks - 1) * self.period(slots, loaded) + tail

    def chain_end(self, chunks: list[int], slots: dict, turns: int = 0) -> float:
        """When the last of `chunks` (rows, in order; this profile is one
        row's) has stored, as a chain rather than a steady state: each
        chunk's loads after the previous chunk's have landed (its flag holds
        MTE2), its vector work after its loads and the previous chunk's
        vector work. With `turns` sets of buffers taken by turns (more
        chunks than sets), a chunk's load into a buffer also waits until the
        chunk `slots[b]` before it is done with it: its last vector read, or
        the landing of a store made from it."""
        loaded = v_end = end = 0.0
        done: list[dict] = []  # per chunk: buffer -> when it is free again
        _, last, _ = self._v_marks()
        for j, rows in enumerate(chunks):
            p = self.scaled(rows)
            t2 = loaded
            for b, c in p.loads:
                s = min(slots.get(b, 2), turns) if turns else 0
                if s and j >= s:
                    t2 = max(t2, done[j - s].get(b, 0.0))
                t2 += c
            loaded = t2 + self.latency
            v_start = max(loaded, v_end)
            v_end = v_start + p.vector()
            landed, _, _ = p.landings(slots, alone=len(chunks) == 1)
            end = max([end, v_end] + [v_start + t for t in landed.values()])
            free = {b: v_start + t * rows for b, t in last.items()}
            free.update({b: v_start + t for b, t in landed.items()})
            done.append(free)
        return end
