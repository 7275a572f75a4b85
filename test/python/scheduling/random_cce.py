"""Random cce programs over overlapping on-chip buffers, for the sync tester.

A program has a GM input and output, a few UB buffers (and an L1 / L0 chain
for the cube) at random planned offsets that may overlap, an initialisation
phase that writes every on-chip byte (so no read is uninitialised), then a
random mix of MTE2 / V / MTE3 / MTE1 / M instructions, straight-line or in
`scf.for` loops (up to two deep) whose addresses may move with the
induction variable. Everything is f16 in UB, so any byte pattern is a value.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

F16 = "f16"


@dataclass
class Buf:
    name: str
    space: str
    elems: int
    offset: int
    dtype: str = F16

    @property
    def type(self) -> str:
        return f'memref<{self.elems}x{self.dtype}, "{self.space}">'


@dataclass
class Gen:
    rng: random.Random
    gm_elems: int = 4096
    lines: list[str] = field(default_factory=list)
    ub: list[Buf] = field(default_factory=list)
    cube: dict[str, Buf] = field(default_factory=dict)  # l1, l0a, l0b, l0c, ub32
    counter: int = 0
    depth: int = 0
    ivs: list[tuple[str, int]] = field(default_factory=list)  # (name, trip count)
    loop_rate: float = 0.15  # chance that the next element of a block is a loop
    strided: bool = False  # GM copies in bursts with gaps (`gm_copy`)

    def fresh(self, prefix: str = "v") -> str:
        self.counter += 1
        return f"%{prefix}{self.counter}"

    def emit(self, text: str) -> None:
        self.lines.append("  " * (self.depth + 1) + text)

    # -- addresses -----------------------------------------------------------
    def const(self, v: int) -> str:
        name = self.fresh("c")
        self.emit(f"{name} = arith.constant {v} : index")
        return name

    def view(self, buf_name: str, buf_type: str, total: int, length: int, dtype: str,
             space: str, align_elems: int) -> tuple[str, str]:
        """A subview of `length` elements at a random (maybe iv-dependent) offset."""
        slots = (total - length) // align_elems
        base = self.rng.randint(0, max(0, slots)) * align_elems
        if self.ivs and self.rng.random() < 0.5:
            iv, trip = self.rng.choice(self.ivs)
            step = (total - length - base) // max(1, trip - 1) // align_elems * align_elems
            step = self.rng.choice([0, align_elems, step]) if step > 0 else 0
            if base + step * (trip - 1) + length <= total and step > 0:
                c = self.const(step)
                m = self.fresh()
                self.emit(f"{m} = arith.muli {iv}, {c} : index")
                b = self.const(base)
                off = self.fresh()
                self.emit(f"{off} = arith.addi {m}, {b} : index")
                t = f'memref<{length}x{dtype}, strided<[1], offset: ?>, "{space}">'
                v = self.fresh()
                self.emit(f"{v} = memref.subview {buf_name}[{off}] [{length}] [1] : {buf_type} to {t}")
                return v, t
        t = f'memref<{length}x{dtype}, strided<[1], offset: {base}>, "{space}">'
        v = self.fresh()
        self.emit(f"{v} = memref.subview {buf_name}[{base}] [{length}] [1] : {buf_type} to {t}")
        return v, t

    def ub_view(self, length: int) -> tuple[str, str]:
        candidates = [b for b in self.ub if b.elems >= length]
        b = self.rng.choice(candidates)
        return self.view(b.name, b.type, b.elems, length, F16, "ub", 16)

    def gm_view(self, arg: str, length: int) -> tuple[str, str]:
        return self.view(arg, f'memref<{self.gm_elems}xf16, "gm">', self.gm_elems, length, F16, "gm", 16)

    # -- instructions ------------------------------------------------------------
    def copy(self, kind: str, src: tuple[str, str], dst: tuple[str, str], blocks: int,
             n: int = 1, src_gap: int = 0, dst_gap: int = 0) -> None:
        self.emit(f'"cce.{kind}"({src[0]}, {dst[0]}) {{n_burst = {n} : i64, burst_len = {blocks} : i64, '
                  f"src_gap = {src_gap} : i64, dst_gap = {dst_gap} : i64}} : ({src[1]}, {dst[1]}) -> ()")

    def gm_copy(self, to_gm: bool, arg: str, blocks: int) -> None:
        """A copy between UB and GM of `blocks` blocks; with `strided`, often
        in 2 or 3 bursts with gaps on the GM side (as a conv's band of an
        NC1HWC0 map), which other strided copies may interleave."""
        n, gap = 1, 0
        if self.strided and blocks > 1 and self.rng.random() < 0.7:
            n = self.rng.choice([d for d in (2, 3, 4) if blocks % d == 0])
            gap = self.rng.choice([1, 2, blocks // n, 3 * blocks // n])
        run = blocks // n
        hull = (n * run + (n - 1) * gap) * 16
        if to_gm:
            ub = self.ub_view(blocks * 16)
            self.copy("copy_ub_to_gm", ub, self.gm_view(arg, hull), run, n, 0, gap)
        else:
            gm = self.gm_view(arg, hull)
            self.copy("copy_gm_to_ub", gm, self.ub_view(blocks * 16), run, n, gap, 0)

    def vector(self) -> None:
        repeat = self.rng.randint(1, 2)
        n = repeat * 128
        kind = self.rng.choice(["vadd", "vmuls", "vexp", "vdup", "vmax"])
        common = (f"repeat = {repeat} : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, "
                  f"dst_rep_stride = 8 : i64")
        dst = self.ub_view(n)
        if kind in ("vadd", "vmax"):
            a, b = self.ub_view(n), self.ub_view(n)
            self.emit(f'"cce.{kind}"({dst[0]}, {a[0]}, {b[0]}) {{{common}, src0_blk_stride = 1 : i64, '
                      f"src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64}}"
                      f" : ({dst[1]}, {a[1]}, {b[1]}) -> ()")
        elif kind == "vdup":
            self.emit(f'"cce.vdup"({dst[0]}) {{{common}, scalar = 0.5 : f64}} : ({dst[1]}) -> ()')
        else:
            a = self.ub_view(n)
            extra = ", scalar = 0.5 : f64" if kind == "vmuls" else ""
            self.emit(f'"cce.{kind}"({dst[0]}, {a[0]}) {{{common}, src_blk_stride = 1 : i64, '
                      f"src_rep_stride = 8 : i64{extra}}} : ({dst[1]}, {a[1]}) -> ()")

    def fixed_view(self, b: Buf, length: int, align: int) -> tuple[str, str]:
        return self.view(b.name, b.type, b.elems, length, b.dtype, b.space, align)

    def cube_instruction(self) -> None:
        """One of MTE2 -> L1, MTE3 UB -> L1, MTE1 L1 -> L0A/L0B, M mad, V L0C -> UB."""
        c = self.cube
        kind = self.rng.choice(["gm_to_l1", "ub_to_l1", "l0a", "l0b", "mad", "mad", "l0c_to_ub"])
        if kind == "gm_to_l1":
            blocks = self.rng.choice([8, 16, 32])
            self.copy("copy_gm_to_l1", self.gm_view("%in", blocks * 16),
                      self.fixed_view(c["l1"], blocks * 16, 16), blocks)
        elif kind == "ub_to_l1":
            blocks = self.rng.choice([8, 16])
            self.copy("copy_ub_to_l1", self.ub_view(blocks * 16),
                      self.fixed_view(c["l1"], blocks * 16, 16), blocks)
        elif kind in ("l0a", "l0b"):
            rep = self.rng.randint(1, 2)
            src = self.fixed_view(c["l1"], 256 * rep, 256)
            dst = self.fixed_view(c[kind], 256 * rep, 256)
            tr = "true" if kind == "l0b" and self.rng.random() < 0.5 else "false"
            self.emit(f'"cce.load_l1_to_{kind}"({src[0]}, {dst[0]}) {{repeat = {rep} : i64, '
                      f"src_stride = 1 : i64, dst_stride = 1 : i64, transpose = {tr}}} : "
                      f"({src[1]}, {dst[1]}) -> ()")
        elif kind == "mad":
            a = self.fixed_view(c["l0a"], 256, 256)
            b = self.fixed_view(c["l0b"], 256, 256)
            o = self.fixed_view(c["l0c"], 256, 256)
            acc = "true" if self.rng.random() < 0.5 else "false"
            self.emit(f'"cce.mad"({a[0]}, {b[0]}, {o[0]}) {{m = 16 : i64, n = 16 : i64, k = 16 : i64, '
                      f"accumulate = {acc}}} : ({a[1]}, {b[1]}, {o[1]}) -> ()")
        else:
            self.copy("copy_l0c_to_ub", self.fixed_view(c["l0c"], 256, 256),
                      self.fixed_view(c["ub32"], 256, 8), 32)

    def instruction(self) -> None:
        if self.cube and self.rng.random() < 0.35:
            self.cube_instruction()
            return
        r = self.rng.random()
        blocks = self.rng.choice([1, 2, 4, 8])
        n = blocks * 16
        if r < 0.3:
            self.gm_copy(False, "%in" if self.rng.random() < 0.6 else "%out", blocks)
        elif r < 0.5:
            self.gm_copy(True, "%out", blocks)
        elif r < 0.6:
            self.copy("copy_ub_to_ub", self.ub_view(n), self.ub_view(n), blocks)
        else:
            self.vector()

    def block(self, size: int) -> None:
        for _ in range(size):
            if self.depth < 2 and self.rng.random() < self.loop_rate:
                self.loop()
            else:
                self.instruction()

    def loop(self) -> None:
        trip = self.rng.randint(2, 4)
        lb, ub, st = self.const(0), self.const(trip), self.const(1)
        iv = self.fresh("i")
        self.emit(f"scf.for {iv} = {lb} to {ub} step {st} {{")
        self.depth += 1
        self.ivs.append((iv, trip))
        self.block(self.rng.randint(2, 6))
        self.ivs.pop()
        self.depth -= 1
        self.emit("}")


def random_program(seed: int, length: int = 12, ub_bytes: int = 8192, cube: bool | None = None,
                   loop_rate: float = 0.15, strided: bool = False) -> str:
    """Text of `func.func @k(%in, %out)`; ub buffers overlap at random planned
    offsets; `loop_rate`: how often a block's next element is a loop (higher:
    more loops one after another, as npu-insert-sync's loop chains need);
    `strided`: GM copies in bursts with gaps (`Gen.gm_copy`)."""
    rng = random.Random(seed)
    g = Gen(rng, loop_rate=loop_rate, strided=strided)
    nbuf = rng.randint(2, 4)
    for i in range(nbuf):
        elems = rng.choice([256, 512, 1024])
        offset = rng.randrange(0, ub_bytes - elems * 2 + 1, 32)
        b = Buf(f"%ub{i}", "ub", elems, offset)
        g.ub.append(b)
        g.emit(f"{b.name} = memref.alloc() {{npu.offset = {offset} : i64}} : {b.type}")
    if cube if cube is not None else rng.random() < 0.5:
        # an L1 -> L0A/L0B -> L0C chain, and an f32 view of UB that overlaps
        # the f16 buffers (L0C results land in bytes vector ops then read)
        for name, space, elems, dtype in (("l1", "l1", 2048, F16), ("l0a", "l0a", 1024, F16),
                                          ("l0b", "l0b", 1024, F16), ("l0c", "l0c", 1024, "f32"),
                                          ("ub32", "ub", 512, "f32")):
            off = rng.randrange(0, ub_bytes - 2048 + 1, 32) if space == "ub" else 0
            b = Buf(f"%{name}", space, elems, off, dtype)
            g.cube[name] = b
            g.emit(f"{b.name} = memref.alloc() {{npu.offset = {off} : i64}} : {b.type}")
    # initialise every byte of UB the buffers cover
    for b in g.ub:
        blocks = b.elems // 16
        g.copy("copy_gm_to_ub", (f"%in", f'memref<{g.gm_elems}xf16, "gm">') if b.elems == g.gm_elems
               else g.view("%in", f'memref<{g.gm_elems}xf16, "gm">', g.gm_elems, b.elems, F16, "gm", 16),
               (b.name, b.type), blocks)
    if g.cube:
        c = g.cube
        g.copy("copy_gm_to_l1", g.gm_view("%in", 2048), (c["l1"].name, c["l1"].type), 128)
        for k in ("l0a", "l0b"):
            t = 'memref<1024xf16, strided<[1]>, "l1">'
            src = (g.fresh(), t)
            g.emit(f"{src[0]} = memref.subview {c['l1'].name}[0] [1024] [1] : {c['l1'].type} to {t}")
            g.emit(f'"cce.load_l1_to_{k}"({src[0]}, {c[k].name}) {{repeat = 4 : i64, src_stride = 1 : i64, '
                   f'dst_stride = 1 : i64, transpose = false}} : ({src[1]}, {c[k].type}) -> ()')
        for i in range(4):
            t = f'memref<256xf32, strided<[1], offset: {i * 256}>, "l0c">'
            o = (g.fresh(), t)
            g.emit(f"{o[0]} = memref.subview {c['l0c'].name}[{i * 256}] [256] [1] : {c['l0c'].type} to {t}")
            g.emit(f'"cce.mad"({c["l0a"].name}, {c["l0b"].name}, {o[0]}) {{m = 16 : i64, n = 16 : i64, '
                   f'k = 16 : i64, accumulate = false}} : ({c["l0a"].type}, {c["l0b"].type}, {o[1]}) -> ()')
    g.block(length)
    body = "\n".join(g.lines)
    t = f'memref<{g.gm_elems}xf16, "gm">'
    return f"func.func @k(%in: {t}, %out: {t}) {{\n{body}\n  return\n}}\n"
