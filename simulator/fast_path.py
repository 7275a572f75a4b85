"""One bound operand set's checks and effect as a function written for it.

`Machine.execute` is the simulator's innermost loop. Its generic form walks
the bound reads and writes and tests, per access, which checks apply (does
the instruction carry uninitialised bytes? whole granules? which pipe?);
all of that is fixed once the operand set is bound. `runner` returns a
function that does only the dynamic part, with every fixed value (memory,
pattern, address, clean-read key, stamp views, summaries of its hazard
groups) held in its closure.

The checks are those of the generic path, in the same order, with the same
calls on the slow paths; only the tests whose answer is known in advance
are gone. The source depends only on the shape of the operand set (pipe,
number of reads and writes, which stamp whole granules, races, numerics),
so each shape is compiled once and each binding only fills in its values.
Cross-core launches keep the generic path (`Machine.execute_generic`).
"""

from __future__ import annotations

from typing import Callable

from npu.simulator.hazards import V, HazardDetector
from npu.simulator.stamps import selection

# Clock components of the five memory pipes (V=1, M=2, MTE1..3=3..5): the
# runner's locals c1..c5.
_MEMORY_PIPES = (1, 2, 3, 4, 5)
_FACTORIES: dict[tuple, Callable] = {}


def _uncovered(summary: str, pipes: tuple[int, ...]) -> str:
    """Some pipe of `pipes` made an access recorded in `summary` at an epoch
    the clock does not cover."""
    return " or ".join(f"{summary}[{q}] > c{q}" for q in pipes)


def _stamp(tag: str, whole: bool) -> list[str]:
    """Stamp the access's bytes: its whole granules with one fill of their
    stamps (and, while any granule of the memory is stored per byte, of
    their mixed flags), else byte by byte."""
    if not whole:
        return [f"st{tag}.set(pat{tag}, addr{tag}, stamp)"]
    return [f"fill{tag}(stamp)", f"if st{tag}.any_mixed:", f"    unmix{tag}(False)"]


def _source(pipe: int, reads: tuple[bool, ...], writes: tuple[bool, ...], races: bool,
            numerics: bool, carries: bool) -> tuple[list[str], str]:
    """(closure variables, source of `make(...)` returning `run`) for one shape;
    `reads` and `writes` say per access whether it stamps whole granules."""
    names = ["hz", "instr", "who", "initialised", "compute", "mems", "addrs", "selection"]
    body = ["_, c1, c2, c3, c4, c5, _ = clock_list"]
    if carries:
        body.append("carry = False")
    for k, whole in enumerate(reads):
        t = f"r{k}"
        names += [f"mem{t}", f"pat{t}", f"addr{t}", f"tok{t}", f"st{t}", f"sw{t}", f"sr{t}",
                  f"fill{t}", f"unmix{t}"]
        check = (f"tok{t} not in initialised and "
                 f"hz.check_initialised(mem{t}, pat{t}, addr{t}, tok{t}, instr)")
        body += [f"if {check}:", "    carry = True"] if carries else [check]
        if races:
            body += [f"if {_uncovered(f'sw{t}', _MEMORY_PIPES)}:",
                     f"    hz.check_read_vs_writes(mem{t}, pat{t}, addr{t}, {pipe}, clock, "
                     f"clock_list, sw{t}, who)",
                     f"sr{t}[{pipe}] = n"]
        body += _stamp(t, whole)
    # Inside V, write-after-write and write-after-read are ordered by the pipeline.
    others = tuple(q for q in _MEMORY_PIPES if not (pipe == V and q == V))
    for k, whole in enumerate(writes):
        t = f"w{k}"
        names += [f"mem{t}", f"pat{t}", f"addr{t}", f"st{t}", f"sw{t}", f"sr{t}", f"fill{t}",
                  f"unmix{t}"]
        if races:
            body += [f"if {_uncovered(f'sw{t}', others)}:",
                     f"    hz.check_write_vs_writes(mem{t}, pat{t}, addr{t}, {pipe}, clock, "
                     f"clock_list, sw{t}, who)",
                     f"if {_uncovered(f'sr{t}', others)}:",
                     f"    hz.check_write_vs_reads(mem{t}, pat{t}, addr{t}, {pipe}, clock, "
                     f"clock_list, sr{t}, who)",
                     f"sw{t}[{pipe}] = n"]
        body += _stamp(t, whole)
        # Freshly written bytes are initialised (unless this write carries flags).
        body += [f"if mem{t}.uninit is not None{' and not carry' if carries else ''}:",
                 f"    mem{t}.uninit.data[selection(pat{t}, addr{t})] = 0"]
    if numerics:
        body.append("compute()")
    if carries:
        # Every destination byte gets the flag of the source byte it came from.
        body += ["if carry:",
                 "    instr.compute([m.uninit_shadow() for m in mems], addrs)",
                 "    initialised.clear()"]
    source = (f"def make({', '.join(names)}):\n"
              "    def run(stamp, n, clock, clock_list):\n"
              + "".join(f"        {line}\n" for line in body)
              + "    return run\n")
    return names, source


def runner(hz: HazardDetector, instr, reads: tuple, writes: tuple, mems: list, addrs: list,
           compute: Callable[[], None], numerics: bool) -> Callable:
    """`run(stamp, n, clock, clock_list)`: the checks and effect of `instr`
    on its bound `reads` and `writes` (see `Machine.bind`)."""
    carries = instr.moves and bool(reads)
    for w in writes:
        # The generic path adds the pipe after its write's checks. Only a pipe
        # with an uncovered write to the access's group (so one it has already
        # made) is looked up in `writers`, so adding it before is exact.
        w[0].writers.add(instr.pipe)
    shape = (instr.pipe, tuple(r[6] is not None for r in reads),
             tuple(w[5] is not None for w in writes), hz.races, numerics, carries)
    factory = _FACTORIES.get(shape)
    if factory is None:
        names, source = _source(*shape)
        namespace: dict = {}
        exec(compile(source, f"<runner {shape}>", "exec"), {}, namespace)
        factory = _FACTORIES[shape] = namespace["make"]
    values = [hz, instr, instr.who, hz.initialised, compute, mems, addrs, selection]
    for mem, group, pat, addr, token, stamps, whole, _ in reads:
        values += [mem, pat, addr, token, stamps, hz.summary_w[group], hz.summary_r[group],
                   *((whole[0].fill, whole[1].fill) if whole is not None else (None, None))]
    for mem, group, pat, addr, stamps, whole, _ in writes:
        values += [mem, pat, addr, stamps, hz.summary_w[group], hz.summary_r[group],
                   *((whole[0].fill, whole[1].fill) if whole is not None else (None, None))]
    return factory(*values)
