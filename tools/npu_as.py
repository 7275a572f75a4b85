"""`npu-as`: assemble a hivm kernel into its binary form, or take one apart.

    npu-as prog.mlir -o prog.npub        assemble (ascend or cce input is lowered
                                         first: npu-lower / npu-lower-cce-to-hivm)
    npu-as prog.mlir --stats             instructions and code size, no output
    npu-as -d prog.npub [-o prog.mlir]   disassemble to hivm text
    npu-as --listing prog.npub           offsets, raw bytes, decoded config words

The encoding is documented in dialects/README.md ("Binary form"). A corrupt
binary is rejected with the byte offset of the bad instruction; errors exit 1,
usage problems 2; no output file is written on failure.
"""

from __future__ import annotations

import argparse
import json
import sys

from npu import diagnostics
from npu.tools.common import (report_internal_error, usage_error, write_bytes_atomically,
                              write_output_atomically)

PROG = "npu-as"


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", help="MLIR file to assemble, or a binary with -d/--listing")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("-d", "--disassemble", action="store_true", help="binary -> hivm text")
    mode.add_argument("--listing", action="store_true", help="binary -> annotated listing")
    mode.add_argument("--stats", action="store_true",
                      help="print instructions and code size as JSON instead of writing output")
    p.add_argument("-o", "--output", default=None, help="output file (text modes: default stdout)")
    p.add_argument("--target", default=None, help="target preset for lowering (default: ascend910)")
    return p


def read_bytes(path: str, parser: argparse.ArgumentParser) -> bytes:
    try:
        if path == "-":
            return sys.stdin.buffer.read()
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        usage_error(parser, f"cannot read '{path}': {e.strerror}")


def to_hivm(module, target, filename: str) -> None:
    """Lower ascend or cce input to hivm (raises PipelineError on failure)."""
    from npu import ir as npu_ir
    from npu.pipeline import run_pipeline

    if npu_ir.ops_in_dialect(module, "ascend"):
        run_pipeline(module, "npu-lower", target)
    elif npu_ir.ops_in_dialect(module, "cce"):
        run_pipeline(module, "npu-lower-cce-to-hivm", target)


def assemble(args, parser) -> int:
    from npu.hivm.binary import EncodeError, encode
    from npu.ir import ParseError, make_context, parse_module
    from npu.pipeline import PipelineError
    from npu.target import UnknownTargetError, get_target

    data = read_bytes(args.input, parser)
    filename = "<stdin>" if args.input == "-" else args.input
    try:
        text = data.decode()
    except UnicodeDecodeError:
        usage_error(parser, f"'{args.input}' is not MLIR text (disassemble a binary with -d)")
    try:
        target = get_target(args.target)
    except UnknownTargetError as e:
        usage_error(parser, str(e))
    if not args.stats and not args.output:
        usage_error(parser, "assembling needs -o FILE (or --stats)")
    engine = diagnostics.DiagnosticEngine(display_name=filename)
    diagnostics.install(engine)
    try:
        module = parse_module(text, make_context())
        to_hivm(module, target, filename)
    except ParseError:
        engine.print()
        return 1
    except PipelineError as e:
        print(str(e), file=sys.stderr)
        return 1
    try:
        binary = encode(module)
    except EncodeError as e:
        diagnostics.emit_error(str(e), e.op.location)
        engine.print()
        return 1
    if args.stats:
        from npu.hivm.disasm import decode_entries
        from npu.ir import make_context as fresh

        _, entries = decode_entries(binary, filename, fresh())
        print(json.dumps({"instructions": len(entries), "bytes": len(binary)}))
        return 0
    write_bytes_atomically(args.output, binary)
    return 0


def take_apart(args, parser) -> int:
    from npu.hivm.binary import BinaryError
    from npu.hivm.disasm import decode, listing
    from npu.ir import make_context

    data = read_bytes(args.input, parser)
    filename = "<stdin>" if args.input == "-" else args.input
    try:
        if args.listing:
            text = listing(data, filename, make_context())
        else:
            text = str(decode(data, filename, make_context()))
    except BinaryError as e:
        print(f"{filename}: error: corrupt binary {e}", file=sys.stderr)
        return 1
    write_output_atomically(args.output or "-", text)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    try:
        if args.disassemble or args.listing:
            return take_apart(args, parser)
        return assemble(args, parser)
    except BrokenPipeError:
        return 1
    except Exception as e:  # a bug in the tool: never a traceback by default
        return report_internal_error(PROG, "internal error", e)


if __name__ == "__main__":
    sys.exit(main())
