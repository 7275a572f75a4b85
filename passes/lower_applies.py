"""When each of `npu-lower`'s options applies, and why one does not.

An option applies when its own `needs` hold (npu-lower's: `OWN_OPTIONS`,
`Route.needs`) and some sub-pass option it sets applies: that pass runs
(`RUNS_WITH`: its switches; npu-split-cores only over several cores) and
the option's `needs` in that pass's declaration hold, read in npu-lower's
names (npu-lower-matmul's `schedule` is npu-lower's `matmul-schedule`,
`auto` resolved by `double-buffer`). A need on an option an op's own
options may set (`PER_OP`: the schedule, `double-buffer`) is taken to hold
when the program carries per-op options: they may meet it for their ops.
A need of an op the option acts on (`OnOps`: every option of a lowering, of
the fusions of attention, ...; `OnPattern`: one in the position it acts on,
a 1x1 conv whose result a residual Add reads) holds when npu-lower's input
has one, or a sub-pass that runs makes one of it (`MAKES`: npu-split-cores'
split-K adds, the lowerings' loops and loads); before the input is seen,
it may.

`npu-lower` refuses an option given with a value other than its default
that does not apply (`refusals`; a pass run on its own checks its options
itself, `npu.passes.applies`); npu-tune leaves such options out of its
whole-program candidates (`npu.tune.whole_program`).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from npu.passes.applies import (MANY_CORES, NO_OPS as NO, CoresNeed, OnOps, one_core_text,
                                spelled as _spelled)
from npu.passes.lower_options import (FORWARDS, LOWER_OPTIONS, MAKES, PER_OP, RUNS_WITH, SETS,
                                      sub_pass_needs)

OPTIONS = {o.name: o for o in LOWER_OPTIONS}


def resolve(values: Mapping[str, Any], name: str) -> Any:
    """npu-lower's option `name` as its passes see it (`values`: npu-lower's,
    by name): `matmul-schedule=auto` is pipelined with double-buffer, simple without."""
    value = values[name]
    if name == "matmul-schedule" and value == "auto":
        return "pipelined" if values["double-buffer"] else "simple"
    return value


def cores_text(values: Mapping[str, Any], target) -> str | None:
    """Why the program is lowered for one core, or None when it may be split."""
    return one_core_text(values["cores"], target)


def refusals(values: Mapping[str, Any], given: Iterable[str], target,
             per_op: bool = False, ops: frozenset[str] | None = None) -> list[tuple[str, str]]:
    """(option, why) for each option in `given` whose value in `values`
    (every npu-lower option's, by name) is not its default and which does
    not apply with the others' values. `per_op`: the program carries per-op
    options (a tuning record's, `npu.options`); `ops`: the names of the
    program's ops (`npu.passes.applies.program_ops`; None: not seen yet)."""
    found = []
    if ops is not None:
        ops = made(ops, values, target)
    for name in given:
        option = OPTIONS[name]
        if values[name] == option.default:
            continue
        why = refusal(name, values, target, per_op, ops)
        if why is not None:
            found.append((name, why))
    return found


def made(ops: frozenset[str], values: Mapping[str, Any], target) -> frozenset[str]:
    """`ops` with those the sub-passes that run make of them (`MAKES`)."""
    more = set(ops)
    for flag, (sources, makes) in MAKES.items():
        if ops.intersection(sources) and _unmet(RUNS_WITH.get(flag, ()), values, target,
                                                False, None) is None:
            more.update(makes)
    return frozenset(more)


def refusal(name: str, values: Mapping[str, Any], target, per_op: bool = False,
            ops: frozenset[str] | None = None) -> str | None:
    """Why npu-lower's option `name` does not apply with `values` (and the
    program's op names `ops`, once seen, with those made of them), or None."""
    if name == "cores":  # it decides whether npu-split-cores runs
        return None
    why = _unmet(OPTIONS[name].needs, values, target, per_op, ops)
    if why is not None or name not in SETS:
        return why
    whys = []
    for flag, option in SETS[name]:
        why = (_unmet(RUNS_WITH.get(flag, ()), values, target, per_op, ops, runs=flag)
               or _unmet(sub_pass_needs(flag, option, FORWARDS), values, target, per_op, ops))
        if why is None:
            return None
        whys.append(why)
    return _first(whys)


def _first(whys: list[str]) -> str:
    """The first of the reasons none of the passes an option sets takes it,
    or, when each is that the program has no op it acts on, all those ops
    (a kind within another said once: `max-chunk`'s)."""
    lacking = [w.need for w in whys if isinstance(w, _Lacks)]
    if len(lacking) < len(whys) or len(lacking) == 1:
        return whys[0]
    names = {need: frozenset(need.ops) for need in lacking}
    said = list(dict.fromkeys(n.what for n in lacking
                              if not any(names[n] < names[o] for o in lacking)))
    return NO + (said[0] if len(said) == 1 else f"{', '.join(said[:-1])} or {said[-1]}")


class _Lacks(str):
    """An unmet `OnOps` need, said, with the need (`_first` joins them)."""

    def __new__(cls, why: str, need: OnOps) -> "_Lacks":
        said = super().__new__(cls, why)
        said.need = need
        return said


def _unmet(needs: tuple, values: Mapping[str, Any], target, per_op: bool,
           ops: frozenset[str] | None, runs: str | None = None) -> str | None:
    """The first of `needs` (npu-lower's names) that does not hold, said;
    `runs`: they are what runs that pass."""
    for need in needs:
        if isinstance(need, OnOps):
            lacking = None if ops is None else need.lacking(ops)
            if lacking is not None:
                return _Lacks(NO + lacking.what, lacking)
            continue
        if need == MANY_CORES:
            one = cores_text(values, target)
            if one is not None:
                return f"no split over cores ({one})"
            continue
        if isinstance(need, CoresNeed):
            why = need.why_not(values["cores"] or target.cores, target)
            if why is not None:
                return why
            continue
        name, want = need
        if per_op and name in PER_OP:
            continue
        value = resolve(values, name)
        if value == want:
            continue
        if runs is not None:
            return f"{runs} is not run ({name}={_spelled(values[name])})"
        why = f"it needs {name}={_spelled(want)}"
        if value != values[name]:
            why += (f" (here {name}={_spelled(values[name])} is {_spelled(value)}: "
                    f"double-buffer={_spelled(values['double-buffer'])})")
        return why
    return None

