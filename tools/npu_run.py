"""`npu-run`: compile (if needed), simulate, check and report one kernel.

    npu-run prog.mlir [--entry NAME] [--target PRESET] [--seed N | --inputs in.npz]
                      [--check] [--json] [--trace t.json] [--html t.html] [--csv DIR]
                      [--serialize] [--no-numerics] [--tuning-record record.json] [--cores N]
                      [-o out.npz]

A module with `ascend` ops is compiled through the default pipeline
(`npu-lower`, to `hivm`; `--emit cce` stops at `cce`) first; a `cce` module
is simulated as it is, or lowered to `hivm` with `--emit hivm`; `--check` compares every argument's final value with the
numpy reference evaluation of the ORIGINAL (ascend-level) program. Exit code
1 on a fault, a failed check or bad input; 2 on bad usage (options, the
pipeline, output paths: all checked before anything is compiled or run).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time

import numpy as np

from npu import diagnostics
from npu.tools.common import (ArgumentParser, CommandLineError, MergeShapes, check_output_path,
                              read_input, report_internal_error, usage_error,
                              write_output_atomically)
from npu.simulator.run_check import compare, reference_outputs, tolerances_for
from npu.simulator.run_inputs import (RunError, bind_to_lowered, check_entry_arguments, load_inputs,
                                  random_inputs)

DEFAULT_PIPELINE = "npu-lower"


def make_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="npu-run", description=__doc__, allow_abbrev=False,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", help="ONNX model (.onnx), MLIR file (linalg on tensors, ascend-, "
                   "cce- or hivm-level) or a hivm binary (npu-as), '-' for stdin")
    p.add_argument("--entry", default=None, help="function to run (default: the only one)")
    p.add_argument("--target", default=None, help="target preset (default: ascend910)")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--seed", type=_seed, default=None,
                     help="random inputs from this seed, 0 <= N < 2**64 (default 0)")
    src.add_argument("--inputs", default=None, help=".npz (np.savez) with one array per argument "
                     "(keys arg0, arg1, ... or in argument order; for a model: its input names); "
                     "a bare .npy, object arrays and arrays matching no input are refused")
    p.add_argument("--check", action="store_true",
                   help="compare every argument with the numpy reference of the original program "
                   "(a model: its outputs with onnxruntime, or with numpy for a linalg module)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--trace", default=None, help="write a Chrome/Perfetto trace to this file")
    p.add_argument("--html", default=None, help="write a self-contained HTML page with a per-pipe "
                   "timeline and utilisation chart (inline SVG) to this file")
    p.add_argument("--csv", default=None, metavar="DIR",
                   help="write msprof-style CSVs (PipeUtilization.csv, instr_types.csv) into DIR "
                   "(created if missing)")
    p.add_argument("--serialize", action="store_true",
                   help="every instruction waits for all earlier ones (code without sync)")
    p.add_argument("--no-numerics", dest="numerics", action="store_false",
                   help="timing only: skip the arithmetic (addresses, checks and cycles as in a "
                   "full run; the outputs are not computed)")
    p.add_argument("--no-strict", dest="strict", action="store_false",
                   help="report races and uninitialised reads as hazards instead of failing")
    p.add_argument("--pipeline", default=DEFAULT_PIPELINE,
                   help=f"pipeline for ascend-level input (default: {DEFAULT_PIPELINE})")
    p.add_argument("--tuning-record", default=None,
                   help="per-op options chosen by npu-tune (JSON), passed to npu-lower")
    p.add_argument("--cores", type=int, default=None,
                   help="AI cores: a model or an ascend program is split over up to this "
                   "many (npu-lower cores=N; 1: one core; 0: all of the target's); a compiled "
                   "kernel must have been split for exactly this many")
    p.add_argument("--emit", choices=("cce", "hivm"), default=None,
                   help="the level to simulate (default: hivm for ascend input, else the input's)")
    p.add_argument("--input-shape", dest="input_shape", action=MergeShapes, default=None,
                   metavar="NAME=DIMS", help="ONNX only: pin a dynamic input's shape, e.g. "
                   "input_ids=1x128 (repeatable, or comma-separated)")
    p.add_argument("-o", "--output", default=None, help="save the final arguments to this .npz")
    return p


def _seed(text: str) -> int:
    """numpy's generators take seeds in [0, 2**64): say so up front."""
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got '{text}'") from None
    if not 0 <= value < 2**64:
        raise argparse.ArgumentTypeError(f"must be in [0, 2**64), got {value}")
    return value


