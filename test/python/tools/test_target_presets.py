"""The target presets: complete, and with the sizes their sources give."""

from __future__ import annotations

import dataclasses

import pytest

from npu.target import (KIB, MIB, ON_CHIP_BUFFERS, PATH_PIPES, PIPES, PRESETS, MEMORY_SPACES,
                        UnknownTargetError, get_target)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_describes_every_buffer_and_path(name):
    t = get_target(name)
    assert t.name == name
    for buf in ON_CHIP_BUFFERS:
        assert t.capacity(buf) > 0
        assert t.capacity(buf) % t.granule(buf) == 0, buf
    for space in MEMORY_SPACES:
        assert t.granule(space) >= 1
    assert set(t.paths) == set(PATH_PIPES)
    for path_name, path in t.paths.items():
        assert path.bytes_per_cycle > 0 and path.latency >= 0, path_name
        assert PATH_PIPES[path_name] in PIPES
    for op_class in ("simple", "transcendental", "convert", "reduce"):
        assert t.vector_cycles(op_class) >= 1
    assert t.events_per_pipe_pair >= 1 and t.cores >= 1 and t.clock_ghz > 0


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_number_says_where_it_comes_from(name):
    t = get_target(name)
    assert t.sources, "a preset without sources"
    cited = " ".join(t.sources)
    for f in dataclasses.fields(t):
        if f.name in ("name", "sources"):
            continue
        assert f.name in cited, f"no source given for '{f.name}' of {name}"


def test_ascend910_has_the_thesis_buffer_sizes():
    t = get_target("ascend910")
    assert (t.capacity("l1"), t.capacity("l0a"), t.capacity("l0b"), t.capacity("l0c"),
            t.capacity("ub")) == (1 * MIB, 64 * KIB, 64 * KIB, 256 * KIB, 256 * KIB)


def test_ascend910b_sizes():
    t = get_target("ascend910b")
    assert (t.capacity("l1"), t.capacity("l0c"), t.capacity("ub")) == (512 * KIB, 128 * KIB, 192 * KIB)
    assert (t.capacity("l0a"), t.capacity("l0b")) == (64 * KIB, 64 * KIB)


def test_granules_and_fractals():
    t = get_target()
    assert t.name == "ascend910"  # the default
    assert (t.granule("l1"), t.granule("ub")) == (32, 32)
    assert (t.granule("l0a"), t.granule("l0b"), t.granule("l0c")) == (512, 512, 512)
    assert t.fractal_bytes(2) == 512 and t.fractal_bytes(1) == 512 and t.fractal_bytes(4) == 1024
    assert t.lanes(2) == 128 and t.lanes(4) == 64


def test_unknown_preset_names_the_known_ones():
    with pytest.raises(UnknownTargetError, match="unknown target preset 'ascend9000' "
                                                 r"\(known: ascend910, ascend910b, ascend310\)"):
        get_target("ascend9000")


def test_the_documented_preset_table_matches_the_presets():
    """docs/targets.md shows the buffer sizes; they must be the ones the code uses."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[3] / "docs" / "targets.md").read_text()
    rows = re.findall(r"^\| `(ascend\w+)` \| (.+?) \| (.+?) \| (.+?) \| (.+?) \| (.+?) \| (\d+) \|",
                      readme, re.M)
    assert {r[0] for r in rows} == set(PRESETS)

    def size(text):
        number, unit = text.split()
        return int(number) * {"KiB": KIB, "MiB": MIB}[unit]

    for name, *sizes, cores in rows:
        t = get_target(name)
        assert [size(s) for s in sizes] == [t.capacity(b) for b in ("l1", "l0a", "l0b", "l0c", "ub")], name
        assert int(cores) == t.cores, name
