"""The model's own element type at the graph boundary, when the device holds
the data in another (`npu.host_type` on an argument, `compile.Port`).

Two kinds:

* integers held as i32 (int64, int16, unsigned: `onnx_narrow`): the caller's
  values must fit i32, the device's results the model's type (a range error
  where the model's type would have wrapped);
* types the NPU does not hold, held in a wider one that has every value
  exactly (`onnx_wide_types`: int4/int2 in i8, float8/float4 in f16,
  bfloat16/float8e8m0 in f32, double as f32 or f16): widened on the way in,
  narrowed on the way out, where a device value that is not exactly one of
  the model's type is an error naming the element. A double input is the
  exception: the host's rounding to f32/f16 is the model's own Cast.
"""

from __future__ import annotations

import numpy as np

# numpy names of the integer types `onnx_narrow` holds as i32.
AS_I32 = frozenset({"int64", "int16", "uint8", "uint16", "uint32", "uint64"})
# A double input is rounded on the host: that rounding is the model's Cast.
ROUNDED = frozenset({"float64"})


class InputError(ValueError):
    """An input the kernel cannot take (an int64 value outside i32, an int4
    input given 9), or a result outside the model's type."""


def host_dtype(name: str) -> np.dtype:
    """numpy's dtype for a host type name, ml_dtypes' for the narrow types
    (int4, float8_e4m3fn, bfloat16, ...)."""
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, name))


def to_device(array: np.ndarray, host_type: str, storage: np.dtype, what: str) -> np.ndarray:
    """The caller's `array` (already of the host type) as the device holds it."""
    if host_type in AS_I32:
        check_range(array, np.int32, what, "i32")
    with np.errstate(over="ignore"):  # a double past f16's range: inf, as ONNX's Cast
        return array.astype(storage, copy=False)


def to_host(array: np.ndarray, host_type: str, what: str) -> np.ndarray:
    """A device result in the model's type; an error naming the first element
    that is not exactly a value of it."""
    if host_type in AS_I32:
        check_range(array, np.dtype(host_type), what, host_type)
        return array.astype(host_type)
    dtype = host_dtype(host_type)
    check_exact(array, dtype, what, host_type)
    return array.astype(dtype)


def from_caller(array: np.ndarray, host_type: str, what: str) -> np.ndarray:
    """The caller's array in the host type: another dtype's values must be
    exactly values of it (an int4 input given 9 is an error, not -7)."""
    dtype = host_dtype(host_type)
    if array.dtype != dtype and host_type not in AS_I32 and host_type not in ROUNDED:
        check_exact(array, dtype, what, host_type)
    return array.astype(dtype, copy=False)


def check_range(array: np.ndarray, dtype, what: str, type_name: str) -> None:
    info = np.iinfo(dtype)
    bad = (array < info.min) | (array > info.max)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise InputError(f"{what}: element {list(where)} is {array[where]}, outside {type_name} "
                            "(integer data runs as i32 on the NPU)")


def check_exact(array: np.ndarray, dtype: np.dtype, what: str, type_name: str) -> None:
    """Every element of `array` survives the round trip through `dtype`
    (NaN to NaN; -0 may become FNUZ's 0, which has no -0)."""
    with np.errstate(all="ignore"):
        back = array.astype(dtype).astype(array.dtype)
    same = back == array
    if array.dtype.kind == "f":
        same |= np.isnan(back) & np.isnan(array)
    if not same.all():
        where = tuple(int(i) for i in np.argwhere(~same)[0])
        raise InputError(f"{what}: element {list(where)} is {array[where]}, not exactly a "
                            f"{type_name} (the NPU holds {type_name} data in a wider type)")
