"""npu-tune's optional weight: Ray (its runner) and matplotlib (--design's
plot) come with the `tune` extra, not the base install. Without them the
tool says what to install, in one line, instead of an ImportError."""

from __future__ import annotations

import importlib
from types import ModuleType


class MissingExtra(RuntimeError):
    """A feature whose package is not installed."""


def require(module: str, feature: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(f"{feature} needs '{module}', from the optional 'tune' extra: "
                           "pip install -e '.[tune]'") from None
