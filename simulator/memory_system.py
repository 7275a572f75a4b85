"""The chip's memory system: GM bandwidth shared by every core, and an L2.

Every GM transfer (`cce.copy_gm_to_*`, `cce.copy_ub_to_gm`) asks `transfer`
for its data-phase cycles when its pipe starts it. All numbers come from the
target:

* each core's mover runs at most at its path's `bytes_per_cycle` (the
  per-core MTE limit);
* the chip's GM bus carries `gm_chip_bytes_per_cycle` in total, reads and
  writes alike. The bus is a calendar of `BIN`-cycle bins, each holding the
  bytes it still has room for; a transfer takes, bin after bin, what its
  core's rate allows and the bin has left. Cores are simulated one after
  another on the same calendar, so the bus behaves as a fixed-priority
  arbiter (lower block index first): the chip's total time under saturation
  is right to within a bin, the split of the delay between cores is not
  fair-share;
* every burst costs `gm_burst_cycles` of request set-up on the core's mover
  (many 32-byte bursts cost more than one long transfer of the same bytes);
* L2 (`l2_bytes`, `l2_line_bytes`): a read of a line counts as a hit when
  the line was touched (by any core) less than `l2_bytes /
  gm_chip_bytes_per_cycle` cycles before or after, in simulated time: the
  shortest time in which the chip can bring in enough new data to evict it
  (an approximation of LRU by line that errs towards misses when the bus is
  not saturated). A hit costs the core's mover time but no chip bandwidth.
  Writes go through to GM and leave their lines in L2.
"""

from __future__ import annotations

import numpy as np

from npu.simulator import compiled
from npu.simulator.access import sorted_unique
from npu.target import Target

BIN = 64  # cycles per bus calendar bin
SMALL_RUN = 16  # L2 lines of a transfer short enough to test one by one


