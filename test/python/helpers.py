"""Helpers shared by the tests that compile, simulate and compare with numpy.

`compile_and_simulate` runs an ascend-level program through a pipeline and
the simulator, and evaluates the same program with `npu.reference`, so a test
only states the program, the pipeline and the inputs. `assert_close` holds
the tolerances in one place; they follow from the number formats, not from
what happens to pass.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from npu.ir import NUMPY_DTYPES, arg_attrs, functions, int_attr, make_context, memref_element, \
    memref_shape, parse_module, symbol_name, view_root
from npu.target import Target, get_target

# Machine epsilon (spacing of 1.0) of fp16: a correctly rounded result is
# within half of it, relative.
FP16_EPS = float(np.finfo(np.float16).eps)  # 2**-10


def _diagnostics_text() -> str:
    from npu import diagnostics

    return "\n".join(d.format() for d in diagnostics.current().diagnostics)


def compile_remarks(model, **kwargs) -> tuple:
    """`npu.compile(model, **kwargs)` and the remarks it passed on to its
    caller (what a user of npu.compile or npu-run sees)."""
    import npu
    from npu import diagnostics

    with diagnostics.collecting() as engine:
        kernel = npu.compile(model, **kwargs)
    return kernel, [d.message for d in engine.diagnostics if d.severity == "remark"]


def _entry(module, entry: str | None):
    funcs = functions(module)
    if not funcs:
        raise AssertionError("the program has no func.func")
    if entry is None:
        return funcs[0]
    for f in funcs:
        if symbol_name(f) == entry:
            return f
    raise AssertionError(f"no func.func @{entry} in the program")


def random_inputs(source_text: str, seed: int = 0, entry: str | None = None,
                  low: float = -1.0, high: float = 1.0) -> list[np.ndarray]:
    """One random array per memref argument of the entry function, with its
    shape and dtype: floats uniform in [low, high), integers small enough that
    products and sums of a few hundred of them do not overflow."""
    ctx = make_context()
    module = _parse(source_text, ctx)
    func_op = _entry(module, entry)
    rng = np.random.default_rng(seed)
    arrays = []
    for arg_type in func_op.regions[0].blocks[0].arguments.types:
        shape, dtype = memref_shape(arg_type), NUMPY_DTYPES[memref_element(arg_type)]
        if np.issubdtype(dtype, np.floating):
            arrays.append(rng.uniform(low, high, size=shape).astype(dtype))
        else:
            arrays.append(rng.integers(-8, 8, size=shape).astype(dtype))
    return arrays


def _parse(source_text: str, ctx):
    from npu.ir import ParseError

    try:
        return parse_module(source_text, ctx)
    except ParseError:
        raise AssertionError("the test program does not parse:\n" + _diagnostics_text()) from None


def compile_program(source_text: str, pipeline: str, target: Target | None = None):
    """Parse `source_text` and run `pipeline` over it (`npu-lower` stopping at
    cce, see `at_cce`); returns the mlir Module. A failing pass raises
    `npu.pipeline.PipelineError` with its diagnostics."""
    from npu.pipeline import run_pipeline

    module = _parse(source_text, make_context())
    if pipeline:
        run_pipeline(module, at_cce(pipeline), target or get_target())
    return module


# Calls per test file that also run the hivm level (all of them under --runslow;
# NPU_TEST_HIVM_SAMPLE overrides, e.g. 0 to measure what the sample costs).
HIVM_SAMPLE = int(__import__("os").environ.get("NPU_TEST_HIVM_SAMPLE", "3"))
_hivm_calls: dict[str, int] = {}


def hivm_check_due() -> bool:
    """Whether this simulation should also run at the hivm level: always under
    --runslow (conftest sets NPU_TEST_ALL_LEVELS), else for the first
    `HIVM_SAMPLE` simulations of each test file."""
    import os

    if os.environ.get("NPU_TEST_ALL_LEVELS"):
        return True
    test_file = os.environ.get("PYTEST_CURRENT_TEST", "").split("::")[0]
    _hivm_calls[test_file] = _hivm_calls.get(test_file, 0) + 1
    return _hivm_calls[test_file] <= HIVM_SAMPLE


def at_cce(pipeline: str) -> str:
    """`pipeline` with `npu-lower` stopped at cce (`emit=cce`), so the caller
    sees the cce it checks and `simulate_levels` lowers it to hivm itself."""
    import re

    pipeline = re.sub(r"npu-lower\{", "npu-lower{emit=cce ", pipeline)
    return re.sub(r"npu-lower(?![-\w{])", "npu-lower{emit=cce}", pipeline)


def _lowerable(module) -> bool:
    """Planned cce: every on-chip allocation has its npu.offset and no GM
    temporary is left as an alloc (hivm has no place for one)."""
    from npu.ir import memory_space, walk

    ops = list(walk(module.operation))
    if not any(op.name.startswith("cce.") for op in ops):
        return False
    allocs = [op for op in ops if op.name == "memref.alloc"]
    return all(memory_space(op.results[0].type) != "gm" and "npu.offset" in op.attributes
               for op in allocs)


def simulate_levels(module, inputs: Sequence[np.ndarray], target: Target | None = None,
                    force_hivm: bool = False, **kwargs):
    """Simulate a cce-level `module`; when due (`hivm_check_due`, or
    `force_hivm`) and the module is planned, also lower a copy to hivm and
    simulate it: outputs (bit for bit), cycles, instruction count and hazards
    must be identical. Returns the cce result."""
    from npu.pipeline import run_pipeline
    from npu.simulator import simulate

    target = target or get_target()
    result = simulate(module, [np.array(a, copy=True) for a in inputs], target=target, **kwargs)
    if not _lowerable(module) or not (force_hivm or hivm_check_due()):
        return result
    lowered = parse_module(module.operation.get_asm(enable_debug_info=True), module.context)
    run_pipeline(lowered, "npu-lower-cce-to-hivm", target)
    at_hivm = simulate(lowered, [np.array(a, copy=True) for a in inputs], target=target, **kwargs)
    for i, (c, h) in enumerate(zip(result.outputs, at_hivm.outputs)):
        assert c.tobytes() == h.tobytes(), f"argument #{i} differs between cce and hivm"
    assert at_hivm.cycles == result.cycles, f"cycles: cce {result.cycles}, hivm {at_hivm.cycles}"
    assert at_hivm.instructions == result.instructions
    assert len(at_hivm.hazards) == len(result.hazards)
    return result


def unfused_options(options: str) -> str:
    """`options` less those that need fusion (npu-lower refuses an option
    that does not apply): a fused run's options for its unfused baseline."""
    return " ".join(o for o in options.split()
                    if not o.startswith(("fuse-", "attention-", "hoist-casts")))


