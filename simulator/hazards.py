"""Race and uninitialised-read detection, independent of this run's timing.

Happens-before is tracked with vector clocks, one component per pipe:

* within a pipe other than V, queue order orders everything (the pipe's own
  component advances with each instruction);
* V is pipelined: a later vector instruction may read UB before an earlier
  one's write lands, so V's own component only advances at pipe_barrier(V)
  (or pipe_barrier(ALL), or a flag chain back into V). Write-after-read and
  write-after-write inside V are safe on an in-order pipeline and not flagged;
* set_flag publishes the setting pipe's clock (with every earlier instruction
  of that pipe finished), wait_flag joins it into the waiting pipe's clock;
* the scalar unit's clock flows into every instruction it dispatches.

Two accesses race when they touch a common byte, at least one writes, and the
earlier one's epoch is not covered by the later one's clock. Because the check
compares clocks, never times, a racy program fails even when its timing
happened to come out right.

Per byte the shadow keeps the last writer's stamp and, per pipe, the last
reader's stamp (`stamps.Stamps`: one stamp per granule while its bytes agree). Per overlap group (see `memory.Region.group`) a summary of the
newest epoch per pipe lets most accesses skip the per-byte check entirely.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from npu.simulator import compiled
from npu.simulator.errors import RACE, UNINITIALIZED, SimulationError
from npu.simulator.access import Pattern, bursts_view
from npu.simulator.memory import Memory
from npu.simulator.stamps import selection

PIPE_NAMES = ("S", "V", "M", "MTE1", "MTE2", "MTE3")
S, V, M, MTE1, MTE2, MTE3 = range(6)
INIT = 6  # clock component of the caller's inputs: always covered
NCOMP = 7
MAX_REPORTED = 50
COVERS_ALL = np.iinfo(np.int32).max  # above every stamp
SMALL = 64  # stamps few enough to test as a Python list


def least(stamps: np.ndarray) -> int:
    """The smallest stamp: a few by Python's `min` on a list, which beats
    numpy's reduction set-up."""
    return min(stamps.tolist()) if stamps.size <= SMALL else int(stamps.min())


def newest(stamps: np.ndarray) -> int:
    """The largest stamp (as `least`)."""
    return max(stamps.tolist()) if stamps.size <= SMALL else int(stamps.max())
NONE, MANY = -1, -2  # `CrossCoreChecker`'s per-byte writer / reader: none; several readers


