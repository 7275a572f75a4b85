"""Results stored as they arrive, one JSON object per line, so that an
interrupted sweep resumes: a candidate whose key is in the store is not run
again. Each line is flushed and synced before the next candidate is taken;
a torn last line (the process was killed mid-write) is ignored on reading.
"""

from __future__ import annotations

import json
import os
from typing import Any


class ResultStore:
    def __init__(self, path: str | None):
        self.path = path
        self.results: dict[str, dict[str, Any]] = {}
        self._torn = False  # the file ends inside a line: start a new one first
        if path and os.path.exists(path) and os.path.getsize(path):
            with open(path, "rb") as f:
                f.seek(-1, os.SEEK_END)
                self._torn = f.read(1) != b"\n"
            with open(path, encoding="utf-8") as f:
                for line in f:
                    try:
                        entry = json.loads(line)
                    except json.JSONDecodeError:
                        continue  # a torn line from an interrupted run
                    if isinstance(entry, dict) and "key" in entry:
                        self.results[entry["key"]] = entry

    def get(self, key: str) -> dict[str, Any] | None:
        return self.results.get(key)

    def add(self, entry: dict[str, Any]) -> None:
        self.results[entry["key"]] = entry
        if not self.path:
            return
        with open(self.path, "a", encoding="utf-8") as f:
            if self._torn:
                f.write("\n")
                self._torn = False
            f.write(json.dumps(entry, sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())
