"""Matmul chains of `npu-fuse` (`chains=true`): a matmul whose result (or
its epilogue's) is read only as the A operand of one later matmul keeps
that result in L1; the producer's drained C tiles move UB -> L1 (MTE3)
instead of UB -> GM, and the consumer's L1 -> L0A loads read them there
instead of a GM -> L1 copy of A (seed 001: the intermediate's round trip
is the traffic saved).

The decision marks the GM alloc of the tensor with `npu.chain` (a
dictionary: its bytes and the consumer's C tile width); `npu-plan-gm`
leaves such an alloc alone and `npu-lower-matmul` replaces it by an L1
buffer that lives from the producer's first store to the consumer's last
load (dialects/README.md, "Matmul chains").

The result must fit L1 beside each matmul's own working set, as its
tiling would hold it with all of L1 (`l1_working_set`); the consumer's A
strip is the tensor itself."""

from __future__ import annotations

from mlir import ir

from npu.costmodel.fusion import epilogue
from npu import ir as nir
from npu.dialects.ascend import matmul_dims
from npu.costmodel.matmul.fitting import MatmulShape
from npu.costmodel.matmul.tiling import TilingError, choose_tiling

CHAIN_ATTR = "npu.chain"


def chain_attr(alloc: ir.Operation) -> dict | None:
    """The `npu.chain` figures of a GM alloc, or None when it is not chained."""
    if CHAIN_ATTR not in alloc.attributes:
        return None
    return nir.dict_attr_items(alloc.attributes[CHAIN_ATTR])


class MatmulChains:
    """Mixed into `FusePass` (its target, options and `remark`)."""

    def chain_matmuls(self, func: ir.Operation) -> dict[ir.Operation, str]:
        """Marks each chainable tensor's alloc; returns a remark per
        producer matmul (formed, or why not) for the caller to emit."""
        remarks: dict[ir.Operation, str] = {}
        body = func.regions[0].blocks[0]
        for alloc in [o.operation for o in body.operations if o.operation.name == "memref.alloc"]:
            found = self.chain_of(alloc.result)
            if found is None:
                continue
            producer, consumer = found
            why = self.chain_refusal(alloc.result, producer, consumer)
            if why is None:
                t = alloc.result
                shape = nir.memref_shape(t)
                size = _bytes(t)
                with alloc.context:
                    alloc.attributes[CHAIN_ATTR] = nir.dict_attr_of(
                        {"bytes": size, "consumer_k": self.consumer_tiling(consumer).tiles.k})
                remarks[producer] = (
                    f"matmul chain: its {size}-byte result ({shape[1] * shape[2]}x"
                    f"{shape[0] * shape[3]} f16 Nz) stays in L1 as the A operand of the next "
                    f"matmul (GM traffic -{2 * size} bytes: no store, no load)")
            else:
                remarks[producer] = f"matmul chain not formed: {why}"
        return remarks

    def chain_of(self, tensor: ir.Value) -> tuple[ir.Operation, ir.Operation] | None:
        """(producer matmul, consumer matmul) when `tensor` is written only by
        a plain matmul's C or as a result of its epilogue group and read only
        as one matmul's A; else None (no candidate: no remark)."""
        if not nir.is_memref(tensor.type) or nir.memory_space(tensor) != "gm":
            return None
        writers, readers = [], []
        for use in tensor.uses:
            owner = use.owner.operation if hasattr(use.owner, "operation") else use.owner
            if not owner.name.startswith("ascend."):
                return None  # a view or another use: not a plain tensor
            if owner.name == "ascend.matmul" and use.operand_number == 0:
                readers.append(owner)
            elif use.operand_number == len(owner.operands) - 1:
                writers.append(owner)
            else:
                return None
        if len(writers) != 1 or len(readers) != 1:
            return None
        writer, consumer = writers[0], readers[0]
        if writer.name == "ascend.matmul":
            producer = writer
        else:
            group = writer.parent
            if group is None or group.name != "scf.execute_region" \
                    or epilogue.EPILOGUE_ATTR not in group.attributes:
                return None
            mms = [o for o in nir.ops_named(group, "ascend.matmul")]
            if len(mms) != 1:
                return None
            producer = mms[0]
        if producer == consumer:
            return None
        return producer, consumer

    def chain_refusal(self, tensor: ir.Value, producer: ir.Operation,
                      consumer: ir.Operation) -> str | None:
        """Why the chain is not formed (None: it is)."""
        if not self.chains:
            return "chains=false"
        if nir.memref_element(tensor) != "f16":
            return f"the result is {nir.memref_element(tensor)}, the next matmul reads f16"
        body = [o.operation for o in nir.top_level(producer).parent.regions[0].blocks[0].operations]
        if body.index(nir.top_level(producer)) >= body.index(nir.top_level(consumer)):
            return "the consumer does not follow the producer"
        cap = self.target.capacity("l1")
        size = _bytes(tensor)
        for role, mm in (("producer", producer), ("consumer", consumer)):
            if role == "consumer":
                reader = self.consumer_tiling(consumer)
                if isinstance(reader, str):
                    return f"the consumer {reader}"
            need = self.l1_working_set(mm)
            if isinstance(need, str):
                return f"the {role}: {need}"
            if role == "consumer":
                need -= min(need, _bytes(mm.operands[0]))  # its A strip is the tensor itself
            if size + need > cap:
                return (f"its {size}-byte result does not fit L1 ({cap} bytes) next to the "
                        f"{role}'s working set ({need} bytes)")
        return None

    def consumer_tiling(self, mm: ir.Operation):
        """The consumer's tiling with the tensor as its resident A strip (one
        row of C tiles; `consumer_k` of npu.chain: npu-lower-matmul keeps
        its k), or why it has none."""
        shape = _shape(mm, self.target)
        try:
            choice = choose_tiling(shape, self.target, "os", m=shape.M, pipelined=True,
                                   resident_a=True, a_in_l1=True)
        except TilingError as e:
            return f"has no tiling with A as one row strip: {e}"
        if not choice.a_resident:
            return (f"cannot read it as a resident A strip with tiles {choice.tiles} (its "
                    f"C tiles must divide M x K and two B chunks fit beside it)")
        return choice

    def l1_working_set(self, mm: ir.Operation) -> int | str:
        """L1 bytes the matmul's own pipelined tiling (chosen with all of L1)
        holds: its A and B tiles over the whole reduction, (m + k) x N
        (the resident A strip and two half-reduction B chunks, or both
        operands streamed in two halves:
        `npu.costmodel.matmul.residency.resident_a_chunks`).
        Chaining must not shrink it: smaller B chunks pay the GM path's
        latency more often (BERT seq 128 ffn_in 125.9k -> 183.6k cycles when
        its tiling was squeezed beside the 768 KiB result) and a streamed A
        is re-read per column tile."""
        shape = _shape(mm, self.target)
        try:
            choice = choose_tiling(shape, self.target, "os", pipelined=True, resident_a=True)
        except TilingError as e:
            return str(e)
        return (choice.tiles.m + choice.tiles.k) * shape.N * shape.in_bytes


def _shape(mm: ir.Operation, target) -> MatmulShape:
    dims = matmul_dims(mm, target)
    return MatmulShape(dims.m, dims.n, dims.k, dims.batch,
                       out_bytes=nir.element_bytes(nir.memref_element(mm.operands[2])))


def _bytes(value: ir.Value) -> int:
    n = nir.element_bytes(nir.memref_element(value))
    for d in nir.memref_shape(value):
        n *= d
    return n


