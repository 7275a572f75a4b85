"""Pinning a model's dynamic input dimensions (`--input-shape`, `input_shapes=`).

We compile static shapes only. Exporters often leave the batch or sequence
dimension symbolic (`dim_param: "batch"`); the user names the shape to
compile for, and it is written into the model before anything else reads it:
the inputs' dims are replaced, a symbolic dim shared by several inputs takes
the same value in the inputs not named, and the shapes inferred from the old
dims (`value_info`, the outputs' symbolic dims) are dropped, to be inferred
again from the new ones.
"""

from __future__ import annotations

import re

Shape = tuple[int, ...]

_SPEC = re.compile(r"^\s*([^=]+?)\s*=\s*([0-9]+(?:\s*[xX,]\s*[0-9]+)*)?\s*$")


class InputShapeError(ValueError):
    """A bad `--input-shape` / `input_shapes`: a usage error, not a model error."""


def parse_input_shape(text: str) -> dict[str, Shape]:
    """`name=1x128` (or `name=` for a rank-0 input) -> {name: (1, 128)}.
    Several may be separated by ';' or by ',' before a name:
    `ids=1x128,mask=1x128`."""
    shapes: dict[str, Shape] = {}
    for part in re.split(r";|,(?=\s*[^0-9\s,;][^=,;]*=)", text):
        if not part.strip():
            continue
        m = _SPEC.match(part)
        if not m:
            raise InputShapeError(f"'{part.strip()}' is not NAME=DIMS (for example input_ids=1x128)")
        name, dims = m.group(1), m.group(2) or ""
        shape = tuple(int(d) for d in re.split(r"\s*[xX,]\s*", dims) if d) if dims else ()
        if any(d <= 0 for d in shape):
            raise InputShapeError(f"'{part.strip()}': every dimension must be at least 1")
        if name in shapes and shapes[name] != shape:
            raise InputShapeError(f"input '{name}' is given two shapes")
        shapes[name] = shape
    if not shapes:
        raise InputShapeError(f"'{text}' names no input (expected NAME=DIMS, e.g. input_ids=1x128)")
    return shapes


def check_input_shapes(shapes) -> dict[str, Shape]:
    """The Python API's `input_shapes` as {name: tuple of ints}, or InputShapeError."""
    if not isinstance(shapes, dict):
        raise InputShapeError(f"input_shapes must be a dict of name -> shape, got {type(shapes).__name__}")
    out: dict[str, Shape] = {}
    for name, shape in shapes.items():
        try:
            dims = tuple(int(d) for d in shape)
        except (TypeError, ValueError):
            raise InputShapeError(f"input_shapes['{name}'] = {shape!r} is not a sequence of "
                                  "integers") from None
        if any(d <= 0 for d in dims) or any(isinstance(d, bool) for d in shape):
            raise InputShapeError(f"input_shapes['{name}'] = {list(shape)}: every dimension must "
                                  "be an integer of at least 1")
        out[str(name)] = dims
    return out


def _dims(value_info) -> list[int | str | None] | None:
    """Declared dims: an int, the dim_param's name, or None (unknown); None
    for no declared shape at all."""
    tt = value_info.type.tensor_type
    if not tt.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tt.shape.dim]


def _show(dims: list) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def graph_inputs(model) -> list:
    """The model's real inputs (not the initializers old IR versions list too)."""
    initialized = {t.name for t in model.graph.initializer}
    return [v for v in model.graph.input if v.name not in initialized]


