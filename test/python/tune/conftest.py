"""One local Ray instance for every tuning test (its start-up costs seconds)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def ray_runner():
    from npu.tune.runner import RayRunner

    runner = RayRunner(workers=2, timeout=120.0)
    runner._started = False  # shared: the tests' runs must not shut it down
    yield runner
    import ray

    ray.shutdown()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """With pytest-xdist, every tuning test runs on one worker: one Ray
    instance at a time on the machine."""
    for item in items:
        if "/tune/" in str(item.path):
            item.add_marker(pytest.mark.xdist_group("ray"))
