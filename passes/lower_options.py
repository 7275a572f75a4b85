"""`npu-lower`'s options: its own, and every option of every pass it runs,
derived from that pass's `Option` declaration.

A sub-pass's option `x` is npu-lower's `<prefix>x` (the prefix of its pass in
`SUB_PASSES`) with the same type, default, choices, range and help, so
`npu-lower --help` and the sub-passes cannot disagree and a new sub-pass
option is an npu-lower option without a line here. Every departure from that
rule (an older name, a value shared by several passes, a default or an
"unset" value of npu-lower's, a value npu-lower sets itself) is one row of
`ROUTES`; the declarations are checked against it when this module loads.

When each option applies is declared too: the switches that run each
sub-pass (`RUNS_WITH`), an option's `needs` in its pass's declaration, and
npu-lower's own (`Route.needs`, `OWN_OPTIONS`); `npu.passes.lower_applies`
reads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from npu.passes.applies import (CONVS, CUBE_OPS, GM_LOADS, LOOPS, MANY_CORES, CoresNeed, OnOps,
                                OnPattern, is_pair)
from npu.passes.patterns import CONV_WEIGHTS, L1_WEIGHTS
from npu.passes.base import Option, Pass
from npu.passes.canonicalize import CanonicalizePass
from npu.passes.double_buffer import DoubleBufferPass
from npu.passes.fuse import FusePass
from npu.passes.fuse_attention import FuseAttentionPass
from npu.passes.fuse_attention_projection import FuseAttentionProjectionPass
from npu.passes.fuse_horizontal import FuseHorizontalPass
from npu.passes.hoist_casts import HoistCastsPass
from npu.passes.insert_sync import InsertSyncPass
from npu.passes.lower_attention import LowerAttention
from npu.passes.lower_cce_to_hivm import LowerCCEToHIVM
from npu.passes.lower_elementwise import LowerElementwise
from npu.passes.lower_fractalize import LowerFractalize
from npu.passes.lower_fused import LowerFused
from npu.passes.lower_gather import LowerGather
from npu.passes.lower_matmul import LowerMatmul
from npu.passes.lower_pool import LowerPool
from npu.passes.lower_reduce import LowerReduce
from npu.passes.lower_slices import LowerSlices
from npu.passes.lower_transpose import LowerTranspose
from npu.passes.plan_gm import PlanGmPass
from npu.passes.plan_memory import PlanMemoryPass
from npu.passes.prefetch import PrefetchPass
from npu.passes.split_cores import SplitCoresPass
from npu.passes.split_cores.split_k import CUBE_OPS as SPLIT_K_OPS
from npu.passes.lower_conv import LowerConv
from npu.passes.own_tiles import OwnTilesPass

# Every pass npu-lower runs, in pipeline order, and the prefix of its options
# in npu-lower's names (npu-prefetch's `chunks` is `prefetch-chunks`).
SUB_PASSES: tuple[tuple[type[Pass], str], ...] = (
    (CanonicalizePass, "canonicalize-"),
    (HoistCastsPass, "hoist-casts-"),
    (FuseHorizontalPass, "fuse-horizontal-"),
    (FuseAttentionPass, "attention-"),
    (FusePass, "fuse-"),
    (FuseAttentionProjectionPass, "attention-projection-"),
    (LowerFused, "fuse-"),
    (LowerAttention, "attention-"),
    (SplitCoresPass, "split-cores-"),
    (PlanGmPass, "plan-gm-"),
    (LowerConv, "conv-"),
    (LowerMatmul, "matmul-"),
    (LowerFractalize, "fractalize-"),
    (LowerElementwise, "elementwise-"),
    (LowerTranspose, "transpose-"),
    (LowerSlices, "slices-"),
    (LowerReduce, "reduce-"),
    (LowerGather, "gather-"),
    (LowerPool, "pool-"),
    (OwnTilesPass, "own-tiles-"),
    (DoubleBufferPass, "double-buffer-"),
    (PrefetchPass, "prefetch-"),
    (PlanMemoryPass, "plan-memory-"),
    (InsertSyncPass, ""),
    (LowerCCEToHIVM, ""),
)

# When npu-lower runs each sub-pass (the others always run): npu-lower's
# options with the values they need, or `MANY_CORES` (`_lower`, `run`).
_FUSE = (("fuse", True),)
RUNS_WITH: dict[str, tuple] = {
    "npu-canonicalize": (("canonicalize", True),),
    "npu-hoist-casts": (*_FUSE, ("hoist-casts", True)),
    "npu-fuse-horizontal": (*_FUSE, ("fuse-horizontal", True)),
    "npu-fuse-attention": (*_FUSE, ("fuse-attention", True)),
    "npu-fuse": _FUSE,
    "npu-fuse-attention-projection": (*_FUSE, ("fuse-attention", True),
                                      ("fuse-attention-projection", True),
                                      ("fuse-epilogues", True)),
    "npu-lower-fused": _FUSE,
    "npu-lower-attention": _FUSE,
    "npu-split-cores": (MANY_CORES,),
    "npu-plan-gm": (("plan-gm", True),),
    "npu-own-tiles": (MANY_CORES, ("own-tiles", True)),
    "npu-prefetch": (("prefetch", True),),
}

# Each sub-pass's class by its flag: npu-lower builds its steps from these.
SUB_PASS_CLASSES: dict[str, type[Pass]] = {cls.name: cls for cls, _ in SUB_PASSES}


def sub_pass_needs(flag: str, option: Option, forwards: dict[str, dict[str, str]]) -> tuple:
    """What sub-pass `flag`'s `option` needs there (its pass's `acts_on`,
    then its own `needs`), options in npu-lower's names (`forwards`); a need
    on an option npu-lower does not forward is npu-lower's own setting."""
    ours = forwards[flag]
    acts_on = SUB_PASS_CLASSES[flag].acts_on
    return (*(() if acts_on is None else (acts_on,)),
            *((ours[n[0]], n[1]) if is_pair(n) else n
              for n in option.needs if not is_pair(n) or n[0] in ours))