def pin_input_shapes(model, shapes: dict[str, Shape]) -> None:
    """Write `shapes` into `model`'s inputs (in place); InputShapeError, one
    line, when an input does not exist or a shape contradicts the model."""
    inputs = {v.name: v for v in graph_inputs(model)}
    for name in shapes:
        if name not in inputs:
            raise InputShapeError(f"--input-shape: the model has no input '{name}' (its inputs: "
                                  f"{', '.join(inputs) or 'none'})")
    params: dict[str, tuple[int, str]] = {}  # dim_param -> (value, the input it came from)
    for name, shape in shapes.items():
        declared = _dims(inputs[name])
        if declared is None:
            continue
        if len(declared) != len(shape):
            raise InputShapeError(f"--input-shape {name}={_spell(shape)}: input '{name}' has rank "
                                  f"{len(declared)} {_show(declared)}, not {len(shape)}")
        for axis, (want, got) in enumerate(zip(declared, shape)):
            if isinstance(want, int) and want > 0 and want != got:
                raise InputShapeError(f"--input-shape {name}={_spell(shape)}: dimension {axis} of "
                                      f"input '{name}' is {want} in the model {_show(declared)}")
            if isinstance(want, str):
                if want in params and params[want][0] != got:
                    value, other = params[want]
                    raise InputShapeError(f"--input-shape {name}={_spell(shape)}: dimension '{want}' "
                                          f"is {value} in input '{other}'")
                params[want] = (got, name)
    for name, value in inputs.items():
        shape = shapes.get(name)
        if shape is None:
            declared = _dims(value)
            if declared is None or not any(isinstance(d, str) and d in params for d in declared):
                continue
            shape = tuple(params[d][0] if isinstance(d, str) and d in params else d for d in declared)
        _set_shape(value, shape)
    _forget_inferred(model, {p: v for p, (v, _) in params.items()})


def _spell(shape: Shape) -> str:
    return "x".join(str(d) for d in shape)


def _set_shape(value_info, shape) -> None:
    tt = value_info.type.tensor_type
    tt.ClearField("shape")
    tt.shape.SetInParent()  # a rank-0 shape is a present, empty shape
    for d in shape:
        dim = tt.shape.dim.add()
        if isinstance(d, int) and d > 0:
            dim.dim_value = d
        elif isinstance(d, str):
            dim.dim_param = d


def _forget_inferred(model, params: dict[str, int]) -> None:
    """Drop the shapes inferred from the old dims: `value_info`, and the
    outputs' symbolic dims (pinned ones take their value, others are inferred
    again by `infer_output_shapes`)."""
    del model.graph.value_info[:]
    for out in model.graph.output:
        declared = _dims(out)
        if declared is None:
            continue
        _set_shape(out, [params.get(d, d) if isinstance(d, str) else d for d in declared])


def infer_output_shapes(model) -> None:
    """Outputs declared with symbolic or unknown dims take the static dims
    shape inference finds (a model whose inputs were pinned)."""
    from npu.frontend.onnx_skeleton import infer_shapes

    if all(_static(o) for o in model.graph.output):
        return
    try:
        inferred = infer_shapes(model)
    except Exception:  # noqa: BLE001 - the checks that follow report it
        return
    found = {o.name: o for o in inferred.graph.output}
    for out in model.graph.output:
        new = found.get(out.name)
        if not _static(out) and new is not None and _static(new):
            _set_shape(out, _dims(new))


def _static(value_info) -> bool:
    dims = _dims(value_info)
    return dims is not None and all(isinstance(d, int) and d > 0 for d in dims)


def dynamic_shape_message(value_info, kind: str) -> str:
    """The error for an input or output whose shape is not static: the
    dynamic dims by name, and the option that pins them."""
    name = value_info.name
    declared = _dims(value_info)
    if declared is not None and 0 in declared:  # a size, not a symbol: nothing to pin
        return (f"{kind} '{name}': shape {_show(declared)} has a zero-size dimension (empty "
                "tensors are not compiled)")
    if declared is None:
        shape, spell = "(no shape declared)", "<dims>"
    else:
        shape = _show(declared)
        spell = "x".join(str(d) if isinstance(d, int) and d > 0 else f"<{d or '?'}>" for d in declared)
    if kind == "output":
        return (f"output '{name}': dynamic or unknown shape {shape} that the inputs' shapes do not "
                "fix (only static shapes compile)")
    dynamic = [str(d) if d else f"dim {i}" for i, d in enumerate(declared or [])
               if not (isinstance(d, int) and d > 0)]
    which = f"dynamic dims {', '.join(dynamic)}" if dynamic else "no shape"
    return (f"input '{name}': dynamic or unknown shape {shape} ({which}; only static shapes "
            f"compile): pin it with --input-shape {name}={spell} "
            f"(npu.compile: input_shapes={{'{name}': ...}})")
