"""The decode context of a hivm instruction: a `DecodeContext` whose counts
come from the configuration word and the mask register (`hivm_decode.py`)."""

from __future__ import annotations

from mlir import ir

from npu.dialects import hivm
from npu.dialects.opspec import CMP_PREDICATES
from npu.simulator.decode_cache import _MISSING, RecordingReads
from npu.simulator.instruction import DecodeContext, OperandInfo
from npu.target import Target


class HivmDecodeContext(RecordingReads, DecodeContext):
    """A `DecodeContext` whose counts come from a configuration word and the
    mask register; operands are listed in the cce order of the unit. The
    reads that reach the op's attributes are recorded (`decode_cache`)."""

    def __init__(self, op: ir.Operation, where: str, target: Target, word: int | None,
                 mask: int | None, infos: list[OperandInfo]):
        self.op = op
        self.name = op.name
        self.cce_name = "cce." + op.name[len("hivm."):]
        self.where = where
        self.target = target
        self.operands = infos
        self.kind = hivm.CONFIG_KIND.get(op.name)
        self.fields = hivm.decode(self.kind, word) if self.kind else {}
        self.mask = mask

    def int(self, name: str, default: int | None = None) -> int:
        if name == "mask" and self.kind in hivm.VECTOR_KINDS:
            if self.mask is None:
                raise self.fail("runs with no lanes enabled: set the mask register "
                                "(hivm.set_vector_mask) first")
            return self.mask
        field = hivm.word_field(self.kind, name) if self.kind else name
        if field in self.fields:
            return self.fields[field]
        return self._recorded("int", name, default)

    def str(self, name: str, default: str | None = None) -> str:
        if name == "predicate" and self.kind == "compare":
            index = self.fields["predicate"]
            if index >= len(CMP_PREDICATES):
                raise self.fail(f"config field 'predicate' = {index} names no predicate")
            return CMP_PREDICATES[index]
        if name == "convert" and self.kind == "l0c_copy":
            index = self.fields["convert"]
            if index >= len(hivm.L0C_CONVERSIONS):
                raise self.fail(f"config field 'convert' = {index} names no conversion")
            return hivm.L0C_CONVERSIONS[index]
        return self._recorded("str", name, default)

    def bool(self, name: str, default: bool | None = None) -> bool:
        if name == "accumulate" and self.kind == "mad":
            return not self.fields["init"]
        if name in self.fields:
            return bool(self.fields[name])
        return self._recorded("bool", name, default)

    def float(self, name: str) -> float:
        return self._recorded("float", name, _MISSING)

    def ints(self, name: str) -> list[int]:
        return self._recorded("ints", name, _MISSING)
