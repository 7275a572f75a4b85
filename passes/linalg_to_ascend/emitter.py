"""Text builder for the ascend-level function the conversion produces.

Every tensor becomes a GM buffer (`Buf`): a function argument, a
`memref.alloc` in "gm", or a reshape view of one. The builder hands out SSA
names, writes ops in MLIR's generic form with the location of the linalg op
they come from (so simulated instructions map back to it), and collects the
function's arguments: inputs, outputs, and host constants whose data rides
along as the `npu.constant` attribute of their argument.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from npu.ir import NUMPY_DTYPES

ELEMENT_OF_NUMPY = {np.dtype(v): k for k, v in NUMPY_DTYPES.items()}
DETACH_MIN_ELEMENTS = 256  # smaller constants stay in the text


def memref_text(shape, dtype: str) -> str:
    dims = "".join(f"{d}x" for d in shape)
    return f'memref<{dims}{dtype}, "gm">'


@dataclass(frozen=True)
class Buf:
    """A GM buffer holding one tensor in row-major (ND) or Nz order."""
    name: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def type(self) -> str:
        return memref_text(self.shape, self.dtype)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


@dataclass
class Argument:
    buf: Buf
    role: str                      # "input" | "output" | "constant"
    name: str = ""                 # ONNX / source name of an input or output
    data: np.ndarray | None = None  # constants only
    loc: str = ""                  # constants: the op that needed them
    boolean: bool = False          # an ONNX bool (i1) held as i8 0/1: `npu.bool`
    host_type: str = ""            # integer data held as i32 (ONNX int64...): `npu.host_type`


def dense_hex(array: np.ndarray, dtype: str) -> str:
    data = np.ascontiguousarray(array.astype(NUMPY_DTYPES[dtype]))
    dims = "".join(f"{d}x" for d in data.shape)
    if data.size == 1:  # a one-element hex blob would be read as a splat of its bytes
        return f"dense<{_scalar_text(data.reshape(-1)[0], dtype)}> : tensor<{dims}{dtype}>"
    return f'dense<"0x{data.tobytes().hex().upper()}"> : tensor<{dims}{dtype}>'


def _scalar_text(value, dtype: str) -> str:
    if dtype.startswith("f") and not np.isfinite(value):  # inf / nan: the bit pattern of the type
        return "0x" + np.asarray(value, NUMPY_DTYPES[dtype]).tobytes()[::-1].hex().upper()
    return repr(float(value)) if dtype.startswith("f") else str(int(value))


def i64_array(values) -> str:
    return "array<i64: " + ", ".join(str(int(v)) for v in values) + ">"


def float_text(value: float) -> str:
    v = float(value)
    if np.isinf(v):
        return "0x7FF0000000000000" if v > 0 else "0xFFF0000000000000"
    if np.isnan(v):
        return "0x7FF8000000000000"
    return repr(v)


@dataclass
class Emitter:
    lines: list[str] = field(default_factory=list)
    args: list[Argument] = field(default_factory=list)
    _count: int = 0
    origin: str = ""  # location of the op being converted (constants record it)
    _alloc_line: dict = field(default_factory=dict)
    _root: dict = field(default_factory=dict)   # view name -> the buffer it views
    _flat: dict = field(default_factory=dict)   # buffer name -> its 1-D view
    _views: dict = field(default_factory=dict)  # (buffer name, shape) -> view
    # When set, large constants leave the text: their attribute is the key
    # (a string) into this table, and `attach_constants` puts the data back.
    detached: dict[str, np.ndarray] | None = None

    def fresh(self, prefix: str = "t") -> str:
        self._count += 1
        return f"%{prefix}{self._count}"

    def argument(self, shape, dtype: str, role: str, name: str = "",
                 data: np.ndarray | None = None, boolean: bool = False, host_type: str = "") -> Buf:
        buf = Buf(f"%arg{len(self.args)}", tuple(shape), dtype)
        self.args.append(Argument(buf, role, name, data, boolean=boolean, host_type=host_type))
        return buf

    def constant(self, array: np.ndarray) -> Buf:
        if array.dtype == np.bool_:
            array = array.astype(np.int8)
        dtype = ELEMENT_OF_NUMPY[np.dtype(array.dtype)]
        buf = self.argument(array.shape, dtype, "constant", data=np.ascontiguousarray(array))
        self.args[-1].loc = self.origin
        return buf

    def alloc(self, shape, dtype: str, loc: str) -> Buf:
        buf = Buf(self.fresh(), tuple(int(s) for s in shape), dtype)
        self._alloc_line[buf.name] = len(self.lines)
        self.lines.append(f"    {buf.name} = memref.alloc() : {buf.type} {loc}")
        return buf

    def mark(self) -> int:
        return len(self.lines)

    def root(self, buf: Buf) -> Buf:
        return self._root.get(buf.name, buf)

    def retarget(self, buf: Buf, since: int, make_view) -> Buf | None:
        """Make the ops that wrote temporary `buf` write `make_view()` instead
        (the final op of a body writes straight into its destination).
        Only for an alloc emitted after line `since`; None otherwise."""
        index = self._alloc_line.get(buf.name)
        if index is None or index < since or self.lines[index].split(" = ", 1)[0].strip() != buf.name:
            return None
        start = len(self.lines)
        view = make_view()
        if view.shape != buf.shape or view.dtype != buf.dtype:
            del self.lines[start:]
            return None
        defining = self.lines[start:]
        del self.lines[start:]
        pattern = re.compile(re.escape(buf.name) + r"\b")
        self.lines[index + 1:] = [pattern.sub(view.name, line) for line in self.lines[index + 1:]]
        self.lines[index:index + 1] = defining
        # (an alloc make_view emitted now stands where buf's did)
        self._alloc_line = {n: (i if i < index else index + i - start if i >= start
                                else i - 1 + len(defining))
                            for n, i in self._alloc_line.items() if n != buf.name}
        self._root = {n: (view if r.name == buf.name else r) for n, r in self._root.items()}
        if buf.name in self._flat:
            self._flat[view.name] = self._flat.pop(buf.name)
        self._views = {(view.name if n == buf.name else n, sh): v for (n, sh), v in self._views.items()}
        return view

    def op(self, name: str, operands: list[Buf], loc: str, **attrs: str) -> None:
        names = ", ".join(b.name for b in operands)
        types = ", ".join(b.type for b in operands)
        attr_text = ""
        if attrs:
            attr_text = " {" + ", ".join(f"{k} = {v}" for k, v in sorted(attrs.items())) + "}"
        self.lines.append(f'    "{name}"({names}){attr_text} : ({types}) -> () {loc}')

    def typed_view(self, raw: Buf, shape, dtype: str, loc: str, shift: int = 0) -> Buf:
        """`raw` (a byte buffer) from byte `shift` on as a contiguous buffer
        of `shape` and `dtype` (`memref.view`, as the GM plan's own views)."""
        view = Buf(self.fresh("v"), tuple(int(s) for s in shape), dtype)
        at = self.fresh("c")
        self.lines.append(f"    {at} = arith.constant {int(shift)} : index {loc}")
        self.lines.append(f"    {view.name} = memref.view {raw.name}[{at}][] : {raw.type} to {view.type} {loc}")
        return view

    def alloc_index(self, buf: Buf) -> int | None:
        """The line of `buf`'s alloc (None: not an alloc of this emitter)."""
        return self._alloc_line.get(buf.name)

    def reshape(self, buf: Buf, shape, loc: str) -> Buf:
        """A view of contiguous `buf` with another shape of the same size:
        collapse to 1-D, then expand (both are plain reinterpretations)."""
        shape = tuple(int(s) for s in shape)
        if shape == buf.shape:
            return buf
        assert int(np.prod(shape, dtype=np.int64)) == buf.size, (buf.shape, shape)
        root = self._root.get(buf.name, buf)
        if shape == root.shape:
            return root
        flat = self._flat.get(root.name, root)
        if len(flat.shape) != 1:
            flat = Buf(self.fresh("v"), (root.size,), root.dtype)
            if root.shape:
                groups = "[" + ", ".join(str(i) for i in range(len(root.shape))) + "]"
                self.lines.append(f"    {flat.name} = memref.collapse_shape {root.name} [{groups}] : "
                                  f"{root.type} into {flat.type} {loc}")
            else:  # rank 0 -> [1]: an expand with no reassociation groups
                self.lines.append(f"    {flat.name} = memref.expand_shape {root.name} [] output_shape "
                                  f"[1] : {root.type} into {flat.type} {loc}")
            self._flat[root.name] = flat
            self._root[flat.name] = root
        if len(shape) == 1:
            return flat
        cached = self._views.get((root.name, shape))
        if cached is not None:
            return cached
        out = Buf(self.fresh("v"), shape, buf.dtype)
        self._views[(root.name, shape)] = out
        self._root[out.name] = root
        if not shape:  # [1] -> rank 0: a collapse with no reassociation groups
            self.lines.append(f"    {out.name} = memref.collapse_shape {flat.name} [] : "
                              f"{flat.type} into {out.type} {loc}")
            return out
        groups = "[" + ", ".join(str(i) for i in range(len(shape))) + "]"
        self.lines.append(f"    {out.name} = memref.expand_shape {flat.name} [{groups}] output_shape "
                          f"[{', '.join(map(str, shape))}] : {flat.type} into {out.type} {loc}")
        return out

    def function_text(self, name: str, loc: str) -> str:
        params = []
        for a in self.args:
            if a.role == "constant" and self.detached is not None and a.data.size >= DETACH_MIN_ELEMENTS:
                key = a.buf.name[1:]
                self.detached[key] = np.ascontiguousarray(a.data, dtype=NUMPY_DTYPES[a.buf.dtype])
                attr = f'npu.constant = "{key}"'
            elif a.role == "constant":
                attr = f"npu.constant = {dense_hex(a.data, a.buf.dtype)}"
            else:
                attr = (f'npu.{a.role} = "{a.name}"' + (", npu.bool" if a.boolean else "")
                        + (f', npu.host_type = "{a.host_type}"' if a.host_type else ""))
            params.append(f"{a.buf.name}: {a.buf.type} {{{attr}}}" + (f" {a.loc}" if a.loc else ""))
        head = f"  func.func @{name}({', '.join(params)}) {{"
        return "\n".join(["module {", head, *self.lines, f"    return {loc}", f"  }} {loc}", "}"])


def attach_constants(func_op, detached: dict[str, np.ndarray]) -> None:
    """Replace the keys `function_text` left in `npu.constant` attributes by
    the data (built from the arrays, not parsed from text)."""
    from mlir import ir

    if not detached or "arg_attrs" not in func_op.attributes:
        return
    args = func_op.regions[0].blocks[0].arguments
    new = []
    with func_op.context, ir.Location.unknown():
        for arg, attrs in zip(args, ir.ArrayAttr(func_op.attributes["arg_attrs"])):
            attrs = ir.DictAttr(attrs)
            if "npu.constant" in attrs and isinstance(attrs["npu.constant"], ir.StringAttr):
                memref = ir.MemRefType(arg.type)
                tensor = ir.RankedTensorType.get(memref.shape, memref.element_type)
                data = detached[ir.StringAttr(attrs["npu.constant"]).value]
                attrs = ir.DictAttr.get({**{a.name: a.attr for a in attrs},
                                         "npu.constant": ir.DenseElementsAttr.get(data, type=tensor)})
            new.append(attrs)
        func_op.attributes["arg_attrs"] = ir.ArrayAttr.get(new)
