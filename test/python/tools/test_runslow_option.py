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
    def __init__(self, slow: bool):
        self.keywords = {"slow": True} if slow else {}
        self.markers = []

    def add_marker(self, marker):
        self.markers.append(marker)


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
