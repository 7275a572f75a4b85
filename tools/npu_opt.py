"""`npu-opt`: run pass pipelines over ascend/cce/hivm IR, like `mlir-opt`.

Everything the user can get wrong (a flag, a pass, a pass option, a target
preset, the IR itself) ends in one located error line and a non-zero exit,
never a Python traceback, and never a partially written `-o` file. Command
line problems exit with 2, problems in the input with 1.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from dataclasses import dataclass

from npu import diagnostics
from npu.tools import opt_flags
from npu.tools.common import (ArgumentParser, CommandLineError, check_output_path, read_source,
                              report_internal_error, write_output_atomically)

SPLIT_MARKER = "// -----"
PROG = "npu-opt"

# mlir-opt accepts `-split-input-file` as well as `--split-input-file`; these
# are the single-letter options that must stay single-dash.
_SHORT_OPTIONS = ("-o", "-p", "-h")


@dataclass
class Chunk:
    text: str
    first_line: int


def split_input(text: str, split: bool) -> list[Chunk]:
    """The input, or its `// -----`-separated chunks, each knowing its first line."""
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

    lines = ["registered passes (use as --NAME or --NAME=\"opt=val ...\", "
             "or inside --pass-pipeline):"]
    for name, cls in sorted(registry().items()):
        lines.append(f"  --{name:<28} {cls.summary}")
        for opt in cls.options:
            kind = opt.type.__name__
            choices = f" {{{'|'.join(map(str, opt.choices))}}}" if opt.choices else ""
            if opt.range_text():
                choices += f" in {opt.range_text()}"
            lines.append(f"      {opt.name}=<{kind}>{choices}  {opt.help} "
                         f"(default: {opt.default if opt.default != '' else 'none'})")
    lines.append("")
    lines.append("Upstream MLIR passes (canonicalize, cse, loop-invariant-code-motion, "
                 "symbol-dce, ...) are accepted the same way, with their own options, "
                 "and can be mixed with the passes above in one pipeline.")
    lines.append("Options may be spelled with one or two dashes, as in mlir-opt.")
    return "\n".join(lines)


class _Parser(ArgumentParser):
    """The list of passes (which imports every pass) is built only for --help."""

    def format_help(self) -> str:
        if self.epilog is None:
            self.epilog = _pass_help()
        return super().format_help()


def make_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG, formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False,
        description="Run pass pipelines over ascend/cce/hivm IR (mlir-opt for the NPU).")
    p.add_argument("input", nargs="?", default="-", help="input file (default: stdin)")
    p.add_argument("-o", dest="output", default="-", help="output file (default: stdout)")
    p.add_argument("--pass-pipeline", "-p", dest="pipeline", default=None,
                   help="textual pipeline, e.g. 'builtin.module(npu-lower,canonicalize)'")
    p.add_argument("--split-input-file", action="store_true",
                   help="split the input on '// -----' and process each chunk on its own")
    p.add_argument("--verify-diagnostics", action="store_true",
                   help="check emitted diagnostics against expected-* comments")
    p.add_argument("--mlir-print-ir-after-all", action="store_true",
                   help="print the IR to stderr after every pass")
    p.add_argument("--mlir-print-ir-before-all", action="store_true",
                   help="print the IR to stderr before every pass")
    p.add_argument("--mlir-timing", action="store_true", help="print pass timings to stderr")
    p.add_argument("--mlir-print-op-generic", action="store_true",
                   help="print every op in the generic form")
    p.add_argument("--npu-import-onnx", action="store_true",
                   help="the input is an ONNX model: import it (torch-mlir) to linalg on tensors "
                   "first; pass flags then apply to that module")
    p.add_argument("--allow-unregistered-dialect", action="store_true",
                   help="accept ops of dialects that are not loaded")
    p.add_argument("--target", default=None,
                   help="target preset (default: ascend910); see npu.target.PRESETS")
    opt_flags.add_flags(p)
    return p


def normalize_argv(argv: list[str]) -> list[str]:
    """`-split-input-file` -> `--split-input-file` (mlir-opt spelling), keeping
    `-o FILE`, `-p PIPELINE`, `-h` and anything after `--` as they are."""
    out = []
    for i, arg in enumerate(argv):
        if arg == "--":
            return out + argv[i:]
        is_single_dash_long = (arg.startswith("-") and not arg.startswith("--") and len(arg) > 2
                               and arg.split("=", 1)[0] not in _SHORT_OPTIONS)
        out.append("-" + arg if is_single_dash_long else arg)
    return out


def pass_flags_to_pipeline(extra: list[str]) -> list[str]:
    """`--some-pass` / `--some-pass="a=1 b=2"` flags -> pipeline elements, in order."""
    if not extra:
        return []  # importing every pass only to list them costs most of a trivial run
    from npu.ir import make_context
    from npu.passes import registry
    from npu.pipeline import is_upstream_pass

    ours = registry()
    elements = []
    probe_ctx = None
    for arg in extra:
        if not arg.startswith("--"):
            raise CommandLineError(f"unexpected argument '{arg}' (only one input file is accepted)")
        name, has_options, options = arg[2:].partition("=")
        if name not in ours:
            probe_ctx = probe_ctx or make_context()
            if not name or not is_upstream_pass(name, probe_ctx):
                raise CommandLineError(f"unknown command line argument or pass '--{name}' "
                                       "(see --help)")
        elements.append(f"{name}{{{options}}}" if has_options and options else name)
    return elements


def check_pipeline(pipeline_text: str, target) -> list:
    """Parse the pipeline and build it once, so that a bad pass or option is
    reported before any input is read. Returns the parsed elements."""
    from npu.ir import make_context
    from npu.pipeline import PipelineError, build_pass_manager, parse_pipeline

    try:
        elements = parse_pipeline(pipeline_text)
        build_pass_manager(elements, make_context(), target)
    except PipelineError as e:
        raise CommandLineError(f"invalid pass pipeline: {e}") from None
    return elements


def process_chunk(chunk: Chunk, elements: list, args: argparse.Namespace, target,
                  filename: str, seen=None) -> tuple[bool, str]:
    """Parse, transform and print one chunk. Returns (ok, printed IR or "")."""
    from mlir import ir as mlir_ir

    from npu.ir import ParseError, make_context, parse_module
    from npu.passes.instrument import installed
    from npu.pipeline import PipelineError, build_pass_manager

    engine = diagnostics.DiagnosticEngine(display_name=filename)
    diagnostics.install(engine)
    ctx = make_context()
    if args.allow_unregistered_dialect:
        ctx.allow_unregistered_dialects = True
    ok = True
    output = ""
    try:
        module = parse_module(chunk.text, ctx, chunk.first_line)
        if elements:
            pm = build_pass_manager(elements, ctx, target, args.mlir_print_ir_before_all,
                                    args.mlir_print_ir_after_all, args.mlir_timing, seen,
                                    args.mlir_pass_statistics, args.mlir_print_debuginfo)
            try:
                with installed(seen) if seen is not None else contextlib.nullcontext():
                    pm.run(module.operation)
            except mlir_ir.MLIRError as e:
                for d in e.error_diagnostics:
                    engine.emit_mlir(d)
                if not engine.has_errors:
                    engine.emit("error", "pass pipeline failed")
                ok = False
            finally:
                sys.stderr.flush()
                del pm  # the timing report prints when the pass manager goes away
                _reports(args, seen)
        if ok:
            output = module.operation.get_asm(print_generic_op_form=args.mlir_print_op_generic,
                                              enable_debug_info=args.mlir_print_debuginfo)
            if args.mlir_print_debuginfo:
                output = opt_flags.named_locations(output, filename)
    except ParseError:
        ok = False
    except PipelineError as e:  # already validated; kept for safety
        engine.emit("error", str(e))
        ok = False

    if args.verify_diagnostics:
        expectations = diagnostics.parse_expectations(chunk.text, chunk.first_line)
        problems = diagnostics.check_expectations(expectations, engine.diagnostics, filename)
        for p in problems:
            print(p, file=sys.stderr)
        # Chunks that failed as expected print nothing; the others print their IR.
        return not problems, (output if ok and not engine.has_errors else "")
    engine.print()
    ok = ok and not engine.has_errors
    return ok, output if ok else ""


def _reports(args: argparse.Namespace, seen) -> None:
    """Our passes' timing (npu-lower's stages nested) and statistics, after
    the upstream pass manager's own reports."""
    from npu.passes.instrument import statistics_report, timing_report

    if seen is None or not seen.roots:
        return
    if args.mlir_timing:
        sys.stderr.write(timing_report(seen.roots))
    if args.mlir_pass_statistics:
        sys.stderr.write(statistics_report(seen.roots))
    seen.roots.clear()
    sys.stderr.flush()


