"""Search spaces: per-op lowering options and target parameters.

Lowering options use `npu-lower`'s names; each op family (the lowering that
handles the op) tunes the options `npu-lower` forwards to it, plus
`double-buffer`. A space maps option -> candidate values; `None` as a value
means "npu-lower's default". Candidates are canonicalised (defaults filled
in, the cost model's matmul tiles resolved, options the chosen variant
ignores dropped) so that two spellings of the same program are one candidate.

A spec (JSON, `npu-tune --space`) overrides the default space per option:

    {"ops": {"ascend.matmul": {"strategy": ["os", "ws"], "m": [128, 256]},
             "npu-lower-elementwise": {"ub-fraction": [0.25, 0.5]},
             "*": {"double-buffer": [true]}},
     "target": {"ub": ["128KiB", "256KiB"], "gm-bandwidth": [32, 64]}}

Keys of "ops" are an op signature, an op name, a lowering flag or "*" (the
most specific wins). "target" lists target parameters for design-space mode.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import fields, replace
from typing import Any

from npu.passes.base import DOUBLE_BUFFER_KEY, Option
from npu.passes.lower import LowerPass
from npu.passes.lower_options import LOWERINGS, UNSET
from npu.target import PATH_PIPES, Path, Target
from npu.tune.program import OpTask

Space = dict[str, list[Any]]
MAX_CANDIDATES = 100_000


class SpaceError(ValueError):
    """A search space or parameter that does not make sense (user input)."""


# ---------------------------------------------------------------------------
# Lowering options
# ---------------------------------------------------------------------------

def tunable_options(family: str) -> dict[str, Option]:
    """npu-lower's options that reach `family` (a lowering flag), by name."""
    mapping = dict(LOWERINGS).get(family, {})
    ours = {o.name: o for o in LowerPass.options}
    return {name: ours[name] for name in (*mapping, DOUBLE_BUFFER_KEY)}


def _lowering_option(family: str, name: str) -> Option:
    """The lowering's option that npu-lower's `name` is forwarded to."""
    from npu.passes import registry

    theirs = dict(LOWERINGS)[family][name]
    return next(o for o in registry()[family].options if o.name == theirs)


def _lowering_default(family: str, name: str) -> Any:
    """The value `name` takes when npu-lower leaves it unset."""
    return _lowering_option(family, name).default


def _tile_edges(dim: int, edges: tuple[int, ...]) -> list[int]:
    """The edges below `dim`, and `dim` itself when it is not above them all."""
    return sorted({e for e in edges if e < dim} | ({dim} if dim <= max(edges) else set()))


def default_space(task: OpTask, target: Target) -> Space:
    """A small space that covers the choices that matter for the family."""
    if task.family == "npu-lower-matmul":
        shape = matmul_shape(task, target)
        edges = (4 * target.fractal, 8 * target.fractal, 16 * target.fractal)
        return {
            "strategy": ["os", "is", "ws"],
            "m": [None] + _tile_edges(shape.M, edges),
            "k": [None] + _tile_edges(shape.K, edges),
            "matmul-schedule": ["pipelined", "simple"],
            DOUBLE_BUFFER_KEY: [True, False],
        }
    space: Space = {DOUBLE_BUFFER_KEY: [True, False]}
    if task.family == "npu-lower-fractalize":
        space["fractalize"] = ["fill-ub", "naive"]
        space["ub-fraction"] = [0.25, 0.5, 1.0]
    elif "ub-fraction" in tunable_options(task.family):
        space["ub-fraction"] = [0.125, 0.25, 0.5, 1.0]
    return space


def space_for(task: OpTask, spec: dict | None, target: Target) -> Space:
    """The default space of `task` with the spec's entries for it applied."""
    space = default_space(task, target)
    if not spec:
        return space
    entries = spec.get("ops", {})
    if not isinstance(entries, dict):
        raise SpaceError("space spec: \"ops\" must map op names to option lists")
    allowed = tunable_options(task.family)
    for key in ("*", task.family, task.op_name, task.signature):  # least specific first
        for name, values in entries.get(key, {}).items():
            if name not in allowed:
                if key == "*":
                    continue
                raise SpaceError(f"space spec '{key}': '{name}' is not a tunable option of "
                                 f"{task.family} (options: {', '.join(allowed)})")
            where = f"space spec '{key}'"
            space[name] = parse_values(allowed[name], values, where)
            given = [v for v in space[name] if v not in (None, UNSET.get(name), "auto")]
            if name != DOUBLE_BUFFER_KEY and given:  # the lowering's own choices, too
                parse_values(_lowering_option(task.family, name), given, where)
    return space