class HazardDetector:
    def __init__(self, n_entries: int, n_groups: int,
                 describe: Callable[[int], tuple[str, str, str]], races: bool, strict: bool):
        # stamp -> (pipe, epoch); stamp 0 = inputs, -1 (last slot) = never written.
        self.stamp_pipe = np.full(n_entries + 2, INIT, np.int64)
        self.stamp_n = np.zeros(n_entries + 2, np.int64)
        # Per pipe, the stamps of its instructions in execution order: a pipe
        # runs in dispatch order, so its epochs grow with its stamps.
        # Kept as index arrays; the lists are made when a slow path first asks.
        self._pipe_stamps: list[np.ndarray] = [np.zeros(0, np.int64)] * NCOMP
        self._pipe_stamp_lists: list[list[int]] | None = None
        # Per pipe, how many of its instructions have executed (the run's counters).
        self.executed: list[int] = [0] * NCOMP
        self.describe = describe  # stamp -> (op name, pipe name, location)
        self.races = races
        self.strict = strict
        # Per overlap group, the newest epoch per pipe of its writes / reads.
        self.summary_w = [[0] * NCOMP for _ in range(n_groups)]
        self.summary_r = [[0] * NCOMP for _ in range(n_groups)]
        self.initialised: set = set()  # keys of reads known to be clean (`Machine.bind`)
        self.hazards: list[dict] = []
        self._seen: set[tuple] = set()

    def number_stamps(self, trace: list, executed: list[int], op_pipes: np.ndarray) -> None:
        """Every instruction's stamp (its trace index + 1), pipe and epoch, known
        before the run: a pipe executes its instructions in trace order, so the
        k-th of pipe p is epoch k. `executed` is the run's live count per pipe;
        `op_pipes` each entry's `Instr.op_pipe`."""
        # Index arrays, not boolean masks: 7 masked assignments and lists of
        # every stamp were 3 ms of the vector bench's 70 (timing only).
        stamp_pipe, stamp_n = self.stamp_pipe[1:len(trace) + 1], self.stamp_n[1:len(trace) + 1]
        for p in range(NCOMP):
            mine = np.flatnonzero(op_pipes == p)
            if not mine.size:
                continue
            stamp_pipe[mine] = p
            stamp_n[mine] = np.arange(1, mine.size + 1)
            self._pipe_stamps[p] = mine + 1
        self._pipe_stamp_lists = None
        self.executed = executed

    @property
    def pipe_stamps(self) -> list[list[int]]:
        """Per pipe, the stamps of its instructions in execution order (a pipe
        runs in dispatch order, so its epochs grow with its stamps); made on
        the first ask (the race checks' slow paths, `csrc/covered.c`)."""
        if self._pipe_stamp_lists is None:
            self._pipe_stamp_lists = [a.tolist() for a in self._pipe_stamps]
        return self._pipe_stamp_lists

    # -- reporting --------------------------------------------------------------

    def report(self, kind: str, message: str, where: str, key: tuple) -> None:
        if self.strict:
            raise SimulationError(kind, message, where)
        if key in self._seen or len(self.hazards) >= MAX_REPORTED:
            return
        self._seen.add(key)
        self.hazards.append({"kind": kind, "message": message, "location": where})

    # -- accesses -----------------------------------------------------------------

    def check_initialised(self, mem: Memory, pat: Pattern, addr: int, ckey, instr) -> bool:
        """True when `instr` is a movement that must carry uninitialised bytes.

        A computing instruction reading uninitialised bytes is a fault. A clean
        read is cached in `initialised` until some movement carries
        uninitialised bytes somewhere (the machine then clears the cache).
        """
        shadow = mem.uninit
        sel = None
        moved = None
        if shadow is not None:
            sel = selection(pat, addr)
            moved = shadow.data[sel]
        stamps = mem.wstamp.values(pat, addr)
        if least(stamps) >= 0 and (moved is None or not np.count_nonzero(moved)):
            self.initialised.add(ckey)
            return False
        if sel is None:
            sel = selection(pat, addr)
        ws = mem.wstamp.get(sel)
        bad = ws < 0
        if moved is not None:
            bad |= moved != 0
        if instr.moves:
            # Never-written source bytes become explicit flags, so the
            # instruction's own data movement can carry them to the destination.
            mem.uninit_shadow().data[sel] = bad
            return True
        self._report_uninit(mem, sel, bad, ws, instr.who)
        return False

    def check_read_vs_writes(self, mem: Memory, pat: Pattern, addr: int, pipe: int,
                             clock: list, clock_list: list, sw: list,
                             who: tuple[str, str, str]) -> None:
        """Some pipe wrote this group (summary `sw`) at an epoch the reader's
        clock does not cover."""
        self._check_writes(mem, pat, addr, pipe, clock, clock_list, sw, who, reading=True)

    def check_write_vs_writes(self, mem: Memory, pat: Pattern, addr: int, pipe: int,
                              clock: list, clock_list: list, sw: list,
                              who: tuple[str, str, str]) -> None:
        # V after V: write-after-write is ordered by the pipeline.
        if pipe != V or any(sw[q] > clock_list[q] for q in range(NCOMP) if q != V):
            self._check_writes(mem, pat, addr, pipe, clock, clock_list, sw, who, reading=False)

    def check_write_vs_reads(self, mem: Memory, pat: Pattern, addr: int, pipe: int,
                             clock: list, clock_list: list, sr: list,
                             who: tuple[str, str, str]) -> None:
        for q in range(1, 6):
            # V after V: write-after-read is ordered by the pipeline.
            if sr[q] > clock_list[q] and not (q == pipe == V) and q in mem.rstamp:
                self._check_reads(mem, pat, addr, q, clock, clock_list, who)

    # -- the per-byte checks ----------------------------------------------------
    # Each first compares the newest stamp the access covers with the newest
    # stamp the clock covers on each pipe that could have left it (a pipe's
    # epochs grow with its stamps), then tests every stamp the access covers
    # (one per uniform granule), and only goes byte by byte, to name the
    # bytes, when some stamp fails.

    def _covered(self, q: int, epoch: int) -> int:
        """The newest stamp of pipe q's instructions up to `epoch`; every stamp
        of q up to it is covered, every later one is not."""
        if epoch >= self.executed[q]:
            return COVERS_ALL
        return self.pipe_stamps[q][epoch - 1] if epoch > 0 else 0

    def _racing_writes(self, ws: np.ndarray, pipe: int, clock: list, reading: bool) -> np.ndarray:
        wp = self.stamp_pipe[ws]
        bad = np.asarray(clock)[wp] < self.stamp_n[ws]
        if pipe == V and not reading:
            bad &= wp != V  # V after V: write-after-write is ordered by the pipeline
        return bad

    def _check_writes(self, mem: Memory, pat: Pattern, addr: int, pipe: int, clock: list,
                      clock_list: list, sw: list, who: tuple[str, str, str], reading: bool) -> None:
        stamps = mem.wstamp.values(pat, addr)
        # Every byte of the access was last written through this group, so only
        # pipes whose newest write to the group the clock does not cover (`sw`)
        # can have left an uncovered stamp.
        top = min([self._covered(q, clock_list[q]) for q in mem.writers if sw[q] > clock_list[q]],
                  default=COVERS_ALL)
        if newest(stamps) <= top or not np.count_nonzero(self._racing_writes(stamps, pipe, clock, reading)):
            return
        sel = selection(pat, addr)
        ws = mem.wstamp.get(sel)
        bad = self._racing_writes(ws, pipe, clock, reading)
        first = int(np.argmax(bad))
        self._report_race(mem, sel, bad, int(ws[first]), who,
                          "reads" if reading else "overwrites", "written")

    def _check_reads(self, mem: Memory, pat: Pattern, addr: int, reader_pipe: int,
                     clock: list, clock_list: list, who: tuple[str, str, str]) -> None:
        stamps = mem.rstamp[reader_pipe]
        if newest(stamps.values(pat, addr)) <= self._covered(reader_pipe, clock_list[reader_pipe]):
            return
        sel = selection(pat, addr)
        rs = stamps.get(sel)
        bad = clock[reader_pipe] < self.stamp_n[rs]
        first = int(np.argmax(bad))
        self._report_race(mem, sel, bad, int(rs[first]), who, "overwrites", "read")

    def _byte_range(self, sel, bad: np.ndarray) -> tuple[int, int]:
        if isinstance(sel, slice):
            idx = np.flatnonzero(bad) + sel.start
        else:
            idx = np.asarray(sel)[bad]
        return int(idx.min()), int(idx.max()) + 1

    def _report_race(self, mem: Memory, sel, bad: np.ndarray, other: int, who: tuple[str, str, str],
                     verb: str, other_verb: str) -> None:
        name, my_pipe, where = who
        lo, hi = self._byte_range(sel, bad)
        o_name, o_pipe, o_where = self.describe(other)
        if o_pipe == "V" and my_pipe == "V":
            why = "no pipe_barrier(V) between them (the vector pipeline does not order them)"
        else:
            why = "no set_flag/wait_flag chain or barrier orders them"
        msg = (f"'{name}' on pipe {my_pipe} {verb} {mem.name} bytes [{lo}, {hi}) {other_verb} by "
               f"'{o_name}' on pipe {o_pipe} at {o_where}; {why}")
        self.report(RACE, msg, where, (RACE, where, o_where))

    def _report_uninit(self, mem: Memory, sel, bad: np.ndarray, ws: np.ndarray,
                       who: tuple[str, str, str]) -> None:
        name, _, where = who
        lo, hi = self._byte_range(sel, bad)
        carried = bad & (ws >= 0)  # written, but by a movement of uninitialised bytes
        if not carried.any():
            msg = (f"'{name}' reads {mem.name} bytes [{lo}, {hi}) that were never written "
                   f"({int(bad.sum())} of them uninitialised)")
        else:
            m_name, m_pipe, m_where = self.describe(int(ws[int(np.argmax(carried))]))
            msg = (f"'{name}' reads {mem.name} bytes [{lo}, {hi}) that hold uninitialised data "
                   f"({int(bad.sum())} of them), moved there by '{m_name}' on pipe {m_pipe} at "
                   f"{m_where} from bytes that were never written")
        self.report(UNINITIALIZED, msg, where, (UNINITIALIZED, where))

    def check_results(self, args: list) -> None:
        """An argument's own bytes must not end up holding uninitialised data
        (its padding may); `args` are (memory, own byte count, argument number)."""
        for mem, nbytes, i in args:
            if mem.uninit is None:
                continue
            bad = mem.uninit.data[:nbytes] != 0
            if not bad.any():
                continue
            lo, hi = self._byte_range(slice(0, nbytes), bad)
            w_name, w_pipe, w_where = self.describe(mem.wstamp.at(lo))
            self.report(UNINITIALIZED, f"'{w_name}' on pipe {w_pipe} leaves uninitialised data in "
                        f"argument #{i}: {mem.name} bytes [{lo}, {hi}) ({int(bad.sum())} of them) "
                        f"were moved from bytes that were never written", w_where,
                        (UNINITIALIZED, w_where, i))