class MemorySystem:
    def __init__(self, target: Target):
        self.target = target
        self.bin_cycles = BIN  # (what the compiled transfer, `csrc/gmxfer.c`, reads)
        self.bin_bytes = target.gm_chip_bytes_per_cycle * BIN
        self.room = np.full(1024, float(self.bin_bytes))
        self.line = target.l2_line_bytes
        self.window = target.l2_bytes / target.gm_chip_bytes_per_cycle
        self._last_touch: dict[object, np.ndarray] = {}
        self._lines_of: dict[tuple, np.ndarray] = {}
        self.gm_bytes = {"read": 0, "write": 0}
        self.l2_hit_bytes = 0
        self.bus_bytes = 0.0
        self.last_cycle = 0
        # The loops below compiled (`csrc/memsys.c`; None: Python's): 21.6k
        # transfers of a 32-core BERT-base x12 took 0.44 of 7.5 CPU s here.
        self._ctouch, self._cbus = compiled.memsys()

    # -- L2 -------------------------------------------------------------------

    def _last(self, mem) -> np.ndarray:
        """When each line of `mem` was last touched (-inf: never)."""
        last = self._last_touch.get(mem)
        if last is None:
            n = -(-mem.data.size // self.line)
            last = self._last_touch[mem] = np.full(n, -np.inf)
        return last

    def _lines(self, last: np.ndarray, pattern, addr: int):
        """The L2 lines the transfer touches, as a selection of `last`: a
        slice when they are one run (a dense pattern), a strided 2-D view
        when they are equal line-aligned bursts, else their indices (each
        line once in every case)."""
        line = self.line
        first = (addr - addr % line) // line
        if pattern.dense:
            shift = addr % line
            return slice(first + (pattern.lo + shift) // line,
                         first + (pattern.hi - 1 + shift) // line + 1)
        if pattern.bursts is not None and addr % line == 0:
            n, burst, stride = pattern.bursts
            if burst % line == 0 and stride % line == 0 and stride >= burst:
                per, step = burst // line, stride // line
                if first + n * step <= last.size:
                    return last[first:first + n * step].reshape(n, step)[:, :per]
        key = (pattern.key, addr % line)
        rel = self._lines_of.get(key)
        if rel is None:
            rel = self._lines_of[key] = sorted_unique((pattern.byte_idx + addr % line) // line)
        return rel + first

    def _selection(self, last: np.ndarray, pattern, addr: int) -> tuple:
        """`_lines` as `l2_touch` takes it: (first, a, b, n, step, per, rel)."""
        line = self.line
        shift = addr % line
        first = (addr - shift) // line
        if pattern.dense:
            return (0, first + (pattern.lo + shift) // line,
                    first + (pattern.hi - 1 + shift) // line + 1, 0, 0, 0, None)
        if pattern.bursts is not None and shift == 0:
            n, burst, stride = pattern.bursts
            if burst % line == 0 and stride % line == 0 and stride >= burst:
                per, step = burst // line, stride // line
                if first + n * step <= last.size:
                    return (first, 0, 0, n, step, per, None)
        key = (pattern.key, shift)
        rel = self._lines_of.get(key)
        if rel is None:
            rel = self._lines_of[key] = sorted_unique((pattern.byte_idx + shift) // line)
        return (first, 0, 0, 0, 0, 0, rel)

    def _touch(self, mem, pattern, addr: int, t0: int) -> tuple[int, int]:
        """(lines the transfer touches that hit in L2, lines in all); marks
        all of them touched at t0."""
        last = self._last(mem)
        if self._ctouch is not None:
            done = self._ctouch(last, *self._selection(last, pattern, addr), t0, self.window)
            if done is not None:
                return done
        if pattern.dense:
            # A dense transfer over a few lines (the common short copy): the
            # same test and update line by line on Python floats.
            line = self.line
            shift = addr % line
            first = (addr - shift) // line
            a = first + (pattern.lo + shift) // line
            b = min(first + (pattern.hi - 1 + shift) // line + 1, last.size)
            if b - a <= SMALL_RUN:
                window, item = self.window, last.item
                hits = 0
                for k in range(a, b):
                    s = item(k)
                    if abs(s - t0) <= window:
                        hits += 1
                    if s < t0:
                        last[k] = t0
                return hits, max(b - a, 0)
        lines = self._lines(last, pattern, addr)
        if isinstance(lines, np.ndarray) and lines.ndim == 2:  # a view of `last`
            hits = int(np.count_nonzero(np.abs(lines - t0) <= self.window))
            np.maximum(lines, t0, out=lines)
            return hits, lines.size
        seen = last[lines]
        if isinstance(lines, slice) and seen.size <= SMALL_RUN:
            # A few lines (short transfers): Python floats, the same doubles.
            window = self.window
            hits = sum(1 for s in seen.tolist() if abs(s - t0) <= window)
            np.maximum(seen, t0, out=seen)  # a view: updates `last`
            return hits, seen.size
        hits = int(np.count_nonzero(np.abs(seen - t0) <= self.window))
        last[lines] = np.maximum(seen, t0)
        return hits, seen.size

    # -- the bus --------------------------------------------------------------

    def transfer(self, t0: int, nbytes: int, n_bursts: int, rate: int, mem, pattern, addr: int,
                 write: bool) -> int:
        """Cycles the core's mover is busy with this transfer from cycle t0."""
        if write:
            chip = float(nbytes)
            self._touch(mem, pattern, addr, t0)
            self.gm_bytes["write"] += nbytes
        else:
            hits, n_lines = self._touch(mem, pattern, addr, t0)
            miss_share = 1.0 - hits / n_lines
            chip = nbytes * miss_share
            self.gm_bytes["read"] += nbytes
            self.l2_hit_bytes += nbytes - int(chip)
        self.bus_bytes += chip
        t = float(t0)
        if chip <= 0:
            t += nbytes / rate
        else:
            share = chip / nbytes  # bus bytes per byte the core moves
            left = float(nbytes)
            full = float(rate * BIN)  # what the core moves in a whole bin
            if self._cbus is not None and type(rate) is int:
                while left > 0:  # the loop below, compiled: its t and left
                    done = self._cbus(self.room, t, left, rate, share, BIN)
                    if done is None:
                        break
                    t, left, need = done
                    if need:
                        self._grow(need)
            while left > 0:
                b = int(t // BIN)
                if b + int(left // full) + 1 > self.room.size:
                    self._grow(b + int(left // full) + 1)
                if t == b * BIN and left > full:
                    # Whole bins with room for the core's full rate, all but the
                    # last one: the loop below would take `full` from each.
                    span = self.room[b:b + int((left - 1) // full)]
                    short = np.flatnonzero(span / share < full)
                    k = int(short[0]) if short.size else span.size
                    if k:
                        span[:k] -= full * share
                        left -= k * full
                        t = float((b + k) * BIN)
                        continue
                end = (b + 1) * BIN
                room = float(self.room[b])  # the same double, as a Python float
                take = min(left, rate * (end - t), room / share)
                self.room[b] = room - take * share
                left -= take
                t = t + take / rate if left <= 0 else end
        cycles = int(-(-(t - t0) // 1)) + n_bursts * self.target.gm_burst_cycles
        self.last_cycle = max(self.last_cycle, t0 + cycles)
        return max(cycles, 1)

    def _grow(self, bins: int) -> None:
        """Make the calendar at least `bins` long (new bins are empty)."""
        if bins > self.room.size:
            grown = np.full(max(self.room.size * 2, bins), float(self.bin_bytes))
            grown[:self.room.size] = self.room
            self.room = grown

    def summary(self, total_cycles: int) -> dict:
        t = self.target
        bound = self.bus_bytes / t.gm_chip_bytes_per_cycle
        return {
            "gm_read_bytes": self.gm_bytes["read"],
            "gm_write_bytes": self.gm_bytes["write"],
            "l2_hit_bytes": self.l2_hit_bytes,
            "chip_bus_bytes": int(self.bus_bytes),
            "chip_bus_bound_cycles": round(bound, 1),
            "chip_bus_utilisation": round(bound / total_cycles, 4) if total_cycles else 0.0,
        }
