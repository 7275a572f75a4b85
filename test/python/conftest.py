"""Shared pytest configuration for the Python-level tests.

`--runslow` enables tests marked `@pytest.mark.slow` (long randomized or
benchmark-sized runs), which are skipped by default so that the default run
stays fast. `test/python` is put on `sys.path` so tests can `import helpers`.
"""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def pytest_configure(config: pytest.Config) -> None:
    """Test folders have no __init__.py (pytest's default "prepend" import
    mode, so tests can import helper modules beside them); two test files
    with one basename would then clash with an obscure import error. Say so
    plainly instead."""
    root = os.path.dirname(os.path.abspath(__file__))
    seen: dict[str, str] = {}
    for folder, _, files in os.walk(root):
        for name in files:
            if name.startswith("test_") and name.endswith(".py"):
                path = os.path.relpath(os.path.join(folder, name), root)
                if name in seen:
                    raise pytest.UsageError(
                        f"test/python/{seen[name]} and test/python/{path} share a basename; "
                        "give test files unique names")
                seen[name] = path


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", default=False,
                     help="also run tests marked @pytest.mark.slow")


def _slow_cases() -> list[str]:
    """The node ids (or prefixes) of slow_cases.txt, relative to test/python."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "slow_cases.txt")
    with open(path) as f:
        return [line.strip() for line in f if line.strip() and not line.startswith("#")]


def _mark_slow_cases(items: list[pytest.Item]) -> None:
    """Marks the listed cases slow; a line whose file was collected but which
    matches none of its tests is an error (a renamed test or parameter)."""
    root = os.path.dirname(os.path.abspath(__file__))
    ids = {item: os.path.relpath(str(item.path), root).replace(os.sep, "/") + "::"
           + item.nodeid.split("::", 1)[1] for item in items}
    files = {node.split("::")[0] for node in ids.values()}
    for case in _slow_cases():
        matched = [item for item, node in ids.items() if node.startswith(case)]
        for item in matched:
            item.add_marker(pytest.mark.slow)
        if not matched and case.split("::")[0] in files:
            raise pytest.UsageError(f"slow_cases.txt: '{case}' matches no test")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _mark_slow_cases(items)
    if config.getoption("--runslow"):
        # Every simulator-backed lowering test also runs at the hivm level
        # (helpers.simulate_levels); by default a sample per test file does.
        os.environ["NPU_TEST_ALL_LEVELS"] = "1"
        return
    skip_slow = pytest.mark.skip(reason="slow test: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)


@pytest.fixture
def ctx():
    """A fresh context with our dialects loaded, entered for the test's duration."""
    from mlir import ir

    from npu.ir import make_context

    context = make_context()
    with context, ir.Location.unknown():
        yield context


@pytest.fixture
def target():
    """The default target preset (ascend910)."""
    from npu.target import get_target

    return get_target()


@pytest.fixture(autouse=True)
def fresh_diagnostics():
    """Each test gets its own diagnostics engine, so errors do not leak between tests."""
    from npu import diagnostics

    with diagnostics.collecting() as engine:
        yield engine
