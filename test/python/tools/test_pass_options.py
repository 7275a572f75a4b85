"""Pass options: MLIR's `key=value` syntax and typed parsing with clear errors."""

from __future__ import annotations

import pytest

from npu.passes import OptionError, Pass, registry
from npu.passes.base import Option, split_options


def test_split_options_pairs_quotes_and_braces():
    assert split_options("") == []
    assert split_options("a=1 b=two") == [("a", "1"), ("b", "two")]
    assert split_options("  a=1   b=2 ") == [("a", "1"), ("b", "2")]
    assert split_options("sizes=1,2,3") == [("sizes", "1,2,3")]  # commas belong to list values
    assert split_options('name="x y" list={1,2,3} flag') == [
        ("name", "x y"), ("list", "1,2,3"), ("flag", None)]
    assert split_options("tile-m=256") == [("tile-m", "256")]


def test_split_options_rejects_garbage():
    with pytest.raises(OptionError, match="malformed pass options"):
        split_options("=3")


@pytest.mark.parametrize("opt,text,value", [
    (Option("n", int, 0, ""), "42", 42),
    (Option("n", int, 0, ""), "0x10", 16),
    (Option("x", float, 0.0, ""), "0.25", 0.25),
    (Option("b", bool, False, ""), "true", True),
    (Option("b", bool, False, ""), "0", False),
    (Option("b", bool, False, ""), "", True),  # a bare flag turns it on
    (Option("s", str, "", "", choices=("os", "ws")), "ws", "ws"),
])
def test_typed_values(opt, text, value):
    assert opt.parse(text) == value


@pytest.mark.parametrize("opt,text,message", [
    (Option("n", int, 0, ""), "many", "expected an integer, got 'many'"),
    (Option("n", int, 0, ""), "1.5", "expected an integer, got '1.5'"),
    (Option("x", float, 0.0, ""), "fast", "expected a number, got 'fast'"),
    (Option("b", bool, False, ""), "maybe", "expected a boolean, got 'maybe'"),
    (Option("s", str, "", "", choices=("os", "ws")), "is", "expected one of os, ws, got 'is'"),
    (Option("k", int, 0, "", choices=(1, 2)), "3", "expected one of 1, 2, got '3'"),
])
def test_typed_value_errors(opt, text, message):
    with pytest.raises(ValueError, match=message):
        opt.parse(text)


class _Toy(Pass):
    name = "toy"
    summary = "for tests"
    options = (Option("tile-m", int, 16, "rows"), Option("mode", str, "a", "", choices=("a", "b")))

    def run(self, module):  # pragma: no cover - never run
        pass


def test_options_become_attributes_with_defaults(target):
    p = _Toy.from_option_string("tile-m=64", target)
    assert (p.tile_m, p.mode, p.name, p.target) == (64, "a", "toy", target)
    assert _Toy.from_option_string("", target).tile_m == 16


def test_option_errors_name_the_pass_and_the_option(target):
    with pytest.raises(OptionError, match=r"pass 'toy' has no option 'tile-n' \(options: tile-m, mode\)"):
        _Toy.from_option_string("tile-n=3", target)
    with pytest.raises(OptionError, match="bad value for option 'mode' of pass 'toy': expected one of a, b"):
        _Toy.from_option_string("mode=c", target)
    with pytest.raises(OptionError, match="has no option"):
        _Toy(target, colour="red")


def test_every_registered_pass_is_well_formed():
    passes = registry()
    assert "npu-annotate-target" in passes
    for name, cls in passes.items():
        assert cls.name == name and name.startswith("npu-"), name
        assert cls.summary, f"{name} has no summary"
        reserved = {"name", "summary", "options", "target", "run"}
        for opt in cls.options:
            assert opt.name.replace("-", "_") not in reserved, f"{name}: option '{opt.name}' shadows Pass.{opt.name}"
            assert opt.help, f"{name}: option '{opt.name}' has no help"
            if opt.choices and opt.default not in ("", None):
                assert opt.default in opt.choices, f"{name}: default of '{opt.name}' is not a choice"
        cls()  # constructible with defaults only