# The lowerings of ascend ops, in the order they run; per-op options (a
# tuning record's) are npu-lower's names of their options.
# npu-lower-conv and npu-lower-matmul first: the elementwise members of their
# epilogue groups are theirs, not npu-lower-elementwise's.
LOWERING_FLAGS = ("npu-lower-conv", "npu-lower-matmul", "npu-lower-fractalize",
                  "npu-lower-elementwise", "npu-lower-transpose", "npu-lower-slices",
                  "npu-lower-reduce", "npu-lower-gather", "npu-lower-pool")
# The passes that lower ascend ops (the fused kernels' too): a lowered program's ops are theirs
LOWERINGS_MAKING = (*LOWERING_FLAGS, "npu-lower-fused", "npu-lower-attention")


# Ops a sub-pass makes, of kinds the program need not have, and the ops it
# makes them of: the options acting on them apply when that pass runs
# (npu-split-cores' split-K partial sums, adds of a cube op's partial results;
# a lowering's loops and loads, which npu-double-buffer and npu-prefetch act on).
MAKES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "npu-split-cores": (SPLIT_K_OPS, ("ascend.add",)),
    # the cube's host-constant weights in L1 too, which npu-prefetch's slots act on
    **{flag: (SUB_PASS_CLASSES[flag].handles or SUB_PASS_CLASSES[flag].acts_on.ops,
              (LOOPS.ops + GM_LOADS.ops
               + (("memref.alloc", CONV_WEIGHTS.key) if flag == "npu-lower-conv" else ())
               + ((L1_WEIGHTS.key,) if flag in ("npu-lower-conv", "npu-lower-matmul",
                                                "npu-lower-attention") else ())))
       for flag in LOWERINGS_MAKING},
}


