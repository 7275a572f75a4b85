"""What may join a conv's drain (`npu.conv_epilogue` groups, formed by
`npu-fuse`, lowered by `npu-lower-conv`).

A conv's result in NC1HWC0 is, tile by tile, the implicit matmul's C in the
order it drains (each Cout block's run of output pixels), so an elementwise
op over whole NC1HWC0 tensors of the result's shape (the ReLU or ReLU6
after a conv, a residual Add, the cast to f16 for the next conv) is one
more vector pass over the tile in UB: its other operands' tiles are loaded
like the result's own store, and only the last member's result goes to GM.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from npu import ir as nir
from npu.costmodel.vector.recipes import Compute, compute_of, repeat_cycles
from npu.diagnostics import PassError
from npu.target import Target

CONV_EPILOGUE_ATTR = "npu.conv_epilogue"


def joins(op: ir.Operation, shape: list[int]) -> bool:
    """Whether elementwise `op` can run on a drained tile: every memref it
    takes or writes is a contiguous GM tensor of the conv result's `shape`,
    and the vector unit has a recipe for its types."""
    values = [v for v in op.operands if nir.is_memref(v.type)]
    if len(values) < 2 or any(nir.memory_space(v) != "gm" or not nir.is_contiguous(v)
                              or nir.memref_shape(v) != shape for v in values):
        return False
    try:
        compute_of(op, [nir.memref_element(v) for v in values[:-1]], nir.memref_element(values[-1]))
    except PassError:
        return False
    return True


def loaded_operands(members: list[ir.Operation], conv_out: ir.Value) -> list[ir.Value]:
    """The tensors the members read from GM (not made in the group), in
    first-use order."""
    made = [conv_out] + [m.operands[-1] for m in members]
    loads: list[ir.Value] = []
    for m in members:
        for v in m.operands[:-1]:
            if nir.is_memref(v.type) and not any(v == w for w in made + loads):
                loads.append(v)
    return loads


def leading_cast(members: list[ir.Operation], conv_out: ir.Value) -> ir.Operation | None:
    """The group's first member when it is the rounding f32 -> f16 cast of
    the conv's result and nothing else in the group reads that result: the
    drain can round as it leaves L0C instead (`compute = "f16"`)."""
    if not members or members[0].name != "ascend.cast":
        return None
    cast = members[0]
    if cast.operands[0] != conv_out or nir.str_attr(cast, "round_mode") != "rint":
        return None
    if (nir.memref_element(conv_out), nir.memref_element(cast.operands[-1])) != ("f32", "f16"):
        return None
    if any(v == conv_out for m in members[1:] for v in m.operands):
        return None
    return cast


def member_compute(m: ir.Operation) -> Compute:
    """The vector recipe of member `m` over its operands' and result's types."""
    values = [v for v in m.operands if nir.is_memref(v.type)]
    return compute_of(m, [nir.memref_element(v) for v in values[:-1]],
                      nir.memref_element(values[-1]))


@dataclass(frozen=True)
class EpilogueWork:
    """What a conv's epilogue adds to each drained tile, per drained element
    (the conv's tiling model weighs it: `npu.costmodel.conv.tiling`)."""

    set_bytes: int      # UB of one drain's tiles: results, temporaries, loaded operands
    vector: float       # vector cycles
    loaded_bytes: int   # GM bytes read (the operands loaded, e.g. a residual)
    loads: int          # operands loaded per drained tile (one copy each)
    out_bytes: int      # of the stored result (the last member's type)


def work(members: list[ir.Operation], conv_out: ir.Value, target: Target) -> EpilogueWork:
    """The epilogue `members` of the conv writing `conv_out`, per element."""
    computes = [member_compute(m) for m in members]
    loaded = loaded_operands(members, conv_out)
    types = [nir.memref_element(m.operands[-1]) for m in members]
    types += [t for k in computes for t in k.temps]
    vector = 0.0
    for m, k in zip(members, computes):
        widest = max(nir.element_bytes(nir.memref_element(v)) for v in m.operands
                     if nir.is_memref(v.type))
        vector += repeat_cycles(k, target) / target.lanes(widest)
    loaded_types = [nir.memref_element(v) for v in loaded]
    return EpilogueWork(
        set_bytes=sum(nir.element_bytes(t) for t in types + loaded_types), vector=vector,
        loaded_bytes=sum(nir.element_bytes(t) for t in loaded_types), loads=len(loaded),
        out_bytes=nir.element_bytes(types[len(members) - 1]))