def compile_and_simulate(source_text: str, pipeline: str, inputs: Sequence[np.ndarray],
                         target: Target | None = None, serialize: bool = False,
                         entry: str | None = None):
    """Compile `source_text` with `pipeline`, simulate it, and evaluate the
    original program with numpy (`npu.reference`).

    Returns (simulated outputs, reference outputs, SimResult). Inputs are
    copied, so callers can reuse them. Simulation is strict: any fault raises.
    The program is compiled to cce and simulated there and (see
    `simulate_levels`) at the hivm level, which must agree exactly.
    """
    from npu.pipeline import run_pipeline
    from npu.reference import evaluate

    target = target or get_target()
    module = _parse(source_text, make_context())
    expected = evaluate(_entry(module, entry), [np.array(a, copy=True) for a in inputs])
    if pipeline:
        run_pipeline(module, at_cce(pipeline), target)
    result = simulate_levels(module, inputs, target, entry=entry, strict=True,
                             serialize=serialize)
    return list(result.outputs), expected, result


def tolerances(dtype, expected: np.ndarray) -> tuple[float, float]:
    """(rtol, atol) for comparing a result of element type `dtype`.

    fp16: results rounded to fp16 once (the reference) or after every
    instruction (the machine) differ by a few half-ulps: rtol 1e-3 (about
    one ulp), plus an atol of one ulp of the largest magnitude so that
    values cancelled to near zero are not judged relatively.
    fp32 (typically fp32 accumulation of fp16 products, whose summation order
    differs): rtol 1e-3 and an atol of 1e-3 of the largest magnitude is far
    below any real error (a wrong tile or a dropped block changes results by
    O(magnitude)) and far above summation-order noise (~sqrt(n) * 2**-24).
    Integers: exact.
    """
    dtype = np.dtype(dtype)
    if not np.issubdtype(dtype, np.floating):
        return 0.0, 0.0
    finite = np.abs(expected[np.isfinite(expected)]).astype(np.float64)
    scale = float(finite.max()) if finite.size else 1.0
    if dtype == np.float16:
        return 1e-3, FP16_EPS * max(scale, 2.0 ** -14)
    return 1e-3, 1e-3 * max(scale, 1e-6)


