"""`npu-lower`'s options are its sub-passes' declarations: every option of
every pass it runs is reachable through it with the same type, choices and
range (departures only as `ROUTES` states them), and a value set on npu-lower
reaches the sub-pass that owns the option."""

from __future__ import annotations

from typing import Any

import pytest

from npu.ir import make_context, parse_module
from npu.passes.applies import is_pair
from npu.passes.base import Option
from npu.passes.lower import LowerPass
from npu.passes.lower_options import (FORWARDS, LOWERINGS, OWN_OPTIONS, ROUTES, RUNS_WITH, SETS,
                                      SUB_PASSES, THEIRS, UNSET, Route, _declare)
from npu.pipeline import run_pipeline

OURS = {o.name: o for o in LowerPass.options}
ROUTE_OF = {pair: r for r in ROUTES for pair in r.theirs}
HELD = {pair for r in ROUTES if r.ours is None for pair in r.theirs}
EVERY_OPTION = [(cls.name, o) for cls, _ in SUB_PASSES for o in cls.options]


@pytest.mark.parametrize("flag,theirs", EVERY_OPTION, ids=lambda x: getattr(x, "name", x))
def test_every_sub_pass_option_is_reachable_as_declared(flag: str, theirs: Option):
    pair = f"{flag} {theirs.name}"
    if pair in HELD:
        assert theirs.name not in FORWARDS[flag]
        return
    ours = OURS[FORWARDS[flag][theirs.name]]
    route = ROUTE_OF.get(pair, Route(ours.name, (), ""))
    assert ours.type is theirs.type
    extra = set(route.resolved) | ({route.unset} if route.unset is not THEIRS else set())
    if theirs.choices:
        assert set(theirs.choices) <= set(ours.choices) <= set(theirs.choices) | extra
    else:
        assert ours.choices == ()
    assert ours.high == theirs.high
    if ours.low != theirs.low or ours.low_open != theirs.low_open:
        # widened only to take npu-lower's "unset" value
        assert ours.low == route.unset and not ours.low_open
    assert ours.default == (theirs.default if route.default is THEIRS else route.default)
    assert theirs.help in ours.help and pair in ours.help


def test_every_option_is_npu_lowers_own_or_forwarded():
    forwarded = {ours for names in FORWARDS.values() for ours in names.values()}
    own = {o.name for o in OWN_OPTIONS}
    assert not forwarded & own
    assert set(OURS) == forwarded | own
    for flag, names in LOWERINGS:
        assert names == {ours: theirs for theirs, ours in FORWARDS[flag].items()}


def test_routes_name_declared_options_and_keep_the_old_names():
    declared = {f"{flag} {o.name}" for flag, o in EVERY_OPTION}
    assert set(ROUTE_OF) <= declared
    for ours in ("strategy", "m", "matmul-schedule", "fractalize", "ub-fraction", "max-chunk",
                 "fuse-remarks", "cores", "plan", "double-buffer", "sync", "sink-sets"):
        assert ours in OURS


def test_disagreeing_owners_of_one_option_are_refused():
    a = Option("x", int, 0, "a", low=0)
    with pytest.raises(ValueError, match="npu-lower's 'x' sets npu-a x and npu-b x, whose low differ"):
        _declare("x", [("npu-a", a), ("npu-b", Option("x", int, 0, "b"))], None)
    with pytest.raises(ValueError, match="whose default differ"):
        _declare("x", [("npu-a", a), ("npu-b", Option("x", int, 1, "b", low=0))], None)
    assert _declare("x", [("npu-a", a), ("npu-b", Option("x", int, 1, "b", low=0))],
                    Route("x", (), "", default=5)).default == 5


def _other_value(option: Option) -> Any:
    """A value `option` allows that is not its default (nor an unset value)."""
    if option.choices:
        return next(c for c in option.choices if c not in (option.default, UNSET.get(option.name),
                                                           "auto"))
    if option.type is bool:
        return not option.default
    if option.type is str:  # free text (split-cores-grids), read when its pass runs
        return f"{option.name}-text"
    if option.type is float:
        return option.low + (option.high - option.low) / 4
    if option.high is not None and option.default + 1 > option.high:
        return option.default - 1
    return option.default + 1


