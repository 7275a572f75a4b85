"""`@pytest.mark.slow` tests are skipped unless pytest runs with --runslow."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"


def _conftest():
    spec = importlib.util.spec_from_file_location("npu_test_conftest", CONFTEST)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Item:
    def __init__(self, slow: bool, node: str = "tools/test_x.py::test_x"):
        self.keywords = {"slow": True} if slow else {}
        self.markers = []
        self.path = CONFTEST.parent / node.split("::")[0]
        self.nodeid = f"test/python/{node}"

    def add_marker(self, marker):
        self.markers.append(marker)
        self.keywords[marker.name] = True


class _Config:
    def __init__(self, runslow: bool):
        self.runslow = runslow

    def getoption(self, name):
        assert name == "--runslow"
        return self.runslow


@pytest.mark.parametrize("runslow", [False, True])
def test_slow_tests_are_skipped_unless_runslow(runslow):
    slow, quick = _Item(True), _Item(False)
    _conftest().pytest_collection_modifyitems(_Config(runslow), [slow, quick])
    assert quick.markers == []
    if runslow:
        assert slow.markers == []
    else:
        (marker,) = slow.markers
        assert marker.name == "skip" and "--runslow" in marker.kwargs["reason"]


def test_this_session_skips_slow_tests_by_default(request):
    assert request.config.getoption("--runslow") in (False, True)  # the option is registered


def test_listed_cases_are_slow_and_a_stale_line_is_refused(monkeypatch):
    """slow_cases.txt marks its ids (and id prefixes) slow; a line naming a
    collected file but none of its tests stops the run."""
    conftest = _conftest()
    assert conftest._slow_cases()  # the real list is read
    monkeypatch.setattr(conftest, "_slow_cases", lambda: ["tools/test_x.py::test_a[big"])
    item, other = _Item(False, "tools/test_x.py::test_a[big-1]"), _Item(False, "tools/test_x.py::test_a[small]")
    conftest.pytest_collection_modifyitems(_Config(False), [item, other])
    assert [m.name for m in item.markers] == ["slow", "skip"] and other.markers == []

    with pytest.raises(pytest.UsageError, match="matches no test"):
        conftest.pytest_collection_modifyitems(_Config(False), [other])
    # a line for a file this run did not collect is not checked
    conftest.pytest_collection_modifyitems(_Config(False), [_Item(False, "tools/test_y.py::test_a")])
