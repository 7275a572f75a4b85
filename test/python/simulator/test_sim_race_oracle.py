"""The race detector against a brute-force oracle on random programs.

Each random program streams tiles between GM, UB and the vector unit with
random flags and barriers. The oracle builds the happens-before graph
explicitly (queue order per pipe, the pipelined V exception, flag pairs,
barriers, the scalar unit) and tests every pair of conflicting accesses for
reachability; the detector must report a race exactly when the oracle finds
an unordered pair.
"""

from __future__ import annotations

import numpy as np
import pytest

from npu.pipeline import run_pipeline
from npu.simulator import simulate
from npu.target import get_target

from sim_kernels import Kernel, gm, mem

TILE = 128  # fp16 elements = 256 bytes = 8 blocks
TILES = 4
PIPES_WITH_MEMORY = ("MTE2", "V", "MTE3")


def tile_view(k: Kernel, name: str, source: str, space: str, t: int) -> str:
    """%name = tile `t` of the TILES-tile memref %source in `space` (made once)."""
    if name not in k.types:
        typ = f'memref<{TILE}xf16, strided<[1], offset: {t * TILE}>, "{space}">'
        k.raw(f'%{name} = memref.subview %{source}[{t * TILE}] [{TILE}] [1] : '
              f'memref<{TILES * TILE}xf16, "{space}"> to {typ}')
        k.types[name] = typ
    return name


def tiled_kernel() -> tuple[Kernel, list]:
    """A kernel with UB tiles %t<i> and GM tiles %x<i>, %y<i>, and its items
    (kind, pipe, info) so far: every tile written by V, then everything
    ordered by pipe_barrier(ALL)."""
    k = Kernel([("x", gm([TILES * TILE])), ("y", gm([TILES * TILE]))])
    k.alloc("buf", mem([TILES * TILE], "f16", "ub"))
    for t in range(TILES):
        tile_view(k, f"t{t}", "buf", "ub", t)
        tile_view(k, f"x{t}", "x", "gm", t)
        tile_view(k, f"y{t}", "y", "gm", t)
    items = []
    for t in range(TILES):
        k.vector("vdup", f"t{t}", repeat=1, mask=TILE, scalar=1.0)
        items.append(("op", "V", {"w": {t}, "r": set()}))
    k.barrier("ALL")
    items.append(("barrier_all", "S", {}))
    return k, items


def tile_op(k: Kernel, items: list, pipe: str, t: int, s: int | None) -> None:
    """One memory op on `pipe`: MTE2 loads tile t, MTE3 stores it, V writes
    tile t from tile s."""
    if pipe == "MTE2":
        k.copy("gm_to_ub", f"x{t}", f"t{t}", 1, 8)
        items.append(("op", pipe, {"w": {t}, "r": set()}))
    elif pipe == "MTE3":
        k.copy("ub_to_gm", f"t{t}", f"y{t}", 1, 8)
        items.append(("op", pipe, {"w": set(), "r": {t}, "gm_w": {t}}))
    else:
        k.vector("vadds", f"t{t}", f"t{s}", repeat=1, mask=TILE, scalar=1.0)
        items.append(("op", pipe, {"w": {t}, "r": {s}}))


def random_program(seed: int):
    """(kernel, events) where events describe every dispatched item in order."""
    rng = np.random.default_rng(seed)
    k, items = tiled_kernel()
    outstanding: dict[tuple, int] = {}
    for _ in range(int(rng.integers(6, 14))):
        choice = rng.random()
        if choice < 0.45:
            pipe = PIPES_WITH_MEMORY[int(rng.integers(0, 3))]
            t = int(rng.integers(0, TILES))
            s = int(rng.integers(0, TILES)) if pipe == "V" else None
            tile_op(k, items, pipe, t, s)
        elif choice < 0.75:
            src, dst = rng.choice(PIPES_WITH_MEMORY, 2, replace=False)
            key = (str(src), str(dst), 0)
            k.set_flag(*key)
            items.append(("set", str(src), {"key": key}))
            outstanding[key] = outstanding.get(key, 0) + 1
        elif choice < 0.9 and outstanding:
            key = sorted(outstanding)[int(rng.integers(0, len(outstanding)))]
            k.wait_flag(*key)
            items.append(("wait", key[1], {"key": key}))
            outstanding[key] -= 1
            if not outstanding[key]:
                del outstanding[key]
        else:
            k.barrier("V")
            items.append(("barrier", "V", {}))
    for key, count in outstanding.items():  # consume the rest so no flag dangles
        for _ in range(count):
            k.wait_flag(*key)
            items.append(("wait", key[1], {"key": key}))
    return k, items