def parse_values(option: Option, values: Any, where: str) -> list[Any]:
    if not isinstance(values, list) or not values:
        raise SpaceError(f"{where}: '{option.name}' needs a non-empty list of values")
    out = []
    for v in values:
        if v is None:
            out.append(None)
            continue
        text = ("true" if v else "false") if isinstance(v, bool) else str(v)
        try:
            out.append(option.parse(text))
        except ValueError as e:
            raise SpaceError(f"{where}: '{option.name}': {e}") from None
    return out


def check_spec_names(spec: dict, tasks: list[OpTask]) -> None:
    """Every key of spec["ops"] must name something in the program."""
    names = {"*"} | {t.family for t in tasks} | {t.op_name for t in tasks} | {t.signature for t in tasks}
    for key in spec.get("ops", {}):
        if key not in names:
            raise SpaceError(f"space spec: '{key}' matches no op of the program (ops: "
                             f"{', '.join(sorted({t.op_name for t in tasks}))})")


def enumerate_candidates(space: Space) -> list[dict[str, Any]]:
    """Every combination of the space (None values left out)."""
    names = list(space)
    total = 1
    for values in space.values():
        total *= len(values)
    if total > MAX_CANDIDATES:
        raise SpaceError(f"the space has {total} combinations (limit {MAX_CANDIDATES}); "
                         "narrow it with --space or --param")
    return [{n: v for n, v in zip(names, combo) if v is not None}
            for combo in itertools.product(*(space[n] for n in names))]


def matmul_shape(task: OpTask, target: Target):
    from npu.costmodel.matmul.fitting import MatmulShape

    a, b, c = task.operands[:3]
    frac = target.fractal
    batched = task.op_name == "ascend.batch_matmul"
    off = 1 if batched else 0
    N1, M1 = a.shape[off], a.shape[off + 1]
    K1 = b.shape[off]
    return MatmulShape(M1 * frac, N1 * frac, K1 * frac, a.shape[0] if batched else 1,
                       in_bytes=2, acc_bytes=target.fractal_bytes(4) // (frac * frac),
                       out_bytes=4 if c.dtype == "f32" else 2)


def reduction_scale(task: OpTask, target: Target) -> int:
    """Reduction elements of the matmul's operands per element of
    `matmul_shape` (its f16-equivalent shape): 2 for int8, whose n option
    counts int8 elements, 32 to a fractal block."""
    return target.fractal_k_int8 // target.fractal if task.operands[0].dtype == "i8" else 1


def canonical(task: OpTask, options: dict[str, Any], target: Target) -> dict[str, Any]:
    """The explicit option set `options` compiles to (see the module doc)."""
    from npu.costmodel.matmul.tiling import TilingError, choose_tiling

    allowed = tunable_options(task.family)
    out: dict[str, Any] = {}
    for name, opt in allowed.items():
        value = options.get(name, opt.default)
        if name != DOUBLE_BUFFER_KEY and value == UNSET.get(name, object()):
            value = _lowering_default(task.family, name)
        out[name] = value
    double_buffer = out[DOUBLE_BUFFER_KEY]
    if task.family == "npu-lower-matmul":
        if out["matmul-schedule"] == "auto":
            out["matmul-schedule"] = "pipelined" if double_buffer else "simple"
        shape = matmul_shape(task, target)
        try:
            choice = choose_tiling(shape, target, out["strategy"], out["m"], out["n"], out["k"])
            out.update(strategy=choice.strategy, m=choice.tiles.m,
                       n=choice.tiles.n * reduction_scale(task, target), k=choice.tiles.k)
            # npu-lower-matmul's plan_pipelined falls back to the simple nest
            # when the C tiles do not divide C or one C tile overflows L0C.
            m, k = choice.tiles.m, choice.tiles.k
            if shape.M % m or shape.K % k or m * k * shape.acc_bytes > target.capacity("l0c"):
                out["matmul-schedule"] = "simple"
            elif out["strategy"] == "os" and out["matmul-schedule"] == "pipelined":
                # The pipelined schedule takes n as its L0 sub-step; 0 lets it
                # choose (another program than the cost model's n).
                out["n"] = options.get("n", 0)
        except TilingError:
            pass  # left as given: compiling it fails and is recorded as such
        if out["strategy"] != "os":
            out.pop("matmul-schedule")
        if out.get("matmul-schedule", "simple") == "simple":
            out.pop("l1-chunk")
            out.pop("c-pieces")
    if out.get("fractalize") == "naive":
        out.pop("ub-fraction", None)
    return out


