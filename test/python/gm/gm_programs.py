"""Ascend-level programs whose operands are GM temporaries and views of them.

`through_temporaries` wraps one ascend op so that every operand it sees is a
`memref.alloc` in GM or a reshape of one: each input is copied (`adds 0`, exact)
from a flat argument into a temporary, and the op's result goes into a
temporary that is copied out the same way. With `reshaped_inputs=False` the
op reads the temporaries as allocated (the copy writes a `collapse_shape` of
them) and writes an `expand_shape` of a flat temporary; with True it reads
`expand_shape`s of flat temporaries and writes a temporary as allocated (the
copy out reads a `collapse_shape` of it). Unplanned, the op's operands are
allocs and reshapes of allocs; after `npu-plan-gm` they are `memref.view`s
of the workspace and reshapes of those.
"""

from __future__ import annotations

from math import prod
from typing import Sequence


def mt(shape: Sequence[int], elem: str) -> str:
    return f'memref<{"x".join(map(str, shape))}x{elem}, "gm">'


def _all_dims(rank: int) -> str:
    return "[[" + ", ".join(map(str, range(rank))) + "]]"


def _reshaped(name: str, flat: str, shape: Sequence[int], elem: str, expand: bool,
              body: list[str]) -> str:
    """`flat` (1-D) as `shape` (expand) or `flat` (shaped) as 1-D (collapse)."""
    if len(shape) == 1:
        return flat
    n = prod(shape)
    if expand:
        body.append(f"  {name} = memref.expand_shape {flat} {_all_dims(len(shape))} output_shape "
                    f"[{', '.join(map(str, shape))}] : {mt([n], elem)} into {mt(shape, elem)}")
    else:
        body.append(f"  {name} = memref.collapse_shape {flat} {_all_dims(len(shape))} : "
                    f"{mt(shape, elem)} into {mt([n], elem)}")
    return name


def _copy(src: str, dst: str, n: int, elem: str) -> str:
    return (f'  "ascend.adds"({src}, {dst}) {{scalar = 0.0 : f64}} : '
            f"({mt([n], elem)}, {mt([n], elem)}) -> ()")


def through_temporaries(op: str, inputs: Sequence[tuple[Sequence[int], str]],
                        output: tuple[Sequence[int], str], attrs: str = "",
                        name: str = "f", reshaped_inputs: bool = False) -> str:
    args, body, operands = [], [], []
    for i, (shape, elem) in enumerate(inputs):
        n = prod(shape)
        args.append(f"%in{i}: {mt([n], elem)}")
        if reshaped_inputs:
            body.append(f"  %t{i} = memref.alloc() : {mt([n], elem)}")
            body.append(_copy(f"%in{i}", f"%t{i}", n, elem))
            operands.append((_reshaped(f"%t{i}x", f"%t{i}", shape, elem, True, body),
                             mt(shape, elem)))
        else:
            body.append(f"  %t{i} = memref.alloc() : {mt(shape, elem)}")
            flat = _reshaped(f"%t{i}f", f"%t{i}", shape, elem, False, body)
            body.append(_copy(f"%in{i}", flat, n, elem))
            operands.append((f"%t{i}", mt(shape, elem)))
    shape, elem = output
    n = prod(shape)
    args.append(f"%out: {mt([n], elem)}")
    body.append(f"  %r = memref.alloc() : {mt(shape if reshaped_inputs else [n], elem)}")
    result = "%r" if reshaped_inputs else _reshaped("%rx", "%r", shape, elem, True, body)
    operands.append((result, mt(shape, elem)))
    attr_text = f" {{{attrs}}}" if attrs else ""
    body.append(f'  "{op}"({", ".join(v for v, _ in operands)}){attr_text} : '
                f"({', '.join(t for _, t in operands)}) -> ()")
    flat = _reshaped("%rf", "%r", shape, elem, False, body) if reshaped_inputs else "%r"
    body.append(_copy(flat, "%out", n, elem))
    body.append("  return")
    return f"func.func @{name}({', '.join(args)}) {{\n" + "\n".join(body) + "\n}\n"


def through_argument_views(op: str, inputs: Sequence[tuple[Sequence[int], str]],
                           output: tuple[Sequence[int], str], attrs: str = "",
                           name: str = "f") -> str:
    """One ascend op on `expand_shape` views of flat (1-D) arguments, the
    output included: reshapes of function arguments rather than temporaries."""
    args, body, operands = [], [], []
    for i, (shape, elem) in enumerate(list(inputs) + [output]):
        n = prod(shape)
        args.append(f"%a{i}: {mt([n], elem)}")
        operands.append((_reshaped(f"%v{i}", f"%a{i}", shape, elem, True, body), mt(shape, elem)))
    attr_text = f" {{{attrs}}}" if attrs else ""
    body.append(f'  "{op}"({", ".join(v for v, _ in operands)}){attr_text} : '
                f"({', '.join(t for _, t in operands)}) -> ()")
    body.append("  return")
    return f"func.func @{name}({', '.join(args)}) {{\n" + "\n".join(body) + "\n}\n"