class _Theirs:
    """The marker for "as the sub-pass declares it"."""

    def __repr__(self) -> str:
        return "THEIRS"


THEIRS: Any = _Theirs()


@dataclass(frozen=True)
class Route:
    """Where an npu-lower option departs from `<prefix><option>` declared as
    the sub-pass declares it. `ours` None: npu-lower sets the value itself."""

    ours: str | None
    theirs: tuple[str, ...]  # "flag option" of each sub-pass option it sets
    why: str                 # said in npu-lower's help after the sub-pass's
    default: Any = THEIRS    # npu-lower's default
    unset: Any = THEIRS      # a value outside theirs meaning "leave their defaults"
    resolved: tuple = ()     # more choices, which npu-lower resolves to one of theirs
    needs: tuple = ()        # npu-lower's (option, value) pairs it applies with, or
    # `OnOps` where only npu-lower sees the ops (as `Option.needs`)


# npu-lower-matmul's tiling options kept their names from before the prefix.
_MATMUL_TILES = ("strategy", "m", "n", "k", "l1-chunk", "c-pieces", "c-piece-rows")

ROUTES: tuple[Route, ...] = (
    Route("strategy", ("npu-lower-matmul strategy",), "empty: npu-lower-matmul's default",
          default="", unset=""),
    *(Route(name, (f"npu-lower-matmul {name}",), "") for name in _MATMUL_TILES[1:]),
    Route("matmul-schedule", ("npu-lower-matmul schedule",), "auto: pipelined with "
          "double-buffer (its L1 chunks only pay off when ping-ponged), simple without",
          default="auto", resolved=("auto",)),
    Route("fractalize", ("npu-lower-fractalize algorithm",),
          "empty: npu-lower-fractalize's default", default="", unset=""),
    Route("ub-fraction", tuple(f"{flag} ub-fraction" for flag in LOWERING_FLAGS
                               if flag != "npu-lower-matmul"),
          "0: each lowering's default", default=0.0, unset=0.0),
    Route("max-chunk", ("npu-lower-elementwise max-chunk", "npu-lower-reduce max-chunk",
                        "npu-lower-fused max-chunk"), ""),
    Route(None, ("npu-fuse-horizontal cores",), "npu-lower's: the cores npu-split-cores "
          "splits over, 1 for a one-core program"),
    Route(None, ("npu-fuse-attention nz-operands",), "npu-lower's: on for a program "
          "npu-split-cores splits (one core fuses the projections into the attention instead)"),
    Route(None, ("npu-fuse ub-fraction", "npu-fuse-attention ub-fraction",
                 "npu-fuse-attention-projection ub-fraction", "npu-lower-fused ub-fraction"),
          "npu-lower's fused UB shares, halved when a fused kernel overflows"),
    Route("fuse-remarks", tuple(f"{flag} remarks" for flag in (
        "npu-canonicalize", "npu-hoist-casts", "npu-fuse-horizontal", "npu-fuse-attention", "npu-fuse",
        "npu-fuse-attention-projection", "npu-lower-fused", "npu-lower-conv")), "off by default here",
        default=False),
    Route("fuse-nz-stores", ("npu-fuse nz-stores", "npu-fuse-attention nz-out"), ""),
    Route("fuse-chains", ("npu-fuse chains",), "with the pipelined matmul schedule only, "
          "the one that reads a chained A", needs=(("matmul-schedule", "pipelined"),)),
    Route("fuse-conv-chains", ("npu-fuse conv-chains",), "on one core only (each conv's "
          "grid cuts its own rows)"),
    Route("cores", ("npu-split-cores cores",), "1: one core, npu-split-cores not run "
          "(L1 matmul chains run on one core only)"),
    Route("plan", ("npu-plan-gm algorithm", "npu-plan-memory algorithm"), ""),
    Route("double-buffer", ("npu-double-buffer unmarked",),
          "also picks matmul-schedule=auto's schedule"),
    Route("double-buffer-min-trip-count", ("npu-double-buffer min-trip-count",),
          "with double-buffer, or an op's own double-buffer option", needs=(("double-buffer", True),)),
    # npu-prefetch sees lowered kernels: the ops its chunks belong to are npu-lower's to see
    Route("prefetch-chunks", ("npu-prefetch chunks",), "", needs=(CUBE_OPS,)),
    Route("prefetch-l1-room", ("npu-prefetch l1-room",), "", needs=(CUBE_OPS,)),
    Route("prefetch-convs", ("npu-prefetch convs",), "", needs=(CONVS,)),
    Route("sync", ("npu-insert-sync mode",), ""),
    Route("sink-sets", ("npu-insert-sync sink-sets",), "on by default here", default=True),
)

