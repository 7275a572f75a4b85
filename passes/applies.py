"""When a pass's option applies, and the one check every pass's options go
through (`Pass.refusal`, run when the pass is built and again when it runs).

An option applies when its declaration's `needs` hold: other options of the
same pass with the values they must have, `MANY_CORES` (the pass works on
a program split over several cores: `Pass.why_one_core` says why not), or a
`CoresNeed` (on the count of cores the program is split over). An option
given with a value other than its default that does not apply is refused in
one line, `<pass>: <option>: does not apply: <why>`: at construction what the
options and the target decide; once the pass sees the program, what only the
program decides (whether it is split over cores; an op's own options, or a
loop's `npu.double_buffer` mark, that may meet a need: `Pass.met_by_program`;
whether it has an op the option acts on: an `OnOps` need, a lowering's on
every option, `Pass.acts_on`; an op in the position it acts on, a 1x1 conv
whose result a residual Add reads: an `OnPattern` need, `npu.passes.patterns`).

A pass another pass builds (npu-lower's sub-passes) is built `unchecked`:
its builder checked the options it was given, in its own names
(`npu.passes.lower_applies`), and sets the others itself.
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from npu.dialects.ascend_pool import POOL2D

# In an `Option`'s `needs`: the option applies to a program split over
# several cores only (between its chip barriers).
MANY_CORES = "several cores"


@dataclass(frozen=True)
class CoresNeed:
    """In an `Option`'s `needs`: a test on the count of cores the program is
    split over, with the target, that the option's rule makes before it acts
    (the cores' movers together outrunning the chip's GM bus), so that the
    option is refused where the rule never could act. `why_not(cores,
    target)` says why that count fails it, or None."""

    what: str
    why_not: Callable[[int, Any], str | None] = field(compare=False, repr=False)


def split_cores(module) -> int:
    """The most cores any function of `module` is split over."""
    from npu.ir import block_dim, functions

    return max((block_dim(f) for f in functions(module)), default=1)


@dataclass(frozen=True)
class OnOps:
    """In an `Option`'s `needs` (or a pass's `acts_on`, every option's): the
    program has an op the option acts on, one named in `ops`, at any depth
    (a fused group's members too). `what` names them when it has none."""

    what: str
    ops: tuple[str, ...]

    def lacking(self, present: frozenset[str]) -> "OnOps | None":
        """The need `present` (the program's op names, `program_ops`) does
        not meet: this one, or None."""
        return None if present.intersection(self.ops) else self

    def unmet(self, present: frozenset[str]) -> str | None:
        """Why not, with `present` the program's op names, or None."""
        lacking = self.lacking(present)
        return None if lacking is None else NO_OPS + lacking.what


NO_OPS = "the program has no "  # how an unmet `OnOps` need is said


@dataclass(frozen=True)
class OnPattern(OnOps):
    """An `OnOps` need of an op of a kind (`ops`, said `kind`) in a position:
    one for which `finds(op)` holds (a 1x1 conv whose result a residual Add
    reads). Said as `kind` when the program has no op of the kind, else as
    `what`. The position is read in the IR's structure, before or after the
    fusions group the ops, never in a cost model's choice: what a pattern
    leaves out is an op the option never acts on. `program_ops` lists the
    `key` of each pattern the program shows."""

    kind: str = ""
    finds: Callable[[Any], bool] = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        _PATTERNS.append(self)

    @property
    def key(self) -> str:
        return f"pattern: {self.what}"

    def lacking(self, present: frozenset[str]) -> OnOps | None:
        if not present.intersection(self.ops):
            return OnOps(self.kind, self.ops)
        return None if self.key in present else self


_PATTERNS: list[OnPattern] = []  # every one declared (program_ops looks for each)


# The kinds of op options act on (`OnOps`), each once: the lowerings of
# convs, matmuls and pools handle these (`Pass.handles`).
CONVS = OnOps("conv", ("ascend.conv2d",))
MATMULS = OnOps("matmul", ("ascend.matmul", "ascend.batch_matmul"))
CUBE_OPS = OnOps("matmul or conv", MATMULS.ops + CONVS.ops)
BATCH_MATMULS = OnOps("batch_matmul (attention's Q.K^T)", ("ascend.batch_matmul",))
POOLS = OnOps("pool", (POOL2D,))
FRACTALIZES = OnOps("fractalize", ("ascend.fractalize",))
# The lowered program's (npu-double-buffer's, npu-prefetch's; in npu-lower
# the lowerings make them, `lower_options.MAKES`)
LOOPS = OnOps("loop (scf.for: a lowered op's)", ("scf.for",))
GM_LOADS = OnOps("copy from GM into L1 or UB (a lowered op's loads)",
                 ("cce.copy_gm_to_l1", "cce.copy_gm_to_ub"))


def row_ops() -> OnOps:
    """npu-fuse's row ops (elementwise, masks, last-axis reductions)."""
    from npu.costmodel.fusion.rows import ROW_OPS

    return OnOps("row op (elementwise or reduction)", ROW_OPS)


def program_ops(module) -> frozenset[str]:
    """The names of the ops in `module`, at any depth, and the `key` of
    each `OnPattern` it shows."""
    from npu.ir import walk_held

    ops: dict[str, list] = {}
    walk_held(module, lambda o: ops.setdefault(o.name, []).append(o))
    names = set(ops)
    for pattern in _PATTERNS:
        if any(pattern.finds(o) for name in pattern.ops for o in ops.get(name, ())):
            names.add(pattern.key)
    return frozenset(names)


def is_pair(need) -> bool:
    """Whether `need` is an (option, value) pair (not `MANY_CORES`, `OnOps`
    or `CoresNeed`)."""
    return isinstance(need, tuple)


_checking = contextvars.ContextVar("npu_passes_checking", default=True)


@contextlib.contextmanager
def unchecked() -> Iterator[None]:
    """Passes built inside are not checked for options that do not apply:
    the caller building them has checked the options it was given."""
    token = _checking.set(False)
    try:
        yield
    finally:
        _checking.reset(token)


def checking() -> bool:
    """Whether a pass built now checks its options (`unchecked`)."""
    return _checking.get()


def does_not_apply(flag: str, option: str, why: str) -> str:
    """The one-line refusal of `option` of pass `flag`."""
    return f"{flag}: {option}: does not apply: {why}"


def one_core_text(cores: int, target) -> str | None:
    """Why a split over `cores` (0: all of `target`'s) is on one core, or None."""
    if cores == 1:
        return "cores=1"
    if not cores and target.cores == 1:
        return f"{target.name} has one core"
    return None


def spelled(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def refusal(p, module=None) -> str | None:
    """The refusal of the first option given to pass `p` (other than at its
    default, by name) whose `needs` do not hold, or None. Without `module`
    (at construction) needs the program may meet are taken to hold."""
    by_name = {o.name: o for o in p.options}
    present: list[frozenset[str]] = []  # the program's op names, once asked for
    every = (p.acts_on,) if p.acts_on is not None else ()
    for name in sorted(p.given):
        option = by_name[name]
        if getattr(p, name.replace("-", "_")) == option.default:
            continue
        for need in (*every, *option.needs):
            why = _unmet(p, need, module, present)
            if why is not None:
                return does_not_apply(p.name, name, why)
    return None


def _unmet(p, need, module, present: list) -> str | None:
    if isinstance(need, OnOps):
        if module is None:
            return None
        if not present:
            present.append(program_ops(module))
        return need.unmet(present[0])
    if isinstance(need, CoresNeed):
        return None if module is None else need.why_not(split_cores(module), p.target)
    if need == MANY_CORES:
        one = p.why_one_core(module)
        return None if one is None else f"no split over cores ({one})"
    name, want = need
    if getattr(p, name.replace("-", "_")) == want:
        return None
    if p.met_by_program(name, want, module):
        return None
    return f"it needs {name}={spelled(want)}"