def with_lower_option(pipeline: str, option: str, flag: str) -> str:
    """`pipeline` with `option` (`key=value`) added to its npu-lower; `flag`
    names the command-line option that asked for it."""
    from npu.pipeline import PipelineError, with_lower_option as added

    try:
        return added(pipeline, option)
    except PipelineError as e:
        raise CommandLineError(f"{flag} {e}") from None


def check_command_line(args) -> tuple:
    """Everything about the command line that can be wrong, before any work:
    the target, the pipeline and every output path. Returns (target, pipeline)."""
    from npu.ir import make_context
    from npu.pipeline import PipelineError, build_pass_manager, parse_pipeline
    from npu.target import UnknownTargetError, get_target

    try:
        target = get_target(args.target)
    except UnknownTargetError as e:
        raise CommandLineError(str(e)) from None
    try:
        elements = parse_pipeline(args.pipeline)
        build_pass_manager(elements, make_context(), target)
        effective = args.pipeline
        if args.tuning_record:
            effective = with_lower_option(effective, f'tuning-record="{args.tuning_record}"',
                                          "--tuning-record")
        if args.cores is not None and any(e.name == "npu-lower" for e in elements):
            # npu-lower's options as it will run: one that does not apply on
            # that many cores is refused here, before any work
            effective = with_lower_option(effective, f"cores={args.cores}", "--cores")
            build_pass_manager(parse_pipeline(effective), make_context(), target)
    except PipelineError as e:
        raise CommandLineError(f"invalid pass pipeline: {e}") from None
    for path in (args.trace, args.output, args.html):
        if path is not None:
            check_output_path(path)
    if args.csv is not None:
        if os.path.exists(args.csv) and not os.path.isdir(args.csv):
            raise CommandLineError(f"cannot write CSVs into '{args.csv}': not a directory")
        check_output_path(os.path.join(args.csv, "PipeUtilization.csv")
                          if os.path.isdir(args.csv) else args.csv)
    return target, elements


