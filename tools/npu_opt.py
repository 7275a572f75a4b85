"""`npu-opt`: run pass pipelines over ascend/cce/hivm IR, like `mlir-opt`."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from dataclasses import dataclass

from npu import diagnostics
from npu.tools.common import read_input, usage_error, write_output_atomically

SPLIT_MARKER = "// -----"


@dataclass
class Chunk:
    text: str
    first_line: int


def split_input(text: str, split: bool) -> list[Chunk]:
    if not split:
        return [Chunk(text, 1)]
    chunks, current, start = [], [], 1
    for lineno, line in enumerate(text.splitlines(keepends=True), start=1):
        if line.strip() == SPLIT_MARKER:
            chunks.append(Chunk("".join(current), start))
            current, start = [], lineno + 1
        else:
            current.append(line)
    chunks.append(Chunk("".join(current), start))
    return chunks


def _pass_help() -> str:
    from npu.passes import registry

    lines = ["registered passes (use as --NAME[=\"opt=val ...\"] or inside --pass-pipeline):"]
    for name, cls in sorted(registry().items()):
        lines.append(f"  --{name:<28} {cls.summary}")
        for opt in cls.options:
            kind = opt.type.__name__
            choices = f" {{{'|'.join(map(str, opt.choices))}}}" if opt.choices else ""
            lines.append(f"      {opt.name}=<{kind}>{choices:<14} {opt.help} (default: {opt.default})")
    lines.append("upstream MLIR passes (canonicalize, cse, loop-invariant-code-motion, ...) "
                 "may be mixed in by name.")
    return "\n".join(lines)


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="npu-opt", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run pass pipelines over ascend/cce/hivm IR (mlir-opt for the NPU).",
        epilog=_pass_help())
    p.add_argument("input", nargs="?", default="-", help="input file (default: stdin)")
    p.add_argument("-o", dest="output", default="-", help="output file (default: stdout)")
    p.add_argument("--pass-pipeline", "-p", dest="pipeline", default=None,
                   help="textual pipeline, e.g. 'builtin.module(npu-lower,canonicalize)'")
    p.add_argument("--split-input-file", action="store_true",
                   help="split the input on '// -----' and process each chunk on its own")
    p.add_argument("--verify-diagnostics", action="store_true",
                   help="check emitted diagnostics against expected-* comments")
    p.add_argument("--mlir-print-ir-after-all", action="store_true")
    p.add_argument("--mlir-print-ir-before-all", action="store_true")
    p.add_argument("--mlir-timing", action="store_true", help="print pass timings to stderr")
    p.add_argument("--target", default=None, help="target preset (default: ascend910)")
    return p


def parse_pass_flags(extra: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """`--some-pass` / `--some-pass="a=1 b=2"` flags -> pipeline element texts, in order."""
    from mlir import ir as mlir_ir

    from npu.passes import registry
    from npu.pipeline import is_upstream_pass

    ours = registry()
    elements = []
    probe_ctx = None
    for arg in extra:
        if not arg.startswith("--"):
            usage_error(parser, f"unexpected argument '{arg}'")
        name, _, options = arg[2:].partition("=")
        if name not in ours:
            probe_ctx = probe_ctx or mlir_ir.Context()
            if not is_upstream_pass(name + (f"{{{options}}}" if options else ""), probe_ctx):
                usage_error(parser, f"unknown option or pass '--{name}'")
        elements.append(f"{name}{{{options}}}" if options else name)
    return elements


def process_chunk(chunk: Chunk, pipeline_text: str, args, target, filename: str) -> tuple[bool, str]:
    """Parse, run the pipeline, and print one chunk. Returns (ok, output)."""
    from npu.ir import ParseError, make_context, parse_module
    from npu.pipeline import PipelineError, build_pass_manager, parse_pipeline
    from mlir import ir as mlir_ir

    engine = diagnostics.DiagnosticEngine(display_name=filename)
    diagnostics.install(engine)
    ctx = make_context()
    ok = True
    output = ""
    try:
        module = parse_module(chunk.text, ctx, chunk.first_line)
        if pipeline_text:
            pm = build_pass_manager(parse_pipeline(pipeline_text), ctx, target,
                                    args.mlir_print_ir_before_all, args.mlir_print_ir_after_all,
                                    args.mlir_timing)
            try:
                pm.run(module.operation)
            except mlir_ir.MLIRError as e:
                for d in e.error_diagnostics:
                    engine.emit_mlir(d)
                if not engine.has_errors:
                    engine.emit("error", "pass pipeline failed")
                ok = False
            finally:
                del pm  # timing reports print when the pass manager goes away
        if ok:
            output = str(module)
    except ParseError:
        ok = False
    except PipelineError as e:
        engine.emit("error", str(e))
        ok = False

    if args.verify_diagnostics:
        expectations = diagnostics.parse_expectations(chunk.text, chunk.first_line)
        problems = diagnostics.check_expectations(expectations, engine.diagnostics, filename)
        for p in problems:
            print(p, file=sys.stderr)
        return not problems, output
    engine.print()
    return ok and not engine.has_errors, output


def main(argv: list[str] | None = None) -> int:
    from npu.target import UnknownTargetError, get_target

    parser = make_parser()
    args, extra = parser.parse_known_args(argv)
    try:
        target = get_target(args.target)
    except UnknownTargetError as e:
        usage_error(parser, str(e))
    flag_elements = parse_pass_flags(extra, parser)
    if args.pipeline and flag_elements:
        usage_error(parser, "use either --pass-pipeline or individual pass flags, not both")
    pipeline_text = args.pipeline or ",".join(flag_elements)

    filename, text = read_input(args.input, parser)
    outputs, all_ok = [], True
    try:
        for chunk in split_input(text, args.split_input_file):
            ok, out = process_chunk(chunk, pipeline_text, args, target, filename)
            all_ok &= ok
            outputs.append(out)
    except Exception as e:  # a bug in the compiler, never a traceback by default
        if os.environ.get("NPU_DEBUG"):
            traceback.print_exc()
        print(f"{filename}: error: internal compiler error: {type(e).__name__}: {e} "
              "(set NPU_DEBUG=1 for a traceback)", file=sys.stderr)
        return 1
    joined = ("\n" + SPLIT_MARKER + "\n").join(o for o in outputs if o)
    if args.verify_diagnostics and args.output == "-":
        return 0 if all_ok else 1
    if not all_ok:
        # Like mlir-opt, stdout still shows the chunks that succeeded; a file
        # named by -o is never written partially.
        if args.output == "-" and joined:
            write_output_atomically("-", joined)
        return 1
    write_output_atomically(args.output, joined)
    return 0


if __name__ == "__main__":
    sys.exit(main())