def _spelled(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _needed() -> dict[str, Any]:
    """{npu-lower option: the value another option needs of it}: the core
    count, the switches and the options whose values others need."""
    needs = [n for o in LowerPass.options for n in o.needs]
    needs += [n for pairs in RUNS_WITH.values() for n in pairs]
    needs += [(FORWARDS[flag][n[0]], n[1]) for pairs in SETS.values() for flag, o in pairs
              for n in o.needs if is_pair(n)]
    needed = {n[0]: n[1] for n in needs if is_pair(n)}
    needed["cores"] = 32  # all of ascend910's: prefetch-tail-bus needs 19 cores' movers
    return needed


def test_values_set_on_npu_lower_reach_each_sub_pass(target):
    """Every forwarded option at once, in pipeline text (those others need
    at the values they need; each of them alone at another value): each
    sub-pass that npu-lower builds carries the value."""
    needed = _needed()
    values = {name: needed.get(name, _other_value(o)) for name, o in OURS.items()
              if name not in {o.name for o in OWN_OPTIONS}}
    alone = [{name: _other_value(OURS[name])} for name in needed if name in values]
    for given in [values, *alone]:
        lower = LowerPass.from_option_string(" ".join(f"{k}={_spelled(v)}"
                                                      for k, v in given.items()), target)
        for cls, _ in SUB_PASSES:
            built = lower._make(cls.name)
            assert type(built) is cls
            for theirs, ours in FORWARDS[cls.name].items():
                if ours in given:
                    assert getattr(built, theirs.replace("-", "_")) == given[ours], (cls.name,
                                                                                     theirs)


def _program() -> str:
    """An add and a matmul: the options below act on one of them."""
    t, nz, c = 'memref<4096xf16, "gm">', 'memref<4x4x16x16xf16, "gm">', 'memref<4x4x16x16xf32, "gm">'
    return (f"func.func @f(%a: {t}, %b: {t}, %c: {t}, %x: {nz}, %y: {nz}, %z: {c}) {{\n"
            f'  "ascend.add"(%a, %b, %c) : ({t}, {t}, {t}) -> ()\n'
            f'  "ascend.matmul"(%x, %y, %z) : ({nz}, {nz}, {c}) -> ()\n  return\n}}\n')


def test_npu_lower_builds_the_declared_sub_passes_with_forwarded_values(monkeypatch, target):
    """The passes npu-lower builds while compiling are the declared ones (the
    one-core pipeline and the multi-core one between them build them all),
    each with the values set on npu-lower."""
    built: list = []
    make = LowerPass._make

    def spy(self, flag, **values):
        p = make(self, flag, **values)
        built.append((flag, p))
        return p

    monkeypatch.setattr(LowerPass, "_make", spy)
    forwarded = {"split-cores-min-bytes=0": ("npu-split-cores", "min_bytes", 0),
                 "matmul-staged-drain=3": ("npu-lower-matmul", "staged_drain", 3),
                 "prefetch-chunks=1": ("npu-prefetch", "chunks", 1),
                 "sink-sets=false": ("npu-insert-sync", "sink_sets", False),
                 "elementwise-in-place-unary=true": ("npu-lower-elementwise", "in_place_unary", True),
                 "fuse-remarks=false": ("npu-fuse", "remarks", False)}
    for cores in ("cores=1", "cores=2"):  # npu-split-cores' options apply on several cores only
        given = [o for o in forwarded if cores == "cores=2" or not o.startswith("split-cores-")]
        pipeline = "npu-lower{" + " ".join([cores, *given]) + "}"
        run_pipeline(parse_module(_program(), make_context()), pipeline, target)
    assert {flag for flag, _ in built} == set(FORWARDS)
    for flag, attr, value in forwarded.values():
        instances = [p for f, p in built if f == flag]
        assert instances and all(getattr(p, attr) == value for p in instances), flag
