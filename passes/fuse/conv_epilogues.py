"""Conv epilogue groups of `npu-fuse`: each conv (NC1HWC0) with the chain of
elementwise ops that consume its result, one after the other, as the
conv's drain (`npu.costmodel.conv.epilogue`)."""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.costmodel.conv import epilogue
from npu.dialects.ascend_conv import FORMS_5HD, layout

from npu.passes.lower_conv import epilogue_tiles

from .scan import scan_top_level
from .stem_pool import StemPoolJoin


class ConvEpilogueGrouping(StemPoolJoin):
    """Mixed into `FusePass` (uses its `remark`)."""

    def group_conv_epilogues(self, func: ir.Operation) -> None:
        """Join each conv with the chain of its result's consumers: each
        member the only reader of the previous one's result (an allocation
        of this function, so nothing else sees it), taking full tensors of
        the result's shape or, binary ones, a per-channel operand
        [1, C1, 1, 1, 16] (`epilogue.joins`). The group goes where its last member is, so a
        residual made after the conv (ResNet-50's downsample) is ready; the
        ops it passes must commute with them."""
        ops, index, users, touches = scan_top_level(func)
        for conv in [op for op in ops if op.name == "ascend.conv2d"]:
            if layout(conv) not in FORMS_5HD:
                continue
            out = conv.operands[-1]
            shape = nir.memref_shape(out)
            members: list[ir.Operation] = []
            root = nir.view_root(out)
            while _allocated(root):
                readers = users.get(root, set()) - {conv} - set(members)
                if len(readers) != 1:
                    break
                (op,) = readers
                produced = (members[-1] if members else conv).operands[-1]
                if op.parent != conv.parent or op not in index or not epilogue.joins(op, shape) \
                        or nir.view_root(op.operands[-1]) == root \
                        or not any(v == produced for v in op.operands[:-1]):
                    break  # (the tile stands for the very value the previous member made)
                members.append(op)
                root = nir.view_root(op.operands[-1])
            copy = self._f16_copy(conv, members, users, index, shape)
            if copy is not None:
                members.append(copy)
            while members and not self._movable(conv, members, ops, index, touches):
                members.pop()
            rounds = self.epilogue_f16 and not self.epilogue_bias_f32
            cut = len(members)
            while members and not epilogue_tiles(conv, members, self.target, rounds,
                                                 copy is not None and members[-1] == copy):
                members.pop()
            if cut > len(members) and self.remarks:
                self.remark(conv, f"conv epilogue cut after {len(members)} of {cut} ops: with "
                                  "more, no tiling of the conv fits UB")
            dual = copy is not None and bool(members) and members[-1] == copy
            if copy is not None and not dual and self.remarks:
                self.remark(copy, "f16 copy left its own op: the conv's drain cannot take it "
                                  "(an op between reads its input, or the conv does not tile)")
            pool = self.stem_pool(conv, members, users) if rounds and not dual else None
            if pool is not None and self._movable(conv, members + [pool], ops, index, touches):
                members.append(pool)  # (stem_pool.py)
            if members:
                self._form_conv_group(conv, members, dual)

    def _f16_copy(self, conv, members, users, index, shape) -> ir.Operation | None:
        """The f16 copy (`epilogue.f16_copy`) of the group's f32 result (the
        conv's, or its last member's) when other ops read that result too
        (so it is stored as well: ResNet's residual sum and ReLU, which the
        next block's convs read in f16 and its residual Add in f32), for the
        drain to make and store beside it (`conv-f16-copies`); the cube's
        convs only (a depthwise one may run on the vector unit)."""
        if not self.conv_f16_copies or layout(conv) != "nc1hwc0":
            return None
        out = (members[-1] if members else conv).operands[-1]
        readers = users.get(nir.view_root(out), set()) - {conv} - set(members)
        copies = [op for op in readers if epilogue.f16_copy(op, out) and op.parent == conv.parent
                  and op in index and epilogue.joins(op, shape)]
        if len(copies) != 1 or len(readers) < 2:
            return None
        return copies[0]

    @staticmethod
    def _movable(conv, members, ops, index, touches) -> bool:
        """The group goes where its last member is: each op in between must
        commute with the group's ops it passes (those before it)."""
        def touched(op):
            return touches.get(index[op], (set(), set()))

        for k in range(index[conv] + 1, index[members[-1]]):
            if ops[k] in members or k not in touches:
                continue
            passed = [op for op in [conv] + members if index[op] < k]
            reads = set().union(*(touched(op)[0] for op in passed))
            writes = set().union(*(touched(op)[1] for op in passed))
            r, w = touches[k]
            if w & (reads | writes) or r & writes:
                return False
        return True

    def _form_conv_group(self, conv: ir.Operation, members: list[ir.Operation],
                         dual: bool = False) -> None:
        """`dual`: the last member is an f16 copy of a value the group stores too."""
        made = [conv.operands[-1]] + [m.operands[-1] for m in members[:-1]]
        internal = [nir.view_root(v) for v in (made[:-1] if dual else made)]
        location = ir.Location.fused([conv.location] + [m.location for m in members],
                                     context=conv.context)
        last = members[-1]
        figures: dict[str, int | str] = {"members": len(members)}
        if dual:
            figures[epilogue.F16_COPY] = 1
        elif self.epilogue_f16 and not self.epilogue_bias_f32 and \
                epilogue.leading_cast(members, conv.operands[-1]) is not None:
            figures["compute"] = "f16"  # the drain rounds; the bias adds in f16
        nir.form_group_region(epilogue.CONV_EPILOGUE_ATTR, figures, location,
                              last, internal, [conv] + members)
        if self.remarks:
            names = ", ".join(f"'{m.name}'" for m in members)
            stored = " (the f32 result and its f16 copy both stored)" if dual else ""
            self.remark(conv, f"conv epilogue: {names} on each drained tile{stored}; "
                              f"{len(internal)} tensor(s) never reach GM")


def _allocated(root: ir.Value) -> bool:
    owner = root.owner
    return not isinstance(owner, ir.Block) and owner.name == "memref.alloc"
