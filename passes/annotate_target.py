"""`npu-annotate-target`: record the target preset a module is compiled for.

Downstream tools (npu-run, a later invocation of npu-opt) can then read
`npu.target` from the module instead of being told again, and a module
compiled for one preset is not silently re-compiled for another: if the
module already records a different preset, the pass fails unless
`override=true`.
"""

from __future__ import annotations

from mlir import ir

from npu.passes.base import Option, Pass, PassError
from npu.target import PRESETS

TARGET_ATTR = "npu.target"


class AnnotateTargetPass(Pass):
    name = "npu-annotate-target"
    summary = "Record the target preset as the module attribute npu.target"
    options = (
        Option("preset", str, "", "preset to record instead of the run's --target",
               choices=tuple(PRESETS)),
        Option("override", bool, False,
               "replace an npu.target the module already has instead of failing"),
    )

    def run(self, module: ir.Operation) -> None:
        wanted = self.preset or self.target.name
        existing = module.attributes[TARGET_ATTR] if TARGET_ATTR in module.attributes else None
        if existing is not None:
            if not isinstance(existing, ir.StringAttr):
                raise PassError(f"'{TARGET_ATTR}' must be a string attribute, got {existing}", module)
            recorded = ir.StringAttr(existing).value
            if recorded != wanted:
                if not self.override:
                    raise PassError(
                        f"module is annotated for target '{recorded}' but this pipeline targets "
                        f"'{wanted}' (use override=true to replace it)", module)
                self.remark(module, f"target '{recorded}' replaced by '{wanted}'")
        with module.context:
            module.attributes[TARGET_ATTR] = ir.StringAttr.get(wanted)