def run(args, filename: str, text: str) -> int:
    import numpy as np

    from npu import ir as npu_ir
    from npu.ir import ParseError, make_context, parse_module
    from npu.simulator import SimulationError, simulate
    from npu.simulator.core import find_entry

    t_start = time.perf_counter()
    target, _ = check_command_line(args)
    engine = diagnostics.DiagnosticEngine(display_name=filename)
    diagnostics.install(engine)
    ctx = make_context()
    try:
        module = parse_module(text, ctx)
    except ParseError:
        engine.print()
        return 1
    try:
        func_op = find_entry(module, args.entry)
    except SimulationError as e:
        raise RunError(str(e)) from None
    entry = npu_ir.symbol_name(func_op)
    check_entry_arguments(func_op)
    # Only the entry runs, so only it is compiled: another function of the
    # file (one that cannot be a kernel, say) must not stop it.
    for other in npu_ir.functions(module):
        if other != func_op.operation:
            other.erase()
    if args.inputs:
        inputs = load_inputs(args.inputs, func_op, filename)
    else:
        inputs = random_inputs(func_op, args.seed if args.seed is not None else 0)

    original = None
    compiled = bool(npu_ir.ops_in_dialect(module, "ascend"))
    if compiled:
        original = parse_module(text, ctx)  # the reference runs on the program as written
        pipeline = args.pipeline
        if pipeline == DEFAULT_PIPELINE and args.emit == "cce":
            pipeline = f"{DEFAULT_PIPELINE}{{emit=cce}}"
        if args.tuning_record:
            pipeline = with_lower_option(pipeline, f'tuning-record="{args.tuning_record}"',
                                         "--tuning-record")
        if args.cores is not None:
            pipeline = with_lower_option(pipeline, f"cores={args.cores}", "--cores")
        compile_module(module, pipeline, target, filename)
        func_op = find_entry(module, entry)
    if args.emit == "hivm" and npu_ir.ops_in_dialect(module, "cce"):
        compile_module(module, "npu-lower-cce-to-hivm", target, filename)
    elif args.emit == "cce" and npu_ir.ops_in_dialect(module, "hivm"):
        raise RunError(f"{filename}: error: --emit cce: the program is already at the hivm "
                        "level")
    if not compiled and args.check:
        raise RunError(f"{filename}: error: --check needs an ascend-level program: the numpy "
                        "reference (npu.reference) evaluates ascend ops, and this module has none")

    for d in engine:  # as npu.compile passes on for a model: its warnings, the remarks
        if diagnostics.shown_by_compile(d):  # an option asked for, npu-lower's own
            print(d.format(), file=sys.stderr)
    lowered_inputs, where = inputs, None
    if compiled:
        lowered_inputs, where = bind_to_lowered(find_entry(original, entry), func_op, inputs)
    result = None
    try:
        result = simulate(module, lowered_inputs, entry=entry, target=target, strict=args.strict,
                          serialize=args.serialize, numerics=args.numerics,
                          cores=None if compiled else args.cores)
    except SimulationError as e:
        if args.json:
            print(json.dumps({"error": str(e), "kind": e.kind}, indent=2))
        print(str(e), file=sys.stderr)
        return 1
    if where is not None:  # outputs by the program's own arguments
        result.outputs = [result.outputs[j] if j is not None else inputs[i] for i, j in enumerate(where)]
    report = dict(result.report)
    report["compiled"] = compiled
    report["level"] = "hivm" if npu_ir.ops_in_dialect(module, "hivm") else "cce"
    status = 0 if not result.hazards else 1
    if args.check:
        with np.errstate(all="ignore"):  # inf and NaN are results, as on the hardware
            expected = reference_outputs(original, entry, inputs, filename)
            check = compare(result.outputs, expected, *tolerances_for(module))
        report["check"] = check.as_dict()
        if not check.passed:
            print(f"{filename}: error: check failed: {check.failure}", file=sys.stderr)
            status = 1
    else:
        report["check"] = None
    write_outputs(args, result, report)
    report["wall_seconds"] = round(time.perf_counter() - t_start, 4)
    report["simulate_seconds"] = round(result.wall_seconds, 4)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        from npu.simulator.report import format_text
        print(format_text(report))
    for h in result.hazards:
        print(f"{h['location']}: error: {h['kind']}: {h['message']}", file=sys.stderr)
    return status


def write_outputs(args, result, report: dict) -> None:
    """The files asked for, each whole or not at all (paths checked up front)."""
    if args.trace:
        write_output_atomically(args.trace, json.dumps(result.chrome_trace()))
    if args.output:
        buffer = io.BytesIO()
        np.savez(buffer, **{f"arg{i}": a for i, a in enumerate(result.outputs)})
        write_output_atomically(args.output, buffer.getvalue())
    if args.csv:
        from npu.simulator import profile

        os.makedirs(args.csv, exist_ok=True)
        write_output_atomically(os.path.join(args.csv, profile.PIPE_UTILIZATION_CSV),
                                profile.pipe_utilization_csv(report, result.target))
        write_output_atomically(os.path.join(args.csv, profile.INSTR_TYPES_CSV),
                                profile.instruction_types_csv(result.trace_entries, result.timeline,
                                                              result.target))
    if args.html:
        from npu.simulator.html_report import html_report

        write_output_atomically(args.html, html_report(result, report))


