"""Pieces shared by the command-line tools."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import traceback
from typing import NoReturn

from npu.ir import parsing


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors are one line, `<prog>: error: ...`, exit 2
    (argparse would print the whole usage block first)."""

    def error(self, message: str) -> NoReturn:
        usage_error(self, message)


def usage_error(parser: argparse.ArgumentParser, message: str) -> NoReturn:
    print(f"{parser.prog}: error: {message} (see --help)", file=sys.stderr)
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
    """`npu.ir.parsing.read_source` with its problems as usage errors (`CommandLineError`)."""
    try:
        return parsing.read_source(path)
    except parsing.SourceError as e:
        raise CommandLineError(str(e)) from None


def read_input(path: str, parser: argparse.ArgumentParser) -> tuple[str, str]:
    """`read_source` for argparse-based tools: problems become usage errors."""
    try:
        return read_source(path)
    except CommandLineError as e:
        usage_error(parser, str(e))


def check_output_path(path: str) -> None:
    """Fail before doing any work if `path` cannot be written (`-` is stdout)."""
    if path == "-":
        return
    if os.path.isdir(path):
        raise CommandLineError(f"cannot write '{path}': it is a directory")
    if os.path.exists(path) and not os.path.isfile(path):
        if not os.access(path, os.W_OK):
            raise CommandLineError(f"cannot write '{path}': permission denied")
        return  # a FIFO, a device, ...: written through
    directory = os.path.dirname(os.path.realpath(path))
    if not os.path.isdir(directory):
        raise CommandLineError(f"cannot write '{path}': no directory '{directory}'")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise CommandLineError(f"cannot write '{path}': directory '{directory}' is not writable")


def _new_file_mode() -> int:
    """What `open(path, "w")` would give a new file: 0666 minus the umask."""
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


def write_output_atomically(path: str, data: str | bytes) -> None:
    """Write all of `data` or nothing: a failed run never leaves a partial file.

    A regular file (or a symlink's target) is replaced by a rename, keeping
    the mode of the file it replaces, or 0666 minus the umask for a new one.
    A FIFO, a device or another special file cannot be renamed onto; it is
    opened and written through, once the whole output is ready.
    """
    if isinstance(data, str) and data and not data.endswith("\n"):
        data += "\n"
    if path == "-":
        if isinstance(data, str):
            sys.stdout.write(data)
        else:
            sys.stdout.flush()
            sys.stdout.buffer.write(data)
        return
    payload = data.encode("utf-8") if isinstance(data, str) else data
    real = os.path.realpath(path)  # a symlink stays a symlink: its target is written
    if os.path.exists(real) and not os.path.isfile(real):
        with open(real, "wb") as f:
            f.write(payload)
        return
    mode = os.stat(real).st_mode & 0o7777 if os.path.exists(real) else _new_file_mode()
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(real), prefix=".npu-tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
        os.chmod(tmp, mode)
        os.replace(tmp, real)
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


class MergeShapes(argparse.Action):
    """Each `--input-shape` adds its NAME=DIMS to one dict."""

    def __call__(self, parser, namespace, values, option_string=None):
        from npu.frontend.onnx_shapes import InputShapeError, parse_input_shape

        try:
            shapes = parse_input_shape(values)
        except InputShapeError as e:
            parser.error(f"argument --input-shape: {e}")
        merged = dict(getattr(namespace, self.dest) or {})
        for name, shape in shapes.items():
            if name in merged and merged[name] != shape:
                parser.error(f"argument --input-shape: input '{name}' is given two shapes")
            merged[name] = shape
        setattr(namespace, self.dest, merged)
