"""Write small cce kernels as MLIR text (generic op form) for the tests,
and draw random fp16 inputs for them."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from npu.ir import make_context, parse_module

COPY = ("n_burst", "burst_len", "src_gap", "dst_gap")
# The seeded generator behind f16, shared by the simulator tests that draw
# their random inputs here.
RNG = np.random.default_rng(1234)


def attr_text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value} : i64"
    if isinstance(value, float):
        return f"{value!r} : f64"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, (list, tuple)):
        return f"array<i64: {', '.join(str(int(v)) for v in value)}>"
    raise TypeError(value)


@dataclass
class Kernel:
    """A func.func under construction; `line_of(tag)` finds an op's line."""

    args: list[tuple[str, str]]  # (name, memref type)
    name: str = "kernel"
    lines: list[str] = field(default_factory=list)
    types: dict[str, str] = field(default_factory=dict)
    tags: dict[str, int] = field(default_factory=dict)
    indent: int = 1

    def __post_init__(self) -> None:
        for n, t in self.args:
            self.types[n] = t

    def emit(self, text: str, tag: str | None = None) -> None:
        self.lines.append("  " * self.indent + text)
        if tag:
            # +2: the func.func line comes first, and lines are 1-based.
            self.tags[tag] = len(self.lines) + 1

    def alloc(self, name: str, type_: str, offset: int | None = None) -> str:
        attrs = f" {{npu.offset = {offset} : i64}}" if offset is not None else ""
        self.types[name] = type_
        self.emit(f"%{name} = memref.alloc(){attrs} : {type_}")
        return name

    def const(self, name: str, value: int) -> str:
        self.types[name] = "index"
        self.emit(f"%{name} = arith.constant {value} : index")
        return name

    def raw(self, text: str, tag: str | None = None) -> None:
        self.emit(text, tag)

    def op(self, name: str, *operands: str, tag: str | None = None, **attrs) -> None:
        ops = ", ".join(f"%{o}" for o in operands)
        types = ", ".join(self.types[o] for o in operands)
        attr = ", ".join(f"{k} = {attr_text(v)}" for k, v in attrs.items())
        self.emit(f'"cce.{name}"({ops}) {{{attr}}} : ({types}) -> ()', tag)

    def copy(self, path: str, src: str, dst: str, n_burst: int, burst_len: int,
             src_gap: int = 0, dst_gap: int = 0, tag: str | None = None) -> None:
        self.op(f"copy_{path}", src, dst, tag=tag, n_burst=n_burst, burst_len=burst_len,
                src_gap=src_gap, dst_gap=dst_gap)

    def vector(self, name: str, *operands: str, repeat: int, mask: int, tag: str | None = None,
               blk: int = 1, rep: int = 8, **extra) -> None:
        roles = {1: ["dst"], 2: ["dst", "src"], 3: ["dst", "src0", "src1"]}[len(operands)]
        strides = {}
        for r in roles:
            strides[f"{r}_blk_stride"] = extra.pop(f"{r}_blk_stride", blk)
            strides[f"{r}_rep_stride"] = extra.pop(f"{r}_rep_stride", rep)
        self.op(name, *operands, tag=tag, repeat=repeat, mask=mask, **strides, **extra)

    def set_flag(self, src: str, dst: str, event: int = 0, tag: str | None = None) -> None:
        self.emit(f'"cce.set_flag"() {{src = "{src}", dst = "{dst}", event = {event} : i64}} : () -> ()', tag)

    def wait_flag(self, src: str, dst: str, event: int = 0, tag: str | None = None) -> None:
        self.emit(f'"cce.wait_flag"() {{src = "{src}", dst = "{dst}", event = {event} : i64}} : () -> ()', tag)

    def sync(self, src: str, dst: str, event: int = 0) -> None:
        self.set_flag(src, dst, event)
        self.wait_flag(src, dst, event)

    def barrier(self, pipe: str, tag: str | None = None) -> None:
        self.emit(f'"cce.pipe_barrier"() {{pipe = "{pipe}"}} : () -> ()', tag)

    def text(self) -> str:
        sig = ", ".join(f"%{n}: {t}" for n, t in self.args)
        return "\n".join([f"func.func @{self.name}({sig}) {{", *self.lines, "  return", "}", ""])

    def parse(self):
        return parse_module(self.text(), make_context())


def gm(shape, dtype: str = "f16") -> str:
    dims = "x".join(str(d) for d in shape)
    return f'memref<{dims}x{dtype}, "gm">'


def mem(shape, dtype: str, space: str) -> str:
    dims = "x".join(str(d) for d in shape)
    return f'memref<{dims}x{dtype}, "{space}">'


def nz(x: np.ndarray) -> np.ndarray:
    """ND (R, C) -> Nz [C/16, R/16, 16, 16]: dst[i][j][k][l] = src[j*16+k][i*16+l]."""
    r, c = x.shape
    return x.reshape(r // 16, 16, c // 16, 16).transpose(2, 0, 1, 3).copy()


def from_nz(x: np.ndarray) -> np.ndarray:
    c1, r1, _, _ = x.shape
    return x.transpose(1, 2, 0, 3).reshape(r1 * 16, c1 * 16)


def f16(*shape) -> np.ndarray:
    return RNG.uniform(-2, 2, shape).astype(np.float16)
