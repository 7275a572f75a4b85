"""`npu-linalg-to-ascend`: upstream `linalg` on tensors -> `ascend` on GM memrefs.

The module's one function is rewritten by `npu.frontend.to_ascend` (see
there for the route and the layout choice): inputs, then outputs
(destination-passing), then host constants as arguments (`npu.input`,
`npu.output`, `npu.constant` argument attributes); temporaries are
`memref.alloc` in "gm"; reshapes are views.
"""

from __future__ import annotations

from mlir import ir

from npu.ir import functions
from npu.passes.base import Pass, PassError


class LinalgToAscendPass(Pass):
    name = "npu-linalg-to-ascend"
    summary = "Convert linalg/tensor/arith/math on tensors to ascend ops on GM buffers"
    options = ()

    def run(self, module: ir.Operation) -> None:
        from npu.frontend.structure import UnsupportedOp
        from npu.frontend.to_ascend import Converter

        funcs = functions(module)
        if len(funcs) != 1:
            raise PassError(f"{self.name}: expected one func.func, found {len(funcs)}", module)
        try:
            text = Converter(funcs[0]).convert()
        except UnsupportedOp as e:
            raise PassError(f"cannot convert '{e.op.name}' to ascend: {e.reason}", e.op) from None
        with module.context:
            converted = ir.Module.parse(text)
        body = module.regions[0].blocks[0]
        for op in list(body.operations):
            op.erase()
        with ir.InsertionPoint(body):
            for op in list(converted.body.operations):
                op.detach_from_parent()
                ir.InsertionPoint(body).insert(op)