class InputError(Exception):
    """A problem with the input file itself (exit 1, not a usage error)."""


def import_onnx_text(path: str) -> str:
    from npu.frontend.onnx_import import ImportError_, import_onnx

    if not os.path.exists(path):
        raise CommandLineError(f"cannot read '{path}': no such file")
    try:
        return import_onnx(path).mlir
    except ImportError_ as e:
        raise InputError(str(e)) from None


def run(argv: list[str]) -> int:
    from npu.target import UnknownTargetError, get_target

    parser = make_parser()
    args, extra = parser.parse_known_args(normalize_argv(argv))
    if args.version or args.show_dialects:
        sys.stdout.write(opt_flags.version_text() if args.version else opt_flags.show_dialects())
        return 0
    try:
        target = get_target(args.target)
    except UnknownTargetError as e:
        raise CommandLineError(str(e)) from None
    flag_elements = pass_flags_to_pipeline(extra)
    if args.pipeline is not None and flag_elements:
        raise CommandLineError("use either --pass-pipeline or individual pass flags, not both")
    pipeline_text = args.pipeline if args.pipeline is not None else ",".join(flag_elements)
    elements = check_pipeline(pipeline_text, target) if pipeline_text.strip() else []
    seen = opt_flags.instrumentation(args)
    if args.dump_pass_pipeline:
        sys.stderr.write(opt_flags.pipeline_text(elements, target))

    if args.npu_import_onnx:
        filename, text = args.input, import_onnx_text(args.input)
    else:
        filename, text = read_source(args.input)
    check_output_path(args.output)
    outputs, all_ok = [], True
    for chunk in split_input(text, args.split_input_file):
        ok, out = process_chunk(chunk, elements, args, target, filename, seen)
        all_ok &= ok
        outputs.append(out)
    joined = ("\n" + SPLIT_MARKER + "\n").join(o for o in outputs if o)
    if not all_ok:
        # Like mlir-opt, stdout still shows the chunks that succeeded; a file
        # named by -o is never written, not even partially.
        if args.output == "-" and joined:
            write_output_atomically("-", joined)
        return 1
    write_output_atomically(args.output, joined)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        return run(argv)
    except CommandLineError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except InputError as e:
        print(e, file=sys.stderr)
        return 1
    except OSError as e:  # e.g. a read-only output directory
        print(f"{PROG}: error: cannot write the output: {e.strerror}", file=sys.stderr)
        return 1
    except Exception as e:  # a bug in the compiler: one line unless asked for more
        return report_internal_error(PROG, "internal compiler error", e)


if __name__ == "__main__":
    sys.exit(main())
