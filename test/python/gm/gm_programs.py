"""Ascend-level programs whose operands are GM temporaries and views of them.

`through_temporaries` wraps one ascend op so that every operand it sees is a
`memref.alloc` in GM or a reshape of one: each input is copied (`adds 0`, exact)
from a flat argument into a temporary through a `collapse_shape` view of it,
and the op writes its result into an `expand_shape` view of a flat temporary
that is copied out the same way. Unplanned, the op's operands are allocs and
views of allocs; after `npu-plan-gm` they are `memref.view`s of the workspace
and reshapes of those.
"""

from __future__ import annotations

from math import prod
from typing import Sequence


def mt(shape: Sequence[int], elem: str) -> str:
    return f'memref<{"x".join(map(str, shape))}x{elem}, "gm">'


def _all_dims(rank: int) -> str:
    return "[[" + ", ".join(map(str, range(rank))) + "]]"


def through_temporaries(op: str, inputs: Sequence[tuple[Sequence[int], str]],
                        output: tuple[Sequence[int], str], attrs: str = "",
                        name: str = "f") -> str:
    args, body = [], []
    operands = []
    for i, (shape, elem) in enumerate(inputs):
        n = prod(shape)
        args.append(f"%in{i}: {mt([n], elem)}")
        body.append(f"  %t{i} = memref.alloc() : {mt(shape, elem)}")
        target = f"%t{i}"
        if len(shape) > 1:
            body.append(f"  %t{i}f = memref.collapse_shape %t{i} {_all_dims(len(shape))} : "
                        f"{mt(shape, elem)} into {mt([n], elem)}")
            target = f"%t{i}f"
        body.append(f'  "ascend.adds"(%in{i}, {target}) {{scalar = 0.0 : f64}} : '
                    f"({mt([n], elem)}, {mt([n], elem)}) -> ()")
        operands.append((f"%t{i}", mt(shape, elem)))
    shape, elem = output
    n = prod(shape)
    args.append(f"%out: {mt([n], elem)}")
    body.append(f"  %r = memref.alloc() : {mt([n], elem)}")
    view = "%r"
    if len(shape) > 1:
        body.append(f"  %rv = memref.expand_shape %r {_all_dims(len(shape))} output_shape "
                    f"[{', '.join(map(str, shape))}] : {mt([n], elem)} into {mt(shape, elem)}")
        view = "%rv"
    operands.append((view, mt(shape, elem)))
    attr_text = f" {{{attrs}}}" if attrs else ""
    body.append(f'  "{op}"({", ".join(v for v, _ in operands)}){attr_text} : '
                f"({', '.join(t for _, t in operands)}) -> ()")
    body.append(f'  "ascend.adds"(%r, %out) {{scalar = 0.0 : f64}} : '
                f"({mt([n], elem)}, {mt([n], elem)}) -> ()")
    body.append("  return")
    return f"func.func @{name}({', '.join(args)}) {{\n" + "\n".join(body) + "\n}\n"