def synced_program(seed: int):
    """Mostly correctly synchronised programs with the odd missing order, so
    that a single wrong decision of the detector changes the verdict."""
    rng = np.random.default_rng(10_000 + seed)
    k, items = tiled_kernel()
    last: dict[int, list[tuple[str, bool]]] = {t: [] for t in range(TILES)}  # accesses since sync

    def order(src: str, dst: str) -> None:
        r = rng.random()
        if src == dst == "V":
            if r < 0.5:
                k.barrier("V")
                items.append(("barrier", "V", {}))
            elif r < 0.75:  # a set_flag does not order V after V
                k.set_flag("V", "MTE3", 1)
                items.append(("set", "V", {"key": ("V", "MTE3", 1)}))
                k.wait_flag("V", "MTE3", 1)
                items.append(("wait", "MTE3", {"key": ("V", "MTE3", 1)}))
        elif src != dst and r < 0.9:
            key = (src, dst, 2)
            k.set_flag(*key)
            items.append(("set", src, {"key": key}))
            k.wait_flag(*key)
            items.append(("wait", dst, {"key": key}))

    for _ in range(int(rng.integers(4, 10))):
        pipe = PIPES_WITH_MEMORY[int(rng.integers(0, 3))]
        t = int(rng.integers(0, TILES))
        s_ = int(rng.integers(0, TILES))
        touched = {"MTE2": [(t, True)], "MTE3": [(t, False)], "V": [(s_, False), (t, True)]}[pipe]
        for tile, write in touched:
            for q, q_write in last[tile]:
                if (write or q_write) and (q != pipe or (q == "V" and q_write and not write)):
                    order(q, pipe)
        tile_op(k, items, pipe, t, s_)
        for tile, write in touched:
            last[tile].append((pipe, write))
    return k, items


def oracle_has_race(items) -> bool:
    n = len(items)
    succ: list[set[int]] = [set() for _ in range(n)]
    last_of_pipe: dict[str, int] = {}
    v_anchor = None  # the last V wait or barrier: later V items start after it
    v_ops: list[int] = []  # V ops so far (a set or barrier waits for all of them)
    sets: dict[tuple, list[int]] = {}
    waits: dict[tuple, list[int]] = {}
    for i, (kind, pipe, info) in enumerate(items):
        if kind == "barrier_all":
            for j in range(i):
                succ[j].add(i)
            for j in range(i + 1, n):
                succ[i].add(j)
            continue
        if pipe == "V":
            # The vector pipeline orders nothing by itself: a V item follows only
            # the last V wait/barrier; a set or barrier follows every earlier V op.
            if v_anchor is not None:
                succ[v_anchor].add(i)
            if kind in ("set", "barrier"):
                for j in v_ops:
                    succ[j].add(i)
            if kind == "op":
                v_ops.append(i)
            if kind in ("wait", "barrier"):
                v_anchor = i
        else:
            prev = last_of_pipe.get(pipe)
            if prev is not None:
                succ[prev].add(i)
            last_of_pipe[pipe] = i
        if kind == "set":
            sets.setdefault(info["key"], []).append(i)
        if kind == "wait":
            waits.setdefault(info["key"], []).append(i)
    for key, ws in waits.items():
        for s, w in zip(sets[key], ws):
            succ[s].add(w)
    # Transitive closure (small n).
    reach = [set() for _ in range(n)]
    for i in reversed(range(n)):
        for j in succ[i]:
            reach[i].add(j)
            reach[i] |= reach[j]
    accesses = []  # (item, tile, write, space)
    for i, (kind, pipe, info) in enumerate(items):
        if kind != "op":
            continue
        accesses += [(i, t, False, "ub") for t in info["r"]] + [(i, t, True, "ub") for t in info["w"]]
        accesses += [(i, t, True, "gm") for t in info.get("gm_w", ())]
    for a in range(len(accesses)):
        for b in range(a + 1, len(accesses)):
            i, ti, wi, si = accesses[a]
            j, tj, wj, sj = accesses[b]
            if i == j or ti != tj or si != sj or not (wi or wj):
                continue
            pi, pj = items[i][1], items[j][1]
            if pi == pj and pi != "V":
                continue  # queue order
            if pi == pj == "V" and not (wi and not wj):
                continue  # inside V only read-after-write needs a barrier
            if j not in reach[i]:
                return True
    return False


SEEDS = range(60)


def assert_detector_matches_oracle(k: Kernel, items: list, hivm: bool = False) -> None:
    """`hivm`: run the program lowered to hivm, where every buffer is one
    address space and the detector's groups come from the operands' bytes."""
    x = np.ones(TILES * TILE, np.float16)
    module = k.parse()
    if hivm:
        run_pipeline(module, "npu-plan-memory,npu-lower-cce-to-hivm", get_target())
    res = simulate(module, [x, np.zeros_like(x)], strict=False)
    found = any(h["kind"] == "race" for h in res.hazards)
    assert found == oracle_has_race(items), (k.text(), res.hazards)


@pytest.mark.parametrize("seed", SEEDS)
def test_race_detector_matches_oracle(seed):
    assert_detector_matches_oracle(*random_program(seed))


@pytest.mark.parametrize("seed", SEEDS)
def test_race_detector_matches_oracle_on_mostly_synced_programs(seed):
    assert_detector_matches_oracle(*synced_program(seed))


@pytest.mark.parametrize("seed", SEEDS[:20])
def test_race_detector_matches_oracle_at_the_hivm_level(seed):
    assert_detector_matches_oracle(*random_program(seed), hivm=True)
    assert_detector_matches_oracle(*synced_program(seed), hivm=True)


def test_oracle_programs_cover_both_verdicts():
    for make in (random_program, synced_program):
        verdicts = [oracle_has_race(make(seed)[1]) for seed in SEEDS]
        assert 10 <= sum(verdicts) <= len(verdicts) - 10
