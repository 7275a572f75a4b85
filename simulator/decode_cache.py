"""One decoded `Instr` per distinct hivm instruction, shared by the static ops
that spell it the same way.

A hivm instruction is a function of its op name, its configuration word, the
mask register, its operands' element types and the few attributes its
decoder reads (`round_mode`, a flag's pipes and event, ...). BERT-base x12
on 32 cores builds 22,584 `Instr`s (one per static op and word) of 134
distinct such keys: building them was 11% of a timing-only run (`Load`'s
bursts, a vector op's lane layouts, `Instr.finish`). So the first build of a
key is kept with the attribute reads it made (`RecordingReads`), and a later
op with the same key whose own attributes give the same answers to those
reads gets a copy of it carrying its own location (`clone`). A build that
fails is not kept: the next op with that key builds (and fails) on its own,
at its own location, so errors and their order are unchanged.
"""

from __future__ import annotations

from npu.simulator.errors import SimulationError
from npu.simulator.instruction import DecodeContext, Instr, facts_of

_MISSING = object()


class RecordingReads:
    """Mixed into a decode context: the attribute reads that reach the op
    (`DecodeContext`'s int, str, bool, float, ints) with their answers."""

    reads: list | None = None

    def _recorded(self, method: str, name: str, default) -> object:
        value = (getattr(DecodeContext, method)(self, name) if default is _MISSING
                 else getattr(DecodeContext, method)(self, name, default))
        if self.reads is not None:
            self.reads.append((method, name, default, value))
        return value


def answers(op, name: str, where: str, reads: list) -> bool:
    """Whether `op` (named `name`)'s attributes answer every recorded read as recorded."""
    probe = DecodeContext.__new__(DecodeContext)
    probe.op, probe.name, probe.where = op, name, where
    try:
        for method, name, default, value in reads:
            got = (getattr(DecodeContext, method)(probe, name) if default is _MISSING
                   else getattr(DecodeContext, method)(probe, name, default))
            if got != value or type(got) is not type(value):
                return False
    except SimulationError:
        return False
    return True


def clone(template: Instr, where: str) -> Instr:
    """`template` at another op's location: every fact shared (patterns,
    plan, costs, the effect's precomputed tables), `where` its own."""
    instr = template.__class__.__new__(template.__class__)
    instr.__dict__.update(template.__dict__)
    instr.where = where
    instr.who = (instr.name, instr.pipe_name, where)
    instr.facts = facts_of(instr)
    return instr


def attributes_of(op) -> tuple:
    """An op's attributes as (name, attribute) pairs: attributes hash and
    compare by value, so two ops with equal tuples answer every read alike."""
    attrs = op.attributes
    return tuple([(name, attrs[name]) for name in attrs])


class InstrCache:
    """Per decode (`HivmProgram`): key -> [(recorded reads, built Instr)];
    and (key, an op's whole attribute set) -> the Instr it got, so an op
    spelled like an earlier one is a copy without probing the builds'
    reads (which was a tenth of BERT-12's decode: its 11k flags and
    barriers share one key per op name)."""

    def __init__(self) -> None:
        self.built: dict[tuple, list[tuple[list, Instr]]] = {}
        self.same: dict[tuple, Instr] = {}

    @classmethod
    def of(cls, decoder) -> "InstrCache":
        """The cache of `decoder`'s decode (made on first use)."""
        cache = getattr(decoder, "hivm_instrs", None)
        if cache is None:
            cache = decoder.hivm_instrs = cls()
        return cache

    def find(self, key: tuple, op, where: str, attrs: tuple | None = None) -> Instr | None:
        """A copy of an earlier build of `key` (its op name first) at `where`,
        if `op` reads alike; `attrs`: the op's `attributes_of`, when known."""
        if attrs is not None:
            got = self.same.get((key, attrs))
            if got is not None:
                return clone(got, where)
        for reads, instr in self.built.get(key, ()):
            if answers(op, key[0], where, reads):
                instr = clone(instr, where)
                if attrs is not None:
                    self.same[key, attrs] = instr
                return instr
        return None

    def keep(self, key: tuple, reads: list, instr: Instr, attrs: tuple | None = None) -> None:
        self.built.setdefault(key, []).append((reads, instr))
        if attrs is not None:
            self.same[key, attrs] = instr
