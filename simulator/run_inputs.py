"""npu-run's inputs: which entry signatures it can feed, and the arrays it
feeds them (random from a seed, or read from an .npz without pickle)."""

from __future__ import annotations

import numpy as np


class RunError(Exception):
    """A user-facing error already formatted as `file:line:col: error: ...`."""


# Inputs, outputs and the simulator's copy of GM all live in this process's
# memory; past this many argument bytes a run is refused up front (a tool
# limit, not a hardware number).
MAX_ARGUMENT_BYTES = 1 << 30


def check_entry_arguments(func_op) -> None:
    """npu-run feeds one array per argument: every argument must be a memref
    of static shape with an element type numpy has, and all of them must fit."""
    from npu import ir as npu_ir
    from npu.simulator.errors import where_of

    where = where_of(func_op.location)
    total = 0
    block_idx = npu_ir.block_idx_arg(func_op)  # the launch fills it in, not the caller
    for i, arg in enumerate(func_op.regions[0].blocks[0].arguments):
        if i == block_idx:
            continue
        if not npu_ir.is_memref(arg.type):
            raise RunError(f"{where}: error: argument #{i} of the entry is {arg.type}; npu-run "
                            "passes memref arguments only")
        t = npu_ir.memref_type(arg.type)
        if not t.has_static_shape:
            raise RunError(f"{where}: error: argument #{i} ({t}) has a dynamic shape; npu-run "
                            "needs static shapes")
        dtype = npu_ir.memref_element(t)
        if dtype not in npu_ir.NUMPY_DTYPES:
            raise RunError(f"{where}: error: argument #{i} ({t}) has element type {dtype}; npu-run "
                            f"supports {', '.join(npu_ir.NUMPY_DTYPES)}")
        _check_constant(func_op, i, t, where)
        total += int(np.prod(t.shape, dtype=object)) * np.dtype(npu_ir.NUMPY_DTYPES[dtype]).itemsize
    if total > MAX_ARGUMENT_BYTES:
        raise RunError(f"{where}: error: the entry's arguments take {total} bytes; npu-run "
                        f"simulates at most {MAX_ARGUMENT_BYTES} bytes of arguments")


def _check_constant(func_op, i: int, t, where: str) -> None:
    """An `npu.constant` argument carries its data as dense elements with as
    many values as the argument has (or a splat)."""
    from mlir import ir

    from npu import ir as npu_ir

    attr = npu_ir.arg_attrs(func_op, i).get("npu.constant")
    if attr is None:
        return
    if not (isinstance(attr, ir.DenseElementsAttr)
            and (attr.is_splat or np.prod(ir.ShapedType(attr.type).shape) == np.prod(t.shape))):
        raise RunError(f"{where}: error: argument #{i} ({t}) has npu.constant = {attr}; it must be "
                        f"dense elements with {int(np.prod(t.shape))} values (or a splat)")


def input_args(func_op) -> list:
    """The arguments the caller provides: all but the GM workspace (scratch the
    simulator allocates itself) and a multi-core kernel's block index."""
    from npu import ir as npu_ir

    scratch = npu_ir.workspace_args(func_op) + [npu_ir.block_idx_arg(func_op)]
    return [a for i, a in enumerate(func_op.regions[0].blocks[0].arguments) if i not in scratch]


def constant_of(func_op, arg) -> np.ndarray | None:
    """The data of an `npu.constant` argument (host data the frontend laid out), else None."""
    from npu import ir as npu_ir

    attrs = npu_ir.arg_attrs(func_op, arg.arg_number)
    if "npu.constant" not in attrs:
        return None
    return npu_ir.constant_data(attrs["npu.constant"], npu_ir.memref_shape(arg.type),
                                npu_ir.memref_element(arg.type))


def bind_to_lowered(original_func, lowered_func, inputs: list) -> tuple[list, list]:
    """The pipeline may replace `npu.constant` arguments (npu-fuse-horizontal
    concatenates weights into a new one): the lowered function's constants
    come from their own data and its other arguments are the original's
    non-constant ones, in order. Returns the lowered function's inputs and,
    per original argument, its index in the lowered function (None for a
    constant the pipeline dropped), or None when the arguments are unchanged."""
    originals = input_args(original_func)
    kept = [i for i, a in enumerate(originals) if constant_of(original_func, a) is None]
    lowered_args = input_args(lowered_func)
    arrays, where = [], [None] * len(originals)
    it = iter(kept)
    for j, arg in enumerate(lowered_args):
        data = constant_of(lowered_func, arg)
        if data is None:
            i = next(it)
            where[i] = j
            arrays.append(inputs[i])
        else:
            arrays.append(data)
    if len(lowered_args) == len(originals) and all(
            a.type == b.type for a, b in zip(originals, lowered_args)):
        # nothing replaced or retyped (npu-lower-conv's compact depthwise
        # weights keep their position, not their data): positions agree
        return list(inputs), None
    return arrays, where


def index_bounds(func_op) -> dict[int, int]:
    """Argument number -> the smallest axis it indexes (`ascend.gather` /
    `gather_elements` indices): random ids must lie in [-size, size)."""
    from mlir import ir

    from npu import ir as npu_ir

    bounds: dict[int, int] = {}
    for op in npu_ir.walk(func_op, lambda o: o.name in ("ascend.gather", "ascend.gather_elements")):
        table, ids = op.operands[0], op.operands[1]
        shape = npu_ir.memref_shape(table.type)
        size = shape[npu_ir.int_attr(op, "axis") % len(shape)]
        root = npu_ir.view_root(ids)
        if npu_ir.is_block_argument(root):
            n = ir.BlockArgument(root).arg_number
            bounds[n] = min(size, bounds.get(n, size))
    return bounds


