"""`kernel.stages`: the text of each compile stage, a stage whose module
outlives the compile (the lowered one, which the kernel holds) printed on
first read only. Printing BERT-12's lowered module on 32 cores took 0.25
CPU s of its 13.6-15 s compile, and a caller that only runs the kernel
never reads it. The compile leaves that module as it is (running the
kernel does not change it), so the text read later is the text it had."""

from __future__ import annotations

from typing import Callable, Iterator, Mapping


class Stages(Mapping[str, str]):
    """Stage name -> its text (a read-only mapping, in stage order)."""

    def __init__(self) -> None:
        self._stages: dict[str, str | Callable[[], str]] = {}

    def __setitem__(self, name: str, text: str) -> None:
        self._stages[name] = text

    def later(self, name: str, make: Callable[[], str]) -> None:
        """Stage `name`'s text is `make()`, made when first read."""
        self._stages[name] = make

    def __getitem__(self, name: str) -> str:
        text = self._stages[name]
        if not isinstance(text, str):
            text = self._stages[name] = text()
        return text

    def __iter__(self) -> Iterator[str]:
        return iter(self._stages)

    def __len__(self) -> int:
        return len(self._stages)

    def __repr__(self) -> str:
        return f"Stages({', '.join(self._stages)})"
