"""The shape every pass takes: a small class with a `name` (its flag), typed
options, and `run(module)` doing one transformation.

`Pass.to_callable` adapts an instance to `PassManager.add`, so our Python
passes and upstream passes run in one `mlir.passmanager.PassManager`.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import math
import os
import re
import traceback
from dataclasses import dataclass
from typing import Any, ClassVar, Iterator, Sequence

from mlir import ir

from npu import diagnostics
from npu.diagnostics import PassError  # defined below the passes: cost models raise it too
from npu.ir import block_dim, dict_attr_items, functions, walk, walk_held
from npu.passes import applies
from npu.passes.applies import OnOps
from npu.passes.instrument import instrumented
from npu.target import Target, get_target

# Per-op options of a lowering, written in the source or set by a tuning
# record (`npu-lower tuning-record=...`): a dictionary in the lowering's own
# option names, e.g. {m = 128 : i64, strategy = "os"}. They override the
# pass's options for that op only.
OP_OPTIONS_ATTR = "npu.options"
# The one per-op key every lowering accepts besides its own options: the
# loops the op lowers to are marked for (or exempt from) npu-double-buffer.
DOUBLE_BUFFER_KEY = "double-buffer"
DOUBLE_BUFFER_ATTR = "npu.double_buffer"
# npu-insert-sync may sink a set past these (`_PreciseMode._sink`): a light
# matmul drain's scf.if (an earlier drain's store set), the scf.if tree of a
# part's copies by core that `own_tiles` makes (an MTE2 set, as past a load).
LIGHT_DRAIN_ATTR = "npu.light_drain"
OWN_TILE_COPIES_ATTR = "npu.own_tile_copies"
# On a matmul's one-trip loop whose sub-steps load B into L0B ahead of A
# (npu-lower-matmul, B prefetched before the loop): npu-prefetch drops the
# loop's guarded later-iteration copies (`emit.fold_one_trip_guards`).
B_AHEAD_ATTR = "npu.b_ahead"


@dataclass(frozen=True)
class Option:
    """A typed pass option, spelled `name=value` in pipelines.

    What a value may be is declared here, once: `choices` for an enumeration,
    `low`/`high` for a numeric range (`low_open`: the lower bound itself is
    excluded). Every way of setting an option (pipeline text, pass flag,
    keyword argument, `npu-lower` forwarding) is checked against it.

    `needs`: when the option applies at all, as (another option of the same
    pass, the value it must have) pairs, `MANY_CORES` (the program is
    split over several cores) or an `OnOps` (the program has an op the
    option acts on); a value other than the default given where
    they do not hold is refused (`npu.passes.applies`; npu-lower's own in
    its names, `npu.passes.lower_applies`).
    """

    name: str
    type: type
    default: Any
    help: str
    choices: tuple = ()
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    needs: tuple = ()

    def parse(self, text: str | None) -> Any:
        """The value of `name=text` (`text` None: the option was given without `=`)."""
        if text is None:
            if self.type is bool:
                return True
            raise ValueError(f"expected '{self.name}=<{self.type.__name__}>', got no value")
        if self.type is bool:
            if text.lower() in ("1", "true", "yes", "on", ""):
                return True
            if text.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(f"expected a boolean, got '{text}'")
        if self.type is int:
            try:
                value = int(text, 0)
            except ValueError:
                raise ValueError(f"expected an integer, got '{text}'") from None
        elif self.type is float:
            try:
                value = float(text)
            except ValueError:
                raise ValueError(f"expected a number, got '{text}'") from None
        else:
            value = text
        self.check(value, text)
        return value

    def check(self, value: Any, text: str | None = None) -> None:
        """Raise ValueError unless `value` (spelled `text`) is one this option allows."""
        shown = value if text is None else text
        if value == self.default and type(value) is type(self.default):
            return  # a default such as "" or 0 may stand for "unset"
        if self.type is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            if not math.isfinite(value):
                raise ValueError(f"expected a finite number, got '{shown}'")
        elif not isinstance(value, self.type) or (self.type is int and isinstance(value, bool)):
            raise ValueError(f"expected a {self.type.__name__}, got {value!r}")
        if self.choices and value not in self.choices:
            allowed = ", ".join(repr(c) if c == "" else str(c) for c in self.choices)
            raise ValueError(f"expected one of {allowed}, got '{shown}'")
        low_ok = self.low is None or (value > self.low if self.low_open else value >= self.low)
        high_ok = self.high is None or value <= self.high
        if not (low_ok and high_ok):
            raise ValueError(f"expected a value in {self.range_text()}, got '{shown}'")

    def range_text(self) -> str:
        """`(0, 1]`, `[1, inf)`, ... or "" when the option has no range."""
        if self.low is None and self.high is None:
            return ""
        lo = "-inf" if self.low is None else f"{self.low:g}"
        hi = "inf" if self.high is None else f"{self.high:g}"
        return f"{'(' if self.low_open or self.low is None else '['}{lo}, {hi}{']' if self.high is not None else ')'}"


def drop_empty_work(ops: list[ir.Operation]) -> list[ir.Operation]:
    """`ops` without those whose output (the last operand: ascend ops are
    destination-passing) has no elements, which are erased: they compute
    nothing, so the correct program for them is empty. An op with an empty
    input but a non-empty output (a reduction over an empty axis, a matmul
    with an empty reduction dimension) is an error at the op: the lowerings
    do not produce an identity fill."""
    kept = []
    for op in ops:
        sizes = [_elements(v.type) for v in op.operands]
        if not sizes or min(sizes) > 0:
            kept.append(op)
            continue
        if sizes[-1] == 0:
            op.erase()
            continue
        i = sizes.index(0)
        raise PassError(f"operand #{i} ({op.operands[i].type}) has no elements but the output "
                        f"has {sizes[-1]}: an empty reduction or contraction is not supported",
                        op)
    return kept


def _elements(t: ir.Type) -> int:
    return math.prod(t.shape) if isinstance(t, ir.MemRefType) else 1


def ub_fraction_option(default: float, help: str, needs: tuple = ()) -> Option:
    """The `ub-fraction` option of the lowerings: a share of UB in (0, 1]."""
    return Option("ub-fraction", float, default, help, low=0.0, high=1.0, low_open=True,
                  needs=needs)


def say_ub_share_exceeded(p: "Pass", op: ir.Operation, detail: str) -> None:
    """Remark, always and as asked (the user's `ub-fraction` caused it), that
    no tiling of `op` fitted pass `p`'s share of UB and it tiled in all of
    UB, with what it took there (`detail`): a lowering's share is room left
    for others, not a reason to refuse a map."""
    ub = p.target.capacity("ub")
    p.remark(op, f"{p.name}: no tiling fits ub-fraction={p.ub_fraction:g} "
                 f"({int(ub * p.ub_fraction)} bytes); tiled in all of UB ({detail}; UB {ub})",
             asked=True)


class OptionError(ValueError):
    pass


_OPTION_RE = re.compile(r"\s*([A-Za-z0-9_-]+)(?:\s*=\s*(\"[^\"]*\"|'[^']*'|\{[^}]*\}|[^\s]*))?")


def split_options(text: str) -> list[tuple[str, str | None]]:
    """MLIR pass-option syntax: space-separated `key=value` pairs (value None
    for a bare `key`)."""
    pairs = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _OPTION_RE.match(text, pos)
        if not m or m.end() == pos:
            raise OptionError(f"malformed pass options '{text}'")
        value = m.group(2)
        if value is not None and value[:1] in "\"'{" and len(value) >= 2:
            value = value[1:-1]
        pairs.append((m.group(1), value))
        pos = m.end()
        while pos < len(text) and text[pos] in " ,":
            pos += 1
    return pairs


class Pass:
    name: ClassVar[str]
    summary: ClassVar[str]
    options: ClassVar[Sequence[Option]] = ()
    # A lowering: the ascend ops it replaces (per-op options apply to them).
    handles: ClassVar[tuple[str, ...]] = ()
    # A need of every option (`npu.passes.applies`): the ops the pass acts on
    # (a lowering: those it `handles`), without which none does anything.
    acts_on: ClassVar[OnOps | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every pass's `run` is seen by npu-opt's instrumentation (printing
        the IR around it, timing it), npu-lower's own sub-pass runs too."""
        super().__init_subclass__(**kwargs)
        run = cls.__dict__.get("run")
        if run is not None and not getattr(run, "instrumented", False):
            cls.run = _checked(instrumented(run))

    def __init__(self, target: Target | None = None, **values: Any):
        self.target = target or get_target()
        known = {o.name.replace("-", "_"): o for o in self.options}
        for key in values:
            if key.replace("-", "_") not in known:
                raise OptionError(f"pass '{self.name}' has no option '{key}'")
        for attr, opt in known.items():
            value = values.get(attr, values.get(opt.name, opt.default))
            if type(value) is int and opt.type is float:
                value = float(value)
            try:
                opt.check(value)
            except ValueError as e:
                raise OptionError(f"bad value for option '{opt.name}' of pass '{self.name}': "
                                  f"{e}") from None
            setattr(self, attr, value)
        # The options set by the caller rather than left at their defaults:
        # a tuning record's pipeline options fill in the others only.
        self.given = frozenset(known[key.replace("-", "_")].name for key in values)
        # An option given where it does not apply is refused (`npu.passes.applies`):
        # here what the options decide, in `run` what the program does.
        self.options_checked = applies.checking()
        refused = self.refusal() if self.options_checked else None
        if refused:
            raise OptionError(refused)

    @classmethod
    def from_option_string(cls, text: str, target: Target | None = None) -> "Pass":
        by_name = {o.name: o for o in cls.options}
        values = {}
        for key, raw in split_options(text):
            opt = by_name.get(key)
            if opt is None:
                known = ", ".join(by_name) or "none"
                raise OptionError(f"pass '{cls.name}' has no option '{key}' (options: {known})")
            try:
                values[key.replace("-", "_")] = opt.parse(raw)
            except ValueError as e:
                raise OptionError(f"bad value for option '{key}' of pass '{cls.name}': {e}") from None
        return cls(target, **values)

    def run(self, module: ir.Operation) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    # -- when options apply (npu.passes.applies) -------------------------------
    def refusal(self, module: ir.Operation | None = None) -> str | None:
        """`<pass>: <option>: does not apply: <why>` for the first option
        given whose `needs` do not hold, or None; without `module`, needs the
        program may meet are left for `run`."""
        return applies.refusal(self, module)

    def why_one_core(self, module: ir.Operation | None) -> str | None:
        """Why this pass works on one core (a `MANY_CORES` need does not
        hold), or None; by default the program says: split when a function
        runs on several cores (None before it is seen)."""
        if module is None or any(block_dim(f) > 1 for f in functions(module)):
            return None
        return "no function runs on several cores"

    def met_by_program(self, name: str, want: Any, module: ir.Operation | None) -> bool:
        """Whether the program may meet a need of option `name` = `want` the
        pass's own value does not: a lowering's ops' own options (`npu.options`)
        may set any of its options (before the program is seen: may)."""
        if not self.handles:
            return False
        if module is None:
            return True
        handled = set(self.handles)
        for op in walk_held(module, lambda o: o.name in handled
                            and OP_OPTIONS_ATTR in o.attributes):
            try:
                if dict_attr_items(op.attributes[OP_OPTIONS_ATTR]).get(name) == want:
                    return True
            except (TypeError, ValueError):
                return True  # a malformed dictionary: its lowering says so at the op
        return False

    # -- per-op options -------------------------------------------------------
    def op_options(self, op: ir.Operation) -> dict[str, Any]:
        """The op's `npu.options`, parsed and checked like pass options."""
        if OP_OPTIONS_ATTR not in op.attributes:
            return {}
        try:
            items = dict_attr_items(op.attributes[OP_OPTIONS_ATTR])
        except (TypeError, ValueError) as e:
            raise PassError(f"'{OP_OPTIONS_ATTR}' must be a dictionary of scalar option "
                            f"values: {e}", op) from None
        by_name = {o.name: o for o in self.options}
        values: dict[str, Any] = {}
        for key, value in items.items():
            if key == DOUBLE_BUFFER_KEY:
                if not isinstance(value, bool):
                    raise PassError(f"'{OP_OPTIONS_ATTR}': '{key}' must be a boolean, got {value!r}", op)
                values[key] = value
                continue
            opt = by_name.get(key)
            if opt is None:
                known = ", ".join([o.name for o in self.options] + [DOUBLE_BUFFER_KEY])
                raise PassError(f"'{OP_OPTIONS_ATTR}' sets '{key}', which is not an option of "
                                f"{self.name} (options: {known})", op)
            text = ("true" if value else "false") if isinstance(value, bool) else str(value)
            try:
                values[key] = opt.parse(text)
            except ValueError as e:
                raise PassError(f"'{OP_OPTIONS_ATTR}': bad value for option '{key}' of "
                                f"{self.name}: {e}", op) from None
        return values

    def for_op(self, op: ir.Operation) -> "Pass":
        """This pass, or a copy of it with the op's per-op options applied."""
        return self._with(self.op_options(op))

    def _with(self, options: dict[str, Any]) -> "Pass":
        values = {k: v for k, v in options.items() if k != DOUBLE_BUFFER_KEY}
        if not values:
            return self
        clone = copy.copy(self)
        for key, value in values.items():
            setattr(clone, key.replace("-", "_"), value)
        return clone

    def lower_each(self, root: ir.Operation, erase: bool = False) -> None:
        """`lower(op)` for every op in `handles`, each through `for_op(op)`.

        `erase`: `lower` builds at the op's insertion point and the op is
        erased here (otherwise `lower` places and erases by itself). The
        loops created for an op with a per-op `double-buffer` are marked
        `npu.double_buffer` for npu-double-buffer. Zero-sized work is
        dropped first (`drop_empty_work`).
        """
        handled = set(self.handles)
        # One walk (the module is large once a lowering has run before).
        for op in drop_empty_work(walk_held(root, lambda o: o.name in handled)):
            options = self.op_options(op)
            double_buffer = options.get(DOUBLE_BUFFER_KEY)
            lowering = self._with(options)
            scope = op.parent
            before = set(_loops(scope)) if double_buffer is not None else set()
            if erase:
                with op.location, ir.InsertionPoint(op):
                    lowering.lower(op)
                op.erase()
            else:
                lowering.lower(op)
            if double_buffer is not None:
                with scope.context:
                    for loop in _loops(scope):
                        if loop not in before:
                            loop.attributes[DOUBLE_BUFFER_ATTR] = ir.BoolAttr.get(double_buffer)

    def lower(self, op: ir.Operation) -> None:  # pragma: no cover - interface of lowerings
        raise NotImplementedError

    # -- diagnostics helpers for subclasses ---------------------------------
    def remark(self, op: ir.Operation | ir.OpView, message: str, asked: bool | None = None) -> None:
        """`asked`: whether an option asked for it (shown by npu.compile and
        npu-run); by default, whether this pass's `remarks` option was given
        on (npu-lower gives its sub-passes theirs: off unless asked)."""
        if asked is None:
            asked = bool(getattr(self, "remarks", False)) and "remarks" in self.given
        diagnostics.emit_remark(message, op.operation.location, asked)

    def to_callable(self):
        """Adapter for `PassManager.add`: failures become located errors."""
        from npu.dialects import verify

        def run(op, pass_) -> None:
            try:
                with cyclic_gc_paused():
                    self.run(op.operation)
            except PassError as e:
                loc = e.loc if e.loc is not None else op.location
                diagnostics.emit_error(e.message, loc)
                pass_.signal_pass_failure()
                return
            except Exception as e:  # an internal bug, not the user's input
                if os.environ.get("NPU_DEBUG"):
                    traceback.print_exc()
                diagnostics.emit_error(
                    f"internal error in pass '{self.name}': {type(e).__name__}: {e} "
                    "(set NPU_DEBUG=1 for a traceback)", op.location)
                pass_.signal_pass_failure()
                return
            if not verify(op.operation):
                # The input verified before this pass: invalid output is a
                # compiler bug (say so, rather than blame the user's op).
                diagnostics.emit_error(
                    f"internal error: pass '{self.name}' produced IR that does not verify "
                    "(the error above)", op.location)
                pass_.signal_pass_failure()

        run.__name__ = self.name.replace("-", "_")
        return run


def _checked(run):
    """`run` after refusing an option only the program shows does not apply
    (`Pass.refusal` with the module; not for a pass built `unchecked`)."""
    def wrapper(self, op: ir.Operation) -> None:
        if getattr(self, "options_checked", False):  # (a subclass may skip __init__)
            refused = self.refusal(op)
            if refused:  # about the options, not a place in the input
                raise PassError(refused, loc=ir.Location.unknown(op.context))
        return run(self, op)

    wrapper.__name__, wrapper.__doc__, wrapper.instrumented = run.__name__, run.__doc__, True
    wrapper.__wrapped__ = run
    return wrapper


@contextlib.contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """No cycle collection while a pass runs. The analyses hold hundreds of
    thousands of small objects (ranges, accesses, clocks), and every full
    collection walked all of them: on a 12-layer BERT that was about a third
    of npu-insert-sync and npu-double-buffer. Collecting a hundred times less
    often still walked them: 9 young collections in npu-lower, 0.3 CPU s at
    32 cores. The passes make few cycles (the recursive closures that made
    132k dead objects there now break their own: `walk`, `analyse_piece`;
    2k are left), so they wait for the first collection after the pass."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _loops(scope: ir.Operation) -> list[ir.Operation]:
    return list(walk(scope, lambda o: o.name == "scf.for"))