def random_inputs(func_op, seed: int, source_func=None) -> list[np.ndarray]:
    """Random arrays for the input arguments; gather indices within their
    axis, as `source_func` (the ascend-level function `func_op` was lowered
    from, when it was) or `func_op` says."""
    from npu import ir as npu_ir

    rng = np.random.default_rng(seed)
    arrays = []
    bounds = index_bounds(source_func if source_func is not None else func_op)
    for arg in input_args(func_op):
        shape = tuple(npu_ir.memref_shape(arg.type))
        dtype = npu_ir.memref_element(arg.type)
        constant = constant_of(func_op, arg)
        if constant is not None:
            arrays.append(constant)
        elif dtype in ("f16", "f32"):
            arrays.append(rng.uniform(-1, 1, shape).astype(npu_ir.NUMPY_DTYPES[dtype]))
        elif dtype == "i8":
            arrays.append(rng.integers(-8, 8, shape).astype(np.int8))
        elif arg.arg_number in bounds:  # gather indices: in range of the axis they index
            size = max(bounds[arg.arg_number], 1)
            arrays.append(rng.integers(-size, size, shape).astype(np.int32))
        else:
            arrays.append(rng.integers(-64, 64, shape).astype(npu_ir.NUMPY_DTYPES.get(dtype, np.int32)))
    return arrays


ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")  # a zip member / an empty zip


def read_npz(path: str, filename: str) -> dict[str, np.ndarray]:
    """Every array of an `--inputs` file, read without pickle. An .npz
    (np.savez) only: a bare .npy has no names to bind arrays by. Any problem
    is one `filename: error:` line naming the file (and the array)."""
    def fail(why: str) -> RunError:
        return RunError(f"{filename}: error: cannot read inputs '{path}': {why}")

    try:
        with open(path, "rb") as f:
            head = f.read(6)
    except OSError as e:
        raise fail(e.strerror or str(e)) from None
    if head.startswith(np.lib.format.MAGIC_PREFIX):
        raise fail("it is a .npy file (one unnamed array), not an .npz archive of named "
                   "arrays (np.savez writes one)")
    if not head.startswith(ZIP_MAGICS):
        raise fail("not an .npz archive (np.savez writes one)")
    arrays: dict[str, np.ndarray] = {}
    name = None
    try:
        with np.load(path, allow_pickle=False) as data:
            for name in data.files:
                arr = data[name]
                if not isinstance(arr, np.ndarray):
                    raise fail(f"member '{name}' is not a .npy array")
                arrays[name] = arr
    except RunError:
        raise
    except Exception as e:  # noqa: BLE001 - zipfile, zlib, numpy's format errors: a bad file
        what = f"array '{name}'" if name is not None else "the archive"
        if isinstance(e, ValueError) and "allow_pickle" in str(e):
            raise fail(f"{what} is an object array (it needs pickle); only numeric arrays "
                       "are read") from None
        raise fail(f"{what} is truncated or corrupt ({type(e).__name__}: {e})") from None
    return arrays


def extra_arrays(path: str, filename: str, arrays: dict, names: list[str], wanted: str) -> None:
    """Arrays that match no input are a mistake (a misspelt name), not noise."""
    extra = [n for n in arrays if n not in names]
    if extra:
        raise RunError(f"{filename}: error: '{path}' has arrays that match no input: "
                       f"{', '.join(repr(n) for n in extra)} ({wanted})")


def load_inputs(path: str, func_op, filename: str) -> list[np.ndarray]:
    from npu import ir as npu_ir

    arrays_in_file = read_npz(path, filename)
    args = input_args(func_op)
    keys = [f"arg{i}" for i in range(len(args))]
    if all(k in arrays_in_file for k in keys):
        names = keys
        extra_arrays(path, filename, arrays_in_file, keys,
                     f"the entry takes {', '.join(keys) or 'no arguments'}")
    else:
        names = list(arrays_in_file)
    if len(names) != len(args):
        held = ", ".join(repr(n) for n in arrays_in_file) or "none"
        raise RunError(f"{filename}: error: '{path}' holds {len(arrays_in_file)} arrays ({held}); "
                       f"the entry takes {len(args)} arguments")
    arrays = []
    for i, (name, arg) in enumerate(zip(names, args)):
        arr = arrays_in_file[name]
        shape = tuple(npu_ir.memref_shape(arg.type))
        dtype = np.dtype(npu_ir.NUMPY_DTYPES[npu_ir.memref_element(arg.type)])
        if arr.shape != shape or arr.dtype != dtype:
            raise RunError(f"{filename}: error: input '{name}' is {arr.dtype}{list(arr.shape)}; "
                            f"argument #{i} needs {dtype}{list(shape)}")
        constant = constant_of(func_op, arg)
        if constant is not None and not np.array_equal(arr.view(np.uint8), constant.view(np.uint8)):
            raise RunError(f"{filename}: error: input '{name}' differs from the data of argument "
                            f"#{i}, an npu.constant the program was compiled for")
        arrays.append(arr)
    return arrays