# npu-lower's own switches and settings, which no sub-pass has.
OWN_OPTIONS: tuple[Option, ...] = (
    Option("canonicalize", bool, True, "bring every spelling of a computation (GELU's operand "
           "orders, the attention scale on Q and K, two transposes of K) to the one form the "
           "fusion recipes match first (npu-canonicalize)"),
    Option("fuse", bool, True, "group row ops into fused kernels first (npu-fuse, "
           "npu-lower-fused, npu-lower-attention); false lowers every ascend op as its own kernel"),
    Option("hoist-casts", bool, True, "with fuse: f32 -> f16 casts of batch_matmul "
           "operands (attention's Q, K, V) move ahead of their transposes and "
           "defractalizes, into the projection's epilogue (npu-hoist-casts)",
           needs=(*_FUSE, HoistCastsPass.acts_on)),
    Option("fuse-horizontal", bool, True, "with fuse: join sibling matmuls that share A "
           "(Q/K/V) and their bias adds first (npu-fuse-horizontal)",
           needs=(*_FUSE, FuseHorizontalPass.acts_on)),
    Option("fuse-attention", bool, True, "with fuse: attention (Q.K^T, scale, softmax, P.V) "
           "as one kernel per head tile, scores on chip (npu-fuse-attention)",
           needs=(*_FUSE, FuseAttentionPass.acts_on)),
    Option("fuse-attention-projection", bool, True, "with fuse-attention and fuse-epilogues: "
           "an attention kernel computes its own Q, K, V projection head by head on chip when "
           "the cost model finds it faster (npu-fuse-attention-projection)",
           needs=(*_FUSE, ("fuse-attention", True), ("fuse-epilogues", True),
                  FuseAttentionProjectionPass.acts_on)),
    Option("plan-gm", bool, True, "pack GM memref.alloc temporaries into one workspace "
           "argument first (npu-plan-gm); false leaves them as allocs"),
    Option("prefetch", bool, True, "npu-prefetch: a matmul's first host-constant weight "
           "chunks load during the previous op's idle MTE2 tail (on many cores, before the chip barrier)"),
    Option("own-tiles", bool, True, "on several cores: a core's tile of an intermediate it "
           "stores before a chip barrier and loads again after it as a matmul's A (BERT's GELU "
           "output for ffn_out) kept in UB and copied into A's L1 parts on MTE3 instead "
           "(`passes/own_tiles.py`)", needs=(MANY_CORES,)),
    Option("tuning-record", str, "", "npu-tune record (JSON) whose per-op options apply "
           "to the ops they match"),
    Option("emit", str, "hivm", "the level to stop at: planned, synchronised cce, or hivm "
           "instructions (npu-lower-cce-to-hivm)", choices=("cce", "hivm")),
)


