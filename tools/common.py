"""Pieces shared by the command-line tools."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import traceback
from typing import NoReturn


def usage_error(parser: argparse.ArgumentParser, message: str) -> NoReturn:
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    sys.exit(2)


class CommandLineError(Exception):
    """A usage problem: the tools print it as `<prog>: error: ...` and exit 2."""


def report_internal_error(where: str, what: str, e: Exception) -> int:
    """A bug in a tool (call from its `except` block): one line on stderr, the
    traceback only when NPU_DEBUG is set; returns the exit status 1."""
    if os.environ.get("NPU_DEBUG"):
        traceback.print_exc()
    print(f"{where}: error: {what}: {type(e).__name__}: {e} "
          "(set NPU_DEBUG=1 for a traceback)", file=sys.stderr)
    return 1


def read_source(path: str) -> tuple[str, str]:
    """(name used in diagnostics, text) of the input file or stdin."""
    if path == "-":
        return "<stdin>", sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as f:
            return path, f.read()
    except OSError as e:
        raise CommandLineError(f"cannot read '{path}': {e.strerror}") from None
    except UnicodeDecodeError:
        raise CommandLineError(f"cannot read '{path}': not a UTF-8 text file") from None


def read_input(path: str, parser: argparse.ArgumentParser) -> tuple[str, str]:
    """`read_source` for argparse-based tools: problems become usage errors."""
    try:
        return read_source(path)
    except CommandLineError as e:
        usage_error(parser, str(e))


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


def write_bytes_atomically(path: str, data: bytes) -> None:
    """Write all of `data` or nothing (binary outputs)."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".npu-tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