class CrossCoreChecker:
    """GM races between the cores of one launch.

    The only order between cores is the chip barrier (`cce.sync_all`):
    between two barriers (an epoch) any byte of GM that one core writes and
    another core reads or writes is a race, whatever the timing. Per GM byte
    it keeps the core that wrote it in this epoch and the cores that read
    it; the caller's inputs are neither, and a barrier
    (`new_epoch`) orders everything before it before everything after it.
    A GM tensor no core has written in the epoch (the weights, an earlier
    op's results) cannot race on a read: its reads are only noted, and
    become per-byte readers if a write to it comes in the same epoch.

    Per byte, one int8 each: the writer (-1: none) and the reader (-1: none,
    a core: only that one, MANY: two or more). A write races with the reads
    of every core but its own, so that is all a mask of reading cores would
    tell (the same hazards); it is 2 bytes per GM byte instead of 10 (BERT-base
    x12 on 32 cores, timing only: the state's allocation and the C byte loops,
    which are memory-bound, 1.49 -> 0.73 profiled s).
    """

    def __init__(self, cores: int):
        if cores > 64:
            raise ValueError("the cross-core race check tracks at most 64 cores")
        self.cores = cores
        self._writer: dict[Memory, np.ndarray] = {}
        self._readers: dict[Memory, np.ndarray] = {}
        self._reads: dict[Memory, list[tuple[Pattern, int, int]]] = {}  # not yet per byte
        # Read, and written, since `take_touched` (epochs aside)
        self._read: set[Memory] = set()
        self._written: set[Memory] = set()
        # The per-byte test and update of equal runs of bytes, compiled
        # (`compiled.py`): one C call instead of about ten numpy calls.
        self._runs = compiled.cross_runs()

    def new_epoch(self) -> None:
        """Every core passed a barrier: earlier accesses conflict with none later."""
        self._writer.clear()
        self._readers.clear()
        self._reads.clear()

    def _state(self, mem: Memory) -> tuple[np.ndarray, np.ndarray]:
        w = self._writer.get(mem)
        if w is None:
            w = self._writer[mem] = np.full(mem.data.size, NONE, np.int8)
            readers = self._readers[mem] = np.full(mem.data.size, NONE, np.int8)
            for pat, addr, core in self._reads.pop(mem, ()):
                sel = selection(pat, addr)
                readers[sel] = _read_by(readers[sel], core)
        return w, self._readers[mem]

    def take_touched(self) -> tuple[set[Memory], set[Memory]]:
        """The GM memories read, and those written, since the last call: the
        only ones whose own-core stamps a hand-over to the next core must
        reset (readers) or clamp (writers); every other's already are."""
        touched = self._read, self._written
        self._read, self._written = set(), set()
        return touched

    def access(self, mem: Memory, pat: Pattern, addr: int, write: bool, core: int, instr,
               detector: HazardDetector) -> None:
        """Check and record one core's access of `pat` at `addr`: on views of
        the per-byte state when its bytes are one run or equal bursts."""
        (self._written if write else self._read).add(mem)
        if not write and mem not in self._writer:  # unwritten in this epoch: no race
            self._reads.setdefault(mem, []).append((pat, addr, core))
            return
        writer, readers = self._state(mem)
        if self._runs is not None:
            if pat.bursts is not None:
                n, run, stride = pat.bursts
                done = self._runs(writer, readers, addr, n, run, stride, core, write)
            elif pat.explicit_idx is None:  # dense: one run
                done = self._runs(writer, readers, addr + pat.lo, 1, pat.hi - pat.lo,
                                  pat.hi - pat.lo, core, write)
            else:
                done = None
            if done is False:  # no conflict, and recorded; else numpy decides
                return
        w_view = bursts_view(writer, addr, pat)
        if w_view is not None:
            w, r = w_view, bursts_view(readers, addr, pat)
        else:
            sel = selection(pat, addr)
            w, r = writer[sel], readers[sel]
        other = (w >= 0) & (w != core)
        if write:
            other |= (r != NONE) & (r != core)  # some other core read it
        if other.any():
            self._report(mem, pat, addr, other, w, write, core, instr, detector)
        if w_view is not None:
            if write:
                w[...] = core
            else:
                r[...] = _read_by(r, core)
        elif write:
            writer[sel] = core
        else:
            readers[sel] = _read_by(r, core)

    @staticmethod
    def _report(mem: Memory, pat: Pattern, addr: int, other: np.ndarray, w: np.ndarray,
                write: bool, core: int, instr, detector: HazardDetector) -> None:
        idx = np.flatnonzero(other)
        sel = selection(pat, addr)
        lo = int(idx[0] + sel.start) if isinstance(sel, slice) else int(sel[idx[0]])
        first = int(w.reshape(-1)[idx[0]])
        them = f"core {first} writes" if first >= 0 and first != core else "another core reads"
        verb = "writes" if write else "reads"
        detector.report(RACE, f"'{instr.name}' on core {core} {verb} {mem.name} byte {lo} "
                        f"({idx.size} bytes in all) that {them} too, with no ordering between "
                        "the cores of a launch", instr.where, (RACE, "cores", instr.where, mem.name))


def _read_by(readers: np.ndarray, core: int) -> np.ndarray:
    """The per-byte readers once `core` has read these bytes too."""
    return np.where((readers == NONE) | (readers == core), np.int8(core), np.int8(MANY))
