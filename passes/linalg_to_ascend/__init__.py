"""`npu-linalg-to-ascend`: upstream `linalg` on tensors -> `ascend` on GM memrefs.

The module's one function is rewritten by the converter of this package
(`convert`, with `elementwise`, `matmul`, `reduction` for the op families,
`emitter` for the text it writes, `structure` for reading linalg ops, and
`linalg_eval`, the numpy evaluator that folds ops on constants and is the
oracle for linalg modules; see `convert` for the route and the layout choice): inputs, then outputs
(destination-passing), then host constants as arguments (`npu.input`,
`npu.output`, `npu.constant` argument attributes); temporaries are
`memref.alloc` in "gm"; reshapes are views.
"""

from __future__ import annotations

from mlir import ir

from npu.ir import functions
from npu.passes.base import Pass, PassError
from npu.passes.linalg_to_ascend.convert import Converter
from npu.passes.linalg_to_ascend.structure import UnsupportedOp


class LinalgToAscendPass(Pass):
    name = "npu-linalg-to-ascend"
    summary = "Convert linalg/tensor/arith/math on tensors to ascend ops on GM buffers"
    options = ()

    def run(self, module: ir.Operation) -> None:
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