def _derive() -> tuple[tuple[Option, ...], dict[str, dict[str, str]], dict[str, Any],
                       dict[str, list[tuple[str, Option]]]]:
    """npu-lower's options, each sub-pass's {its option: npu-lower's},
    npu-lower's unset values, and each option's (sub-pass, its option)
    pairs; a declaration that breaks a route raises."""
    route_of = {pair: r for r in ROUTES for pair in r.theirs}
    owners: dict[str, list[tuple[str, Option]]] = {}
    forwards: dict[str, dict[str, str]] = {}
    for cls, prefix in SUB_PASSES:
        forwards[cls.name] = {}
        for option in cls.options:
            route = route_of.pop(f"{cls.name} {option.name}", None)
            ours = prefix + option.name if route is None else route.ours
            if ours is not None:
                forwards[cls.name][option.name] = ours
                owners.setdefault(ours, []).append((cls.name, option))
    if route_of:
        raise ValueError(f"npu-lower routes options no sub-pass declares: {', '.join(route_of)}")
    routes = {r.ours: r for r in ROUTES if r.ours is not None}
    own = {o.name for o in OWN_OPTIONS}
    derived = []
    for ours, theirs in owners.items():
        if ours in own:
            raise ValueError(f"npu-lower's own option '{ours}' is also a sub-pass's")
        derived.append(_declare(ours, theirs, routes.get(ours), forwards))
    unset = {r.ours: r.unset for r in ROUTES if r.unset is not THEIRS}
    _check_needs((*OWN_OPTIONS, *derived), forwards)
    return (*OWN_OPTIONS, *derived), forwards, unset, owners


def _check_needs(options: tuple[Option, ...], forwards: dict[str, dict[str, str]]) -> None:
    """Every need names an option: of npu-lower (its own and `RUNS_WITH`'s)
    or of the same pass (a sub-pass option's), with a value it may take."""
    ours = {o.name: o for o in options}
    named = [(n, ours) for o in options for n in o.needs]
    named += [(n, ours) for flag, needs in RUNS_WITH.items() if flag in forwards for n in needs]
    if set(RUNS_WITH) - set(forwards):
        raise ValueError(f"RUNS_WITH names passes npu-lower does not run: "
                         f"{', '.join(set(RUNS_WITH) - set(forwards))}")
    for cls, _ in SUB_PASSES:
        theirs = {o.name: o for o in cls.options}
        named += [(n, theirs) for o in cls.options for n in o.needs]
    for need, options_by_name in named:
        if not is_pair(need):
            continue
        name, value = need
        option = options_by_name.get(name)
        if option is None:
            raise ValueError(f"a need names '{name}', which is not an option there")
        try:
            option.check(value)
        except ValueError as e:
            raise ValueError(f"a need of {name}={value!r}: {e}") from None


IN = " in the program"  # how an `OnOps` need is said in the help


def _applies(theirs: list[tuple[str, Option]], route: Route,
             forwards: dict[str, dict[str, str]]) -> str:
    """When npu-lower's option applies (its needs, then those of the passes
    it sets, any of them), said for its help; "" when always."""
    def said(need) -> str:
        if need == MANY_CORES:
            return "several cores"
        if isinstance(need, CoresNeed):
            return need.what
        if isinstance(need, OnOps):
            return f"{'an' if need.what[0] in 'aeiou' else 'a'} {need.what}{IN}"
        name, value = need
        return f"{name}={('true' if value else 'false') if isinstance(value, bool) else value}"

    each = []
    for flag, option in theirs:
        needs = list(dict.fromkeys([  # once each (npu-split-cores': several cores, twice)
            *RUNS_WITH.get(flag, ()), *sub_pass_needs(flag, option, forwards)]))
        # an op of a kind a pattern needs is said by the pattern ("a conv" by "a 1x1 conv
        # ..."); the lowered program's, which the lowerings make, not at all
        patterns = [n for n in needs if isinstance(n, OnPattern)]
        needs = [n for n in needs if not (type(n) is OnOps
                                          and any(set(n.ops) <= set(p.ops) for p in patterns))
                 and not _lowered(n)]
        if not needs:  # a pass it sets runs always
            each = []
            break
        each.append(tuple(map(said, needs)))
    # what npu-lower's own needs say already is not said again
    own = set(map(said, route.needs))
    each = [tuple(n for n in e if n not in own) for e in each]
    each = [] if () in each else each
    # an alternative that needs more than another adds nothing
    each = [e for e in dict.fromkeys(each) if not any(set(o) < set(e) for o in each)]
    # alternatives that are each an op in the program are said as one
    alone = [e[0][:-len(IN)] for e in each if len(e) == 1 and e[0].endswith(IN)]
    if len(alone) > 1:
        each = [e for e in each if not (len(e) == 1 and e[0].endswith(IN))]
        each.append((f"{', '.join(alone[:-1])} or {alone[-1]}{IN}",))
    text = ", ".join([*map(said, route.needs), *([" or ".join(map(", ".join, each))]
                                                 if each else [])])
    return f" (applies with {text} only)" if text else ""


