"""Conv chains of `npu-fuse` (`conv-chains=true`): a conv's result (or its
epilogue's) read as the input map of a later 1x1 stride-1 conv stays on
chip, band by band: the producer copies each band's result UB -> L1 into
the consumer's map of that band instead of the consumer reading it from GM
(ResNet's conv3 -> next block's conv1), and stores it to GM only when
another op reads it (the residual). `npu.conv_chain` marks both convs
(and, when no other op reads the map, its GM alloc);
`npu.passes.lower_conv.conv_chain` has the contract and the plan: the
consumer tiles with the producer's bands and both kernels fit on chip
together. npu-lower-conv emits the pair interleaved at the consumer, so no
op between the two may touch the map or what the producer reads or writes.
One core only (npu-lower sets it so): split over cores, each conv's rows
are cut by its own grid.

A conv takes part in one chain: 1x1 producers are paired first (their
chains save the most: `bench/conv_chains.py`)."""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.dialects.ascend_conv import geometry
from npu.passes.lower_conv import LowerConv
from npu.passes.lower_conv.conv_chain import CONV_CHAIN_ATTR, pair_of, plan

from .scan import scan_top_level


class ConvChains:
    """Mixed into `FusePass` (its target, options and `remark`)."""

    def chain_convs(self, func: ir.Operation) -> dict[ir.Operation, str]:
        """Marks each chained pair; returns a remark per producer conv."""
        ops, index, users, touches = scan_top_level(func)
        body = func.regions[0].blocks[0]
        found = []
        for alloc in [o.operation for o in body.operations if o.operation.name == "memref.alloc"]:
            pair = pair_of(alloc.results[0])
            if pair is not None:
                found.append((alloc, *pair))
        # 1x1 producers first, then program order
        found.sort(key=lambda f: (geometry(f[1]).kh * geometry(f[1]).kw > 1,
                                  index[nir.top_level(f[1])]))
        lower = LowerConv(self.target)
        formed = 0
        remarks: dict[ir.Operation, str] = {}
        for alloc, producer, consumer, others in found:
            why = self.conv_chain_refusal(producer, consumer, alloc.results[0], ops, index,
                                          touches)
            decided = plan(lower, producer, consumer, bool(others)) if why is None else why
            if isinstance(decided, str):
                remarks[producer] = f"conv chain not formed: {decided}"
                continue
            rows, ub = decided
            gm = int(bool(others))
            formed += 1
            with alloc.context:
                for op, role in ((producer, "producer"), (consumer, "consumer")):
                    op.attributes[CONV_CHAIN_ATTR] = nir.dict_attr_of(
                        {"role": role, "id": formed, "rows": rows, "ub": ub, "gm": gm})
                if not gm:
                    alloc.attributes[CONV_CHAIN_ATTR] = nir.dict_attr_of({"gm": 0})
            size = nir.element_bytes(nir.memref_element(alloc.results[0]))
            for d in nir.memref_shape(alloc.results[0]):
                size *= d
            remarks[producer] = (
                f"conv chain: its {size}-byte result stays on chip, bands of {rows} rows copied "
                f"UB -> L1 as the input map of the next 1x1 conv ("
                + (f"still stored to GM for its {len(others)} other reader(s)" if gm
                   else "never stored to GM")
                + f"; the producer takes {ub / 10:g}% of UB, the consumer the rest)")
        return remarks

    def conv_chain_refusal(self, producer, consumer, tensor, ops, index,
                           touches) -> str | None:
        if not self.conv_chains:
            return ("conv-chains=false (npu-lower sets it on many cores: each conv's grid "
                    "cuts its own rows)")
        if CONV_CHAIN_ATTR in producer.attributes or CONV_CHAIN_ATTR in consumer.attributes:
            return "a conv of the pair is in another conv chain"
        p, c = index.get(nir.top_level(producer)), index.get(nir.top_level(consumer))
        if p is None or c is None or p >= c:
            return "the consumer does not follow the producer"
        reads, writes = touches.get(p, (set(), set()))
        for k in range(p + 1, c):
            if k not in touches:
                continue
            r, w = touches[k]
            if tensor in r | w or w & (reads | writes) or r & writes:
                return (f"'{ops[k].name}' between the two convs touches the map or what the "
                        "producer reads or writes (the pair is emitted at the consumer)")
        return None