def candidate_key(options: dict[str, Any]) -> str:
    return json.dumps(options, sort_keys=True)


# ---------------------------------------------------------------------------
# Target parameters (design-space mode)
# ---------------------------------------------------------------------------

BUFFERS = ("l1", "l0a", "l0b", "l0c", "ub")
GM_PATHS = ("gm_to_l1", "gm_to_ub", "ub_to_gm")
# Scalar fields of Target that the passes or the simulator read.
_SCALAR_FIELDS = {f.name for f in fields(Target) if f.type in ("int", "float")} - {"cores", "clock_ghz"}
_UNUSED = {"cores": "npu-tune compiles one-core programs (npu-lower cores=1); "
                    "bench/multicore.py sweeps the core count",
           "clock_ghz": "cycles do not depend on the clock"}

TARGET_PARAMS_HELP = (f"buffers {', '.join(BUFFERS)} (bytes, e.g. 256KiB); gm-bandwidth "
                      "(B/cycle of every GM path); gm-latency (cycles); <path>-bandwidth / "
                      "<path>-latency of one path (e.g. l1_to_l0b-bandwidth); scalar target "
                      f"fields ({', '.join(sorted(_SCALAR_FIELDS))})")


def parse_quantity(text: Any) -> float | int:
    """123, 1.5, "256KiB", "1MiB"."""
    if isinstance(text, bool):
        raise SpaceError(f"expected a number, got {text!r}")
    if isinstance(text, (int, float)):
        return text
    m = re.fullmatch(r"\s*([0-9.]+)\s*(KiB|MiB|K|M)?\s*", str(text))
    if not m:
        raise SpaceError(f"expected a number or a size like 256KiB, got '{text}'")
    scale = {"KiB": 1024, "K": 1024, "MiB": 1024 * 1024, "M": 1024 * 1024, None: 1}[m.group(2)]
    value = float(m.group(1)) * scale
    return int(value) if value == int(value) else value


def check_target_param(name: str) -> None:
    if name in _UNUSED:
        raise SpaceError(f"target parameter '{name}' has no effect on simulated cycles: {_UNUSED[name]}")
    path = re.fullmatch(r"(\w+)-(bandwidth|latency)", name)
    if name in BUFFERS or name in ("gm-bandwidth", "gm-latency") or name in _SCALAR_FIELDS:
        return
    if path and path.group(1) in PATH_PIPES:
        return
    raise SpaceError(f"unknown target parameter '{name}' (known: {TARGET_PARAMS_HELP})")


def target_with(base: Target, params: dict[str, Any]) -> Target:
    """`base` with the given parameters changed (name `base+param=value,...`)."""
    if not params:
        return base
    buffers = dict(base.buffer_bytes)
    paths = dict(base.paths)
    scalars: dict[str, Any] = {}
    for name, raw in params.items():
        check_target_param(name)
        value = parse_quantity(raw)
        if value <= 0:
            raise SpaceError(f"target parameter '{name}' must be positive, got {raw}")
        if name in BUFFERS:
            buffers[name] = int(value)
        elif name in ("gm-bandwidth", "gm-latency"):
            for p in GM_PATHS:
                paths[p] = _path_with(paths[p], name.split("-")[1], value)
        elif name in _SCALAR_FIELDS:
            scalars[name] = type(getattr(base, name))(value)
        else:
            path, what = name.rsplit("-", 1)
            paths[path] = _path_with(paths[path], what, value)
    label = ",".join(f"{k}={v}" for k, v in params.items())
    return replace(base, name=f"{base.name}+{label}", buffer_bytes=buffers, paths=paths, **scalars)


def _path_with(path: Path, what: str, value: float) -> Path:
    if what == "bandwidth":
        return Path(int(value), path.latency)
    return Path(path.bytes_per_cycle, int(value))


def default_design_space(base: Target) -> dict[str, list[Any]]:
    """Each buffer and the GM bandwidth at 1/4, 1/2, 1 and 2 times the preset."""
    space: dict[str, list[Any]] = {}
    for name in ("l1", "l0c", "ub"):
        size = base.capacity(name)
        space[name] = [size // 4, size // 2, size, size * 2]
    bw = base.path("gm_to_l1").bytes_per_cycle
    space["gm-bandwidth"] = [bw // 4, bw // 2, bw, bw * 2]
    return space
