"""Where `-o` (and npu-run's output files) go: symlinks and special files are
written through, regular files are replaced atomically with the umask's mode."""

from __future__ import annotations

import os
import stat
import threading

import pytest

from npu.tools import npu_opt

PROGRAM = "func.func @f() {\n  return\n}\n"


@pytest.fixture
def src(tmp_path):
    path = tmp_path / "in.mlir"
    path.write_text(PROGRAM)
    return path




@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_a_new_output_file_respects_the_umask(src, tmp_path, mask, mode):
    out = tmp_path / "out.mlir"
    old = os.umask(mask)
    try:
        assert npu_opt.main([str(src), "-o", str(out)]) == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == mode
    assert "func.func @f" in out.read_text()


def test_replacing_a_file_keeps_its_mode(src, tmp_path):
    out = tmp_path / "out.mlir"
    out.write_text("old")
    out.chmod(0o640)
    assert npu_opt.main([str(src), "-o", str(out)]) == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    assert "func.func @f" in out.read_text()


def test_a_symlink_stays_a_symlink_and_its_target_is_written(src, tmp_path):
    target = tmp_path / "real.mlir"
    target.write_text("old")
    link = tmp_path / "link.mlir"
    link.symlink_to(target)
    assert npu_opt.main([str(src), "-o", str(link)]) == 0
    assert link.is_symlink()
    assert "func.func @f" in target.read_text()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".npu-tmp")] == []


def test_a_dangling_symlink_creates_its_target(src, tmp_path):
    link = tmp_path / "link.mlir"
    link.symlink_to(tmp_path / "new.mlir")
    assert npu_opt.main([str(src), "-o", str(link)]) == 0
    assert link.is_symlink() and "func.func @f" in (tmp_path / "new.mlir").read_text()


def test_a_fifo_is_written_through_not_replaced(src, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(open(fifo).read()), daemon=True)
    reader.start()
    assert npu_opt.main([str(src), "-o", str(fifo)]) == 0
    reader.join(timeout=20)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert received and "func.func @f" in received[0]


def test_a_character_device_is_written_through(src, tmp_path):
    # A private null device in the temp dir (never /dev/null itself: with the
    # bug this guards against, a root run would replace the system's device).
    device = tmp_path / "null"
    try:
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, OSError) as e:
        pytest.skip(f"cannot create a device node here: {e}")
    assert npu_opt.main([str(src), "-o", str(device)]) == 0
    assert stat.S_ISCHR(os.lstat(device).st_mode)


def test_a_failed_run_writes_nothing_through_a_symlink(tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f( {\n")
    target = tmp_path / "real.mlir"
    target.write_text("keep")
    link = tmp_path / "link.mlir"
    link.symlink_to(target)
    assert npu_opt.main([str(bad), "-o", str(link)]) == 1
    assert target.read_text() == "keep"
