"""npu-opt behaviour that lit cannot reach: a crashing pass, and the pieces
the driver is made of."""

from __future__ import annotations

import pytest

import npu.passes
import npu.pipeline
from npu.passes import Pass, registry
from npu.tools import npu_opt

PROGRAM = "func.func @f() {\n  return\n}\n"


class _Crashing(Pass):
    name = "npu-test-crash"
    summary = "raises an internal error"

    def run(self, module):
        raise KeyError("boom")


@pytest.fixture
def crashing_pass(monkeypatch):
    passes = dict(registry(), **{_Crashing.name: _Crashing})
    monkeypatch.setattr(npu.passes, "registry", lambda: passes)
    monkeypatch.setattr(npu.pipeline, "registry", lambda: passes)
    monkeypatch.delenv("NPU_DEBUG", raising=False)


def test_a_crashing_pass_is_one_located_line_without_traceback(crashing_pass, tmp_path, capsys):
    src = tmp_path / "in.mlir"
    src.write_text(PROGRAM)
    out = tmp_path / "out.mlir"
    code = npu_opt.main([str(src), "--canonicalize", "--npu-test-crash", "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 1
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"{src}:")
    assert "error: internal error in pass 'npu-test-crash': KeyError: 'boom'" in lines[0]
    assert not out.exists()


def test_npu_debug_shows_the_traceback(crashing_pass, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("NPU_DEBUG", "1")
    src = tmp_path / "in.mlir"
    src.write_text(PROGRAM)
    assert npu_opt.main([str(src), "--npu-test-crash"]) == 1
    assert "Traceback" in capsys.readouterr().err


def test_split_input_keeps_line_numbers():
    text = "a\n// -----\nb\nc\n  // -----  \nd\n"
    chunks = npu_opt.split_input(text, True)
    assert [(c.first_line, c.text) for c in chunks] == [(1, "a\n"), (3, "b\nc\n"), (6, "d\n")]
    assert npu_opt.split_input(text, False)[0].text == text


def test_single_dash_long_options_are_accepted():
    assert npu_opt.normalize_argv(["-split-input-file", "-o", "x", "-p", "cse", "-cse", "-o=y",
                                   "--", "-weird-file"]) == [
        "--split-input-file", "-o", "x", "-p", "cse", "--cse", "-o=y", "--", "-weird-file"]


def test_stdin_and_stdout(monkeypatch, capsys):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(
        "func.func @g(%a: i32) -> i32 {\n  %c = arith.constant 0 : i32\n"
        "  %b = arith.addi %a, %c : i32\n  return %b : i32\n}\n"))
    assert npu_opt.main(["--canonicalize"]) == 0
    out = capsys.readouterr().out
    assert "func.func @g" in out and "arith.addi" not in out


def test_stdin_errors_are_located_in_stdin(monkeypatch, capsys):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("func.func @g( {\n"))
    assert npu_opt.main([]) == 1
    assert capsys.readouterr().err.startswith("<stdin>:1:")


@pytest.mark.parametrize("args,code", [
    (["--canonicalize"], 0),
    (["--no-such-pass"], 2),  # command line
    (["-p", "builtin.module(nope)"], 2),
    (["--canonicalize=max-iterations=x"], 2),
    (["--target=ascend1"], 2),
    (["--npu-annotate-target=preset=ascend1"], 2),
])
def test_exit_codes_command_line(args, code, tmp_path, capsys):
    src = tmp_path / "in.mlir"
    src.write_text(PROGRAM)
    assert npu_opt.main([str(src)] + args) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == (0 if code == 0 else 1), err


@pytest.mark.parametrize("text", [
    "func.func @f( {\n",  # malformed
    "func.func @f() -> i32 {\n  return\n}\n",  # verifier
    'func.func @f() {\n  "cce.nope"() : () -> ()\n  return\n}\n',  # unknown op
])
def test_exit_codes_bad_input(text, tmp_path, capsys):
    src = tmp_path / "in.mlir"
    src.write_text(text)
    assert npu_opt.main([str(src)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{src}:") and len(err.strip().splitlines()) == 1, err


class _Breaking(Pass):
    """Writes an out-of-range event into every set_flag: invalid output IR."""

    name = "npu-test-break"
    summary = "produces IR that does not verify"

    def run(self, module):
        from mlir import ir

        from npu.ir import walk
        with module.context:
            for op in walk(module):
                if op.name == "cce.set_flag":
                    op.attributes["event"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 99)


SET_FLAGS = """func.func @f() {
  "cce.set_flag"() {src = "MTE2", dst = "V", event = 0 : i64} : () -> () loc("same.mlir":2:3)
  "cce.set_flag"() {src = "MTE2", dst = "V", event = 1 : i64} : () -> () loc("same.mlir":2:3)
  "cce.wait_flag"() {src = "MTE2", dst = "V", event = 0 : i64} : () -> ()
  "cce.wait_flag"() {src = "MTE2", dst = "V", event = 1 : i64} : () -> ()
  return
}
"""


def test_a_pass_that_breaks_the_ir_is_an_internal_error_said_once(monkeypatch, tmp_path, capsys):
    passes = dict(registry(), **{_Breaking.name: _Breaking})
    monkeypatch.setattr(npu.passes, "registry", lambda: passes)
    monkeypatch.setattr(npu.pipeline, "registry", lambda: passes)
    src = tmp_path / "in.mlir"
    src.write_text(SET_FLAGS)
    out = tmp_path / "out.mlir"
    assert npu_opt.main([str(src), "--npu-test-break", "-o", str(out)]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    # Two ops at one location break the same way: one line for both, then
    # the verdict that this is the compiler's fault, not the input's.
    assert len(lines) == 2, lines
    assert lines[0].startswith("same.mlir:2:3: error: ") and "'event'" in lines[0]
    assert lines[1] == (f"{src}: error: internal error: pass 'npu-test-break' produced IR that "
                        "does not verify (the error above)")
    assert not out.exists()