def assert_close(actual: np.ndarray, expected: np.ndarray, dtype=None, what: str = "result") -> None:
    """Assert `actual` matches `expected` within the tolerances of `dtype`
    (default: expected's dtype); NaNs and infinities must be in the same
    places. The message names the worst element."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    dtype = np.dtype(dtype if dtype is not None else expected.dtype)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != expected {expected.shape}"
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != expected {expected.dtype}"
    rtol, atol = tolerances(dtype, expected)
    a = actual.astype(np.float64)
    e = expected.astype(np.float64)
    same_special = (np.isnan(a) == np.isnan(e)).all() and (np.isinf(e) <= (a == e)).all()
    assert same_special, f"{what}: NaN/inf positions differ"
    finite = np.isfinite(e)
    with np.errstate(invalid="ignore"):  # inf - inf where both are inf: checked above
        err = np.abs(a - e)
    bad = finite & (err > atol + rtol * np.abs(e))
    if bad.any():
        idx = np.unravel_index(np.argmax(np.where(bad, err, -1.0)), e.shape)
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {e.size} elements differ beyond rtol={rtol:g} "
            f"atol={atol:g}; worst at {tuple(int(i) for i in idx)}: got {a[idx]!r}, "
            f"expected {e[idx]!r} (|diff| {err[idx]:g})")


def assert_outputs_close(actual: Sequence[np.ndarray], expected: Sequence[np.ndarray],
                         names: Sequence[str] | None = None) -> None:
    """`assert_close` over every argument (inputs included: they must be left intact)."""
    assert len(actual) == len(expected), f"{len(actual)} outputs, expected {len(expected)}"
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert_close(a, e, what=names[i] if names else f"argument #{i}")


def l1_weights_of(loop, constants) -> set:
    """The host constants `loop` copies into L1 in its body (the weights a
    prefetch test expects a matmul loop, or its previous op's tail, to load)."""
    found = set()

    def visit(op) -> None:
        if op.name == "cce.copy_gm_to_l1" and view_root(op.operands[0]) in constants:
            found.add(view_root(op.operands[0]))
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    visit(inner.operation)
    visit(loop)
    return found


def has_mad(op) -> bool:
    """Does `op` hold a `cce.mad` (a matmul's loop, not the copies ahead of it)?"""
    if op.name == "cce.mad":
        return True
    return any(has_mad(o.operation) for r in op.regions for b in r.blocks for o in b.operations)


def kernel_tops(kernel) -> tuple[set, list]:
    """A compiled kernel's host-constant arguments and its function's top-level ops."""
    func = kernel.module.body.operations[0]
    args = list(func.regions[0].blocks[0].arguments)
    constants = {a for a in args if "npu.constant" in arg_attrs(func, a.arg_number)}
    return constants, [o.operation for o in func.regions[0].blocks[0].operations]


def unlooped_l1_copies(op, weights, bursts: bool = False) -> int:
    """L1 copies of `weights` in `op` outside any loop (top level or in a guard):
    how many, or with `bursts` how many bursts they move."""
    if op.name == "cce.copy_gm_to_l1" and view_root(op.operands[0]) in weights:
        return int_attr(op, "n_burst") if bursts else 1
    if op.name == "scf.for":
        return 0
    return sum(unlooped_l1_copies(o.operation, weights, bursts) for r in op.regions
               for b in r.blocks for o in b.operations)


def matmul_site(tops: list, constants: set, name: str, kind: str) -> tuple[int, set, list[int]]:
    """The top-level op of kind `kind` (a loop or a share's guard) holding
    matmul `name`'s mads: its index, the weights it copies into L1 and the
    indices of the chip barriers before it."""
    at = next(k for k, op in enumerate(tops) if op.name == kind
              and f'"{name}"' in str(op.location) and has_mad(op))
    weights = l1_weights_of(tops[at], constants)
    assert weights, f"{name}: no weights copied into L1"
    return at, weights, [k for k in range(at) if tops[k].name == "cce.sync_all"]


def bert_ffn_in_bursts(seq: int, first: int, last: int) -> tuple[bytes, int]:
    """BERT-base at `seq` on 32 cores (ascend910): the model, and how many
    bursts of ffn_in's L1 weights load outside loops between its 5 chip
    barriers `first` and `last` (after the input cast, the projections, the
    attention, out_proj and ln1)."""
    import npu
    from npu.frontend.bert import bert_layer

    model = bert_layer(seq, 768, 12, 3072).SerializeToString()
    emitted = npu.compile(model, cores=32, pipeline="builtin.module(npu-lower{emit=cce})")
    constants, tops = kernel_tops(emitted)
    _, weights, barriers = matmul_site(tops, constants, "ffn_in", "scf.for")
    assert len(barriers) == 5
    return model, sum(unlooped_l1_copies(tops[k], weights, bursts=True)
                      for k in range(barriers[first] + 1, barriers[last]))


def simulate_options(model, x: np.ndarray, options: Sequence[str],
                     **compile_kw) -> list[tuple[np.ndarray, int]]:
    """(output, cycles) of `model` on `x` compiled with `npu-lower{options}`
    for each of `options` (`compile_kw`: `npu.compile`'s cores, target),
    each run checked free of hazards."""
    import npu

    runs = []
    for opts in options:
        (out,), report = npu.compile(model, pipeline=f"npu-lower{{{opts}}}", **compile_kw)(x)
        assert report["hazards"] == [], opts
        runs.append((np.asarray(out), report["cycles"]))
    return runs


def assert_same_bits_and_faster(model: bytes, seq: int, off_option: str) -> None:
    """BERT-base at `seq` on 32 cores gives the same bits with `off_option`
    as without it, without hazards, and takes more cycles with it."""
    x = np.random.default_rng(0).standard_normal((1, seq, 768)).astype(np.float32)
    (off, off_cycles), (on, on_cycles) = simulate_options(
        model, x, (f"cores=32 {off_option}", "cores=32"), target="ascend910")
    assert np.array_equal(off.view(np.uint8), on.view(np.uint8))
    assert on_cycles < off_cycles, (on_cycles, off_cycles)
