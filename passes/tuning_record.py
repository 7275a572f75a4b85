"""The tuning record: the options `npu-tune` chose for each op, as JSON.

Ops are keyed by a stable signature (op name, operand types, inherent
attributes), so a record made for one program applies to every op of the
same shape in another. Options use `npu-lower`'s names (`strategy`, `m`,
`matmul-schedule`, `ub-fraction`, `double-buffer`, ...). A record may also
set options of the whole pipeline ("pipeline": the core count, the fusion
switches; `npu.passes.lower_options.PIPELINE_OPTIONS`), which npu-lower
takes where its caller left them unset. `npu-lower tuning-record=FILE` and
`npu-run --tuning-record FILE` apply it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from mlir import ir

FORMAT = "npu-tune-record"
VERSION = 1


class RecordError(ValueError):
    """A record file that cannot be read or has the wrong shape."""


def op_signature(op: ir.Operation) -> str:
    """`name(operand types){inherent attributes}`; `npu.*` attributes are ours
    (per-op options, marks) and do not change what the op computes."""
    operands = ", ".join(str(v.type) for v in op.operands)
    attrs = sorted((name, str(op.attributes[name])) for name in op.attributes
                   if not name.startswith("npu."))
    text = f"{op.name}({operands})"
    if attrs:
        text += "{" + ", ".join(f"{k} = {v}" for k, v in attrs) + "}"
    return text


@dataclass
class OpChoice:
    """The options chosen for one op signature and the evidence behind them."""

    options: dict[str, Any]
    family: str = ""
    cycles: int | None = None  # simulated cycles of the op alone with `options`
    default_cycles: int | None = None  # ... with npu-lower's defaults (the cost model)
    candidates: int = 0


@dataclass
class TuningRecord:
    target: str
    ops: dict[str, OpChoice] = field(default_factory=dict)
    # npu-lower options for the whole program, e.g. {"cores": 8, "fuse": true}.
    pipeline: dict[str, Any] = field(default_factory=dict)
    # Whole-program evidence: cycles with and without the record, the check.
    program: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps({"format": FORMAT, "version": VERSION, "target": self.target,
                           "pipeline": self.pipeline,
                           "ops": {sig: asdict(c) for sig, c in self.ops.items()},
                           "program": self.program}, indent=2)

    @staticmethod
    def from_json(text: str, where: str = "record") -> "TuningRecord":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise RecordError(f"{where}: not JSON: {e}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise RecordError(f"{where}: not an npu-tune record (no \"format\": \"{FORMAT}\")")
        if data.get("version") != VERSION:
            raise RecordError(f"{where}: record version {data.get('version')!r}, expected {VERSION}")
        ops = data.get("ops", {})
        if not isinstance(ops, dict):
            raise RecordError(f"{where}: \"ops\" must map op signatures to choices")
        pipeline = data.get("pipeline", {})
        if not isinstance(pipeline, dict):
            raise RecordError(f"{where}: \"pipeline\" must map npu-lower options to values")
        bad = [k for k, v in pipeline.items() if not isinstance(v, (bool, int, float, str))]
        if bad:
            raise RecordError(f"{where}: pipeline option '{bad[0]}' must be a scalar")
        record = TuningRecord(str(data.get("target", "")), pipeline=dict(pipeline),
                              program=data.get("program", {}))
        for sig, choice in ops.items():
            if not isinstance(choice, dict) or not isinstance(choice.get("options"), dict):
                raise RecordError(f"{where}: op '{sig}' has no \"options\" object")
            bad = [k for k, v in choice["options"].items()
                   if not isinstance(v, (bool, int, float, str))]
            if bad:
                raise RecordError(f"{where}: op '{sig}': option '{bad[0]}' must be a scalar")
            known = {k: choice[k] for k in ("family", "cycles", "default_cycles", "candidates")
                     if k in choice}
            record.ops[sig] = OpChoice(dict(choice["options"]), **known)
        return record

    @staticmethod
    def load(path: str) -> "TuningRecord":
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise RecordError(f"cannot read tuning record '{path}': {e.strerror}") from None
        return TuningRecord.from_json(text, path)

    def options_for(self, op: ir.Operation) -> dict[str, Any] | None:
        choice = self.ops.get(op_signature(op))
        return None if choice is None else choice.options