def compile_module(module, pipeline: str, target, filename: str) -> None:
    from npu.passes import registry
    from npu.pipeline import PipelineError, parse_pipeline, run_pipeline

    known = registry()
    for element in parse_pipeline(pipeline):
        if element.name.startswith("npu-") and element.name not in known:
            raise RunError(f"{filename}: error: the input has 'ascend' ops, but the pass "
                            f"'{element.name}' of the lowering pipeline '{pipeline}' is not "
                            "registered yet (see passes/__init__.py)")
    try:
        run_pipeline(module, pipeline, target)
    except PipelineError as e:
        raise RunError(str(e)) from None


def read_program(path: str, parser) -> tuple[str, str]:
    """(name, MLIR text) of the input; a hivm binary is decoded to text that
    keeps each op's location (`file:1:<byte offset of its instruction>`)."""
    from npu.hivm.binary import MAGIC, BinaryError

    if path != "-" and os.path.isfile(path):
        with open(path, "rb") as f:
            head = f.read(len(MAGIC))
        if head == MAGIC:
            from npu.hivm.disasm import decode
            from npu.ir import make_context

            with open(path, "rb") as f:
                data = f.read()
            try:
                module = decode(data, path, make_context())
            except BinaryError as e:
                raise RunError(f"{path}: error: corrupt binary {e}") from None
            return path, module.operation.get_asm(enable_debug_info=True)
    return read_input(path, parser)


def _cores(parser, args) -> int:
    """--cores N: 0 means all of the target's; more than it has is refused
    for every kind of input, before anything is compiled."""
    from npu.target import UnknownTargetError, get_target

    if args.cores < 0:
        usage_error(parser, f"--cores {args.cores}: needs at least one core (0: all)")
    try:
        target = get_target(args.target)
    except UnknownTargetError:
        return args.cores  # the target check names it
    if args.cores == 0:
        return target.cores
    if args.cores > target.cores:
        usage_error(parser, f"--cores {args.cores}: {target.name} has {target.cores} cores")
    return args.cores


def main(argv: list[str] | None = None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    if args.cores is not None:
        args.cores = _cores(parser, args)
    if args.check and not args.numerics:
        usage_error(parser, "--check compares the outputs, which --no-numerics does not compute")
    for given in (args.inputs, args.tuning_record):
        if given and not os.path.exists(given):
            usage_error(parser, f"cannot read '{given}': no such file")
    from npu.tools.run_model import is_model, refuse_model_options, run_model

    filename = args.input
    try:
        if args.input.endswith(".onnx"):
            if not os.path.exists(args.input):
                usage_error(parser, f"cannot read '{args.input}': no such file")
            text = None
        else:
            filename, text = read_program(args.input, parser)
        if is_model(filename, text):
            refuse_model_options(args)
            check_command_line(args)
            if args.cores is not None:
                args.pipeline = with_lower_option(args.pipeline, f"cores={args.cores}", "--cores")
            if args.tuning_record:  # npu-tune's record of the same model
                args.pipeline = with_lower_option(
                    args.pipeline, f'tuning-record="{args.tuning_record}"', "--tuning-record")
            if args.input_shape and not filename.endswith(".onnx"):
                usage_error(parser, "--input-shape applies to ONNX models only (a linalg "
                            "module's shapes are its own)")
            return run_model(args, filename, text)
        if args.input_shape:
            usage_error(parser, "--input-shape applies to ONNX models only")
        return run(args, filename, text)
    except CommandLineError as e:
        print(f"{parser.prog}: error: {e}", file=sys.stderr)
        return 2
    except RunError as e:
        print(str(e), file=sys.stderr)
        return 1
    except BrokenPipeError:  # e.g. `npu-run ... | head`
        return 1
    except OSError as e:  # an output that became unwritable during the run
        print(f"{parser.prog}: error: cannot write the output: {e.strerror}", file=sys.stderr)
        return 1
    except Exception as e:  # a bug in the tool: never a traceback by default
        return report_internal_error(filename, "internal error", e)


if __name__ == "__main__":
    sys.exit(main())