def _lowered(need) -> bool:
    """Whether `need` is of ops only a lowered program has (`MAKES`)."""
    made = {op for flag, (_, makes) in MAKES.items() if flag in LOWERINGS_MAKING for op in makes}
    if isinstance(need, OnPattern):
        return need.key in made
    return isinstance(need, OnOps) and set(need.ops) <= made


def _declare(ours: str, theirs: list[tuple[str, Option]], route: Route | None,
             forwards: dict[str, dict[str, str]] | None = None) -> Option:
    """npu-lower's option `ours` setting every option in `theirs` (whose
    names in npu-lower are `forwards`: its help says when it applies)."""
    first = theirs[0][1]
    route = route or Route(ours, (), "")
    for flag, option in theirs[1:]:
        mismatch = [f for f in ("type", "choices", "low", "high", "low_open")
                    if getattr(option, f) != getattr(first, f)]
        if route.default is THEIRS and option.default != first.default:
            mismatch.append("default")
        if mismatch:
            raise ValueError(f"npu-lower's '{ours}' sets {theirs[0][0]} {first.name} and "
                             f"{flag} {option.name}, whose {', '.join(mismatch)} differ")
    default = first.default if route.default is THEIRS else route.default
    choices, low, low_open = first.choices, first.low, first.low_open
    if route.resolved:
        choices = (*route.resolved, *choices)
    if route.unset is not THEIRS:
        if choices:
            choices = (route.unset, *choices)
        elif low is not None and route.unset <= low:
            low, low_open = route.unset, False
    said: dict[str, list[str]] = {}  # each help text, with the options it is said of
    for flag, option in theirs:
        said.setdefault(option.help, []).append(f"{flag} {option.name}")
    help_text = "; ".join(f"{', '.join(names)}: {text}" for text, names in said.items())
    if route.why:
        help_text += f" (npu-lower: {route.why})"
    if forwards is not None and ours != "cores":  # the count decides the split itself
        help_text += _applies(theirs, route, forwards)
    return Option(ours, first.type, default, help_text, choices=choices, low=low,
                  high=first.high, low_open=low_open, needs=route.needs)


LOWER_OPTIONS, FORWARDS, UNSET, SETS = _derive()

# Each lowering with {npu-lower's option name: the lowering's}: the names a
# tuning record's per-op options use.
LOWERINGS: tuple[tuple[str, dict[str, str]], ...] = tuple(
    (flag, {ours: theirs for theirs, ours in FORWARDS[flag].items()}) for flag in LOWERING_FLAGS)

# npu-lower's options that shape the whole program rather than one op's
# lowering: the ones a tuning record's "pipeline" may set (the core count,
# the fusion switches, ...). Not the per-op ones (a record's "ops" set
# those), nor where the output stops or which remarks are printed.
PER_OP = {name for _, mapping in LOWERINGS for name in mapping} | {"double-buffer"}
PIPELINE_OPTIONS: dict[str, Option] = {
    o.name: o for o in LOWER_OPTIONS
    if o.name not in PER_OP and o.name not in ("tuning-record", "emit")
    and not o.name.endswith("-remarks")}
