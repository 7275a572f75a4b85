"""Write corrupt copies of a hivm binary: <out>.opcode (the first
hivm.copy_gm_to_ub's opcode replaced), <out>.register (its first operand
register far out of range), <out>.truncated (the last 3 bytes cut off),
<out>.word (bit 12 set in the constant that copy uses as its word: well
formed as a binary, rejected by the hivm verifier)."""

import struct
import sys

from npu.hivm.disasm import decode_entries
from npu.ir import make_context

src, out = sys.argv[1], sys.argv[2]
data = bytearray(open(src, "rb").read())
_, entries = decode_entries(bytes(data), src, make_context())
at = next(off for off, _, _, op in entries if op is not None and op.name == "hivm.copy_gm_to_ub")
bad = bytearray(data)
bad[at:at + 2] = struct.pack("<H", 0xEE)
open(out + ".opcode", "wb").write(bad)
bad = bytearray(data)
bad[at + 5:at + 7] = struct.pack("<H", 0x7FFF)  # header (4 bytes), count (1), first register
open(out + ".register", "wb").write(bad)
open(out + ".truncated", "wb").write(data[:-3])
word = next(op.operands[2].owner for _, _, _, op in entries
            if op is not None and op.name == "hivm.copy_gm_to_ub")
at = next(off for off, _, _, op in entries if op is not None and op == word.operation)
bad = bytearray(data)
bad[at + 6] |= 0x10  # header (4 bytes), type (1), value byte 0; byte 1 holds bits 8-15
open(out + ".word", "wb").write(bad)
