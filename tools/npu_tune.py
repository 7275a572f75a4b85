"""`npu-tune`: find the fastest lowering options per op, or sweep target parameters.

    npu-tune prog.mlir -o record.json                   # per-op tuning (guided search)
    npu-tune prog.mlir --search grid --workers 2 -o record.json
    npu-tune prog.mlir --param strategy=os,ws --param m=128,256
    npu-tune model.onnx --param cores=1,8,32 --param fuse=true,false
    npu-tune prog.mlir --space space.json --address ray://head:10001
    npu-tune prog.mlir --design --param ub=64KiB,128KiB,256KiB --table t.csv --plot p.png

Candidates are compiled with npu-lower and simulated as Ray tasks (a local
cluster unless --address names one). Results go to a JSON-lines store as they
arrive (--store, default npu-tune.jsonl): a rerun skips what is stored.
Per-op mode verifies the chosen options on the whole program with full
numerics against numpy, then compares whole programs over the pipeline's
own options (by default 1, 2, 4, ... of the target's cores, fusion on and
off; per-op choices hold one core's tiles, so programs on more cores use
npu-lower's) against npu-lower's default, and writes the fastest as a
tuning record for `npu-lower tuning-record=FILE` / `npu-run --tuning-record
FILE`. Exit code 1 if the
verification fails (no record is written), 2 on bad usage.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

from npu.tools.common import (MergeShapes, report_internal_error, usage_error,
                              write_output_atomically)

DEFAULT_STORE = "npu-tune.jsonl"


def make_parser() -> argparse.ArgumentParser:
    from npu.tune.search import SEARCHES
    from npu.tune.space import TARGET_PARAMS_HELP

    p = argparse.ArgumentParser(prog="npu-tune", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", help="ascend-level MLIR program ('-' for stdin) or an ONNX model (.onnx)")
    p.add_argument("-o", "--output", default=None, help="write the tuning record (JSON) here")
    p.add_argument("--input-shape", dest="input_shape", action=MergeShapes, default=None,
                   metavar="NAME=DIMS", help="ONNX only: pin a dynamic input's shape, e.g. "
                   "input_ids=1x128 (repeatable, or comma-separated), as npu-run does")
    p.add_argument("--space", default=None, help="search space spec (JSON file; see npu.tune.space)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=V1,V2,...",
                   help="values of one option (per-op mode: an npu-lower option, for every op "
                   f"that takes it) or target parameter (--design: {TARGET_PARAMS_HELP})")
    p.add_argument("--search", choices=SEARCHES, default="guided",
                   help="grid: every candidate; random: a sample; guided (default): the "
                   "cost model's best. The cost model's own choice is always run")
    p.add_argument("--budget", type=int, default=None,
                   help="candidates simulated per op for random/guided (default 16/8)")
    p.add_argument("--seed", type=int, default=0, help="random search seed")
    p.add_argument("--target", default="ascend910", help="target preset (default ascend910)")
    p.add_argument("--workers", type=int, default=None,
                   help="tasks in flight (default: the CPUs of the Ray cluster)")
    p.add_argument("--address", default=None,
                   help="an existing Ray cluster (e.g. auto, ray://host:10001); default: local")
    p.add_argument("--timeout", type=float, default=600.0,
                   help="seconds per candidate before it is cancelled and recorded as a timeout")
    p.add_argument("--store", default=DEFAULT_STORE, help=f"results file (default {DEFAULT_STORE})")
    p.add_argument("--no-store", action="store_true", help="keep results in memory only")
    p.add_argument("--no-verify", dest="verify", action="store_false",
                   help="per-op choices only: no whole-program runs (neither the check of "
                   "the chosen options nor the cores and fusion stage)")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    design = p.add_argument_group("design-space mode")
    design.add_argument("--design", action="store_true",
                        help="sweep target parameters (one at a time) instead of lowering options")
    design.add_argument("--table", default=None, help="write the sweep as CSV here")
    design.add_argument("--plot", default=None, help="write cycles against each parameter (PNG)")
    design.add_argument("--tuning-record", default=None,
                        help="compile every design point with this record's per-op options")
    return p


def parse_params(items: list[str], parser: argparse.ArgumentParser) -> dict[str, list]:
    params: dict[str, list] = {}
    for item in items:
        name, sep, values = item.partition("=")
        if not sep or not name or not values:
            usage_error(parser, f"--param '{item}': expected NAME=V1,V2,...")
        params[name.strip()] = [v.strip() for v in values.split(",") if v.strip()]
    return params


def ops_spec(args, params: dict[str, list], parser) -> dict | None:
    from npu.passes.lower import LowerPass
    from npu.passes.lower_options import PIPELINE_OPTIONS

    spec: dict = {}
    if args.space:
        try:
            with open(args.space, encoding="utf-8") as f:
                spec = json.load(f)
        except OSError as e:
            usage_error(parser, f"cannot read '{args.space}': {e.strerror}")
        except json.JSONDecodeError as e:
            usage_error(parser, f"{args.space}: not JSON: {e}")
        if not isinstance(spec, dict):
            usage_error(parser, f"{args.space}: the space spec must be a JSON object")
    if params:
        known = {o.name for o in LowerPass.options} | {"double-buffer"}
        for name in params:
            if name not in known:
                usage_error(parser, f"--param '{name}' is not an npu-lower option (target "
                                    "parameters need --design)")
        # whole-program options (cores, fuse, ...) go to the pipeline stage
        whole = {n: v for n, v in params.items() if n in PIPELINE_OPTIONS}
        if whole:
            spec.setdefault("pipeline", {}).update(whole)
        per_op = {n: v for n, v in params.items() if n not in PIPELINE_OPTIONS}
        if per_op:
            spec.setdefault("ops", {}).setdefault("*", {}).update(per_op)
    return spec or None


def main(argv: list[str] | None = None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    params = parse_params(args.param, parser)
    if args.budget is not None and args.budget < 1:
        usage_error(parser, "--budget must be at least 1")
    if args.workers is not None and args.workers < 1:
        usage_error(parser, "--workers must be at least 1")
    if args.timeout <= 0:
        usage_error(parser, "--timeout must be positive")
    if not args.design and (args.table or args.plot or args.tuning_record):
        usage_error(parser, "--table, --plot and --tuning-record belong to --design")
    from npu.target import PRESETS
    if args.target not in PRESETS:
        usage_error(parser, f"unknown target preset '{args.target}' (known: {', '.join(PRESETS)})")
    from npu.tune import ProgramError, SpaceError, TuneOptions, load_program

    opts = TuneOptions(search=args.search, budget=args.budget, seed=args.seed, target=args.target,
                       workers=args.workers, address=args.address, timeout=args.timeout,
                       store=None if args.no_store else args.store, progress=args.progress,
                       verify=args.verify)
    from npu.tune.extras import MissingExtra, require

    try:
        require("ray", "npu-tune's runner")  # before any work, not after the sweep
        if args.plot:
            require("matplotlib", "--plot")
        if args.input_shape and not args.input.endswith(".onnx"):
            usage_error(parser, "--input-shape applies to ONNX models only")
        program = load_program(args.input, args.input_shape)
        if args.design:
            return run_design(args, program, params, opts, parser)
        spec = ops_spec(args, params, parser)
        if not args.verify and spec and spec.get("pipeline"):
            usage_error(parser, "pipeline options (cores, fuse, ...) are tried by the "
                        "whole-program stage, which --no-verify skips")
        return run_tuning(args, program, spec, opts)
    except (ProgramError, SpaceError, MissingExtra) as e:
        text = str(e)
        print(text if "error:" in text else f"npu-tune: error: {text}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("npu-tune: interrupted; finished candidates are in the store, a rerun resumes",
              file=sys.stderr)
        return 130
    except Exception as e:  # a bug in the tool: never a traceback by default
        return report_internal_error("npu-tune", "internal error", e)


def run_tuning(args, program, spec, opts) -> int:
    from npu.tune import tune
    from npu.tune.report import tuning_json, tuning_text

    result = tune(program, spec, opts)
    print(json.dumps(tuning_json(result), indent=2) if args.json else tuning_text(result))
    if not result.verified:
        print(f"{program.filename}: error: the tuned program failed verification: "
              f"{result.program['check'].get('failure')}", file=sys.stderr)
        return 1
    if args.output:
        write_output_atomically(args.output, result.record.to_json())
    return 0


def run_design(args, program, params, opts, parser) -> int:
    from npu.tune import sweep_design
    from npu.tune.design import plot
    from npu.passes.tuning_record import RecordError, TuningRecord

    record_json = None
    if args.tuning_record:
        try:
            record_json = TuningRecord.load(args.tuning_record).to_json()
        except RecordError as e:
            usage_error(parser, str(e))
    result = sweep_design(program, params or None, opts, record_json=record_json)
    if args.json:
        print(json.dumps({"target": result.target, "rows": result.rows(), "ran": result.ran,
                          "reused": result.reused, "wall_seconds": result.wall_seconds}, indent=2))
    else:
        print(result.markdown())
        print(f"\n{result.ran} run, {result.reused} reused from the store, {result.wall_seconds} s")
    if args.table:
        write_output_atomically(args.table, result.csv())
    if args.plot:
        directory = os.path.dirname(os.path.abspath(args.plot))
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".npu-tmp-", suffix=".png")
        os.close(fd)
        try:
            plot(result, tmp, f"{os.path.basename(program.filename)} on {result.target}")
            os.replace(tmp, args.plot)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
