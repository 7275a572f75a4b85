"""Matmul chains in `npu-lower-matmul` (decided by `npu-fuse`, see
passes/fuse/chains.py): each GM tensor marked `npu.chain` becomes one L1
buffer, allocated where the GM alloc was (top level: npu-plan-memory keeps
it from the producer's first store to the consumer's last load). The
producer's drains store into it UB -> L1 (`store_name`), the consumer reads
it as its resident A strip (no GM -> L1 copy of A), and the producer's
tiling sees the L1 that is left beside it (`l1_left_target`)."""

from __future__ import annotations

import dataclasses

from mlir import ir

from npu import ir as nir
from npu.passes.fuse.chains import chain_attr
from npu.target import Target


class ChainedTensors:
    """Mixed into `LowerMatmul`: `chained` maps a chained GM tensor to its
    L1 buffer for the duration of the pass."""

    chained: dict

    def bind_chains(self, module: ir.Operation) -> list[ir.Operation]:
        """An L1 buffer for every chained GM alloc; returns those allocs."""
        self.chained = {}
        allocs = nir.walk_held(module, lambda o: o.name == "memref.alloc" and chain_attr(o) is not None)
        for alloc in allocs:
            gm = alloc.results[0]
            with alloc.location, ir.InsertionPoint(alloc):
                self.chained[gm] = nir.alloc(nir.memref_shape(gm), nir.memref_element(gm), "l1")
        return allocs

    def release_chains(self, allocs: list[ir.Operation]) -> None:
        """Erase the GM allocs the lowering no longer uses."""
        for alloc in allocs:
            if not any(True for _ in alloc.results[0].uses):
                alloc.erase()
        self.chained = {}

    def chained_l1(self, value: ir.Value) -> ir.Value | None:
        """The L1 buffer of `value`'s root when it is a chained tensor."""
        return getattr(self, "chained", {}).get(nir.view_root(value))

    def chained_k(self, value: ir.Value) -> int:
        """npu-fuse's C tile width for the consumer of a chained tensor (0: none)."""
        if self.chained_l1(value) is None:
            return 0
        return int(chain_attr(nir.view_root(value).owner.operation)["consumer_k"])

    def store_name(self, value: ir.Value) -> str:
        """The copy that leaves UB for `value`: into L1 when it is chained."""
        return "cce.copy_ub_to_l1" if self.chained_l1(value) is not None else "cce.copy_ub_to_gm"

    def l1_left_target(self, op: ir.Operation, results: list[ir.Value]) -> Target:
        """The target whose L1 is what the chained `results` of the matmul
        `op` (its C or its epilogue's results) leave to its own tiling."""
        held = sum(_bytes(self.chained_l1(v)) for v in results if self.chained_l1(v) is not None)
        if not held:
            return self.target
        buffers = dict(self.target.buffer_bytes)
        buffers["l1"] -= held
        return dataclasses.replace(self.target, buffer_bytes=buffers)


def _bytes(value: ir.Value) -> int:
    n = nir.element_bytes(nir.memref_element(value))
    for d in nir.memref_shape(value):
        n *= d
    return n
