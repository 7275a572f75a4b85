"""Pieces shared by the command-line tools."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from typing import NoReturn


def usage_error(parser: argparse.ArgumentParser, message: str) -> NoReturn:
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    sys.exit(2)


def read_input(path: str, parser: argparse.ArgumentParser) -> tuple[str, str]:
    """(display name, text) of the input file or stdin."""
    if path == "-":
        return "<stdin>", sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as f:
            return path, f.read()
    except OSError as e:
        usage_error(parser, f"cannot read '{path}': {e.strerror}")


def write_output_atomically(path: str, text: str) -> None:
    """Write all of `text` or nothing: a failed run never leaves a partial file."""
    if path == "-":
        sys.stdout.write(text)
        if text and not text.endswith("\n"):
            sys.stdout.write("\n")
        return
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".npu-tmp-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            if text and not text.endswith("\n"):
                f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
