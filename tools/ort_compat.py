"""A model the installed onnxruntime can read, for `npu-run --check`'s reference.

We compile any IR version and opset torch-mlir imports, but the reference
runtime lags `onnx`: onnx 1.23's `helper.make_model` writes IR version 14 and
opset 28, while onnxruntime 1.31 reads IR 13 and opset 26 at most. Such a
model is brought down for the reference only: the IR version is lowered when
no element type newer than the classic ones appears, and the opset is
converted by onnx's version converter. When that cannot be done the error says
what to do; it is never an internal error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Element types 1..16 (FLOAT .. BFLOAT16) exist since IR version 4; the
# later ones (float8, int4, float4, ...) came with later IR versions.
_CLASSIC_TYPES = range(0, 17)

_MAX_IR = re.compile(r"max supported IR version: (\d+)")
_MAX_OPSET = re.compile(r"support for domain ai\.onnx is till opset (\d+)")


class ReferenceUnavailable(Exception):
    """onnxruntime cannot read the model, and it cannot be converted: the reason."""


@dataclass
class Readable:
    """The session and what was changed to make it (empty: nothing)."""
    session: object
    changes: list[str] = field(default_factory=list)


def open_session(model, options) -> Readable:
    """An onnxruntime session for `model`, converted if it must be."""
    import onnxruntime

    changes: list[str] = []
    for _ in range(3):  # at most an IR and an opset conversion, then the real answer
        try:
            session = onnxruntime.InferenceSession(model.SerializeToString(), options,
                                                   providers=["CPUExecutionProvider"])
            return Readable(session, changes)
        except Exception as e:  # onnxruntime raises its own Fail/InvalidGraph/... types
            message = str(e)
            converted = _convert(model, message, changes)
            if converted is None:
                raise ReferenceUnavailable(_first_line(message, e)) from None
            model = converted
    raise ReferenceUnavailable("the converted model is still refused")


def _first_line(message: str, e: Exception) -> str:
    message = message.strip()
    if not message:
        return type(e).__name__
    # onnxruntime prefixes the C++ function's signature: keep what follows.
    line = message.splitlines()[0]
    tail = re.split(r"\) (?=[A-Z])", line, maxsplit=1)
    return tail[-1] if len(tail) > 1 and "onnxruntime::" in line else line


def _convert(model, message: str, changes: list[str]) -> object | None:
    """The model one step closer to what onnxruntime reads, or None when the
    message is not about versions. ReferenceUnavailable when it cannot be."""
    import onnxruntime

    version = onnxruntime.__version__
    m = _MAX_IR.search(message)
    if m:
        target = int(m.group(1))
        newer = sorted(_element_types(model) - set(_CLASSIC_TYPES))
        if newer:
            raise ReferenceUnavailable(
                f"onnxruntime {version} reads IR version {target} at most, and this model's IR "
                f"version {model.ir_version} carries element types it may not know ({newer})")
        copy = _copy(model)
        copy.ir_version = target
        changes.append(f"IR version {model.ir_version} -> {target}")
        return copy
    m = _MAX_OPSET.search(message)
    if m:
        import onnx
        from onnx import version_converter

        target = int(m.group(1))
        current = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
        try:
            copy = version_converter.convert_version(model, target)
            onnx.checker.check_model(copy)
        except Exception as e:  # noqa: BLE001 - the converter's refusals are of many types
            reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise ReferenceUnavailable(
                f"onnxruntime {version} reads opsets up to {target}, and onnx's version converter "
                f"cannot bring this model down from opset {current} ({reason}); export it with "
                f"opset {target} or lower, or run without --check") from None
        copy.ir_version = min(copy.ir_version, model.ir_version)
        changes.append(f"opset {current} -> {target}")
        return copy
    return None


def _copy(model) -> object:
    copy = type(model)()
    copy.CopyFrom(model)
    return copy


def _element_types(model) -> set[int]:
    """Every element type the main graph declares or stores."""
    g = model.graph
    types = {v.type.tensor_type.elem_type for v in list(g.input) + list(g.output) + list(g.value_info)}
    types |= {t.data_type for t in g.initializer}
    for node in g.node:
        for a in node.attribute:
            if a.name == "to" and node.op_type in ("Cast", "CastLike"):
                types.add(a.i)
            if a.HasField("t"):
                types.add(a.t.data_type)
    return types
