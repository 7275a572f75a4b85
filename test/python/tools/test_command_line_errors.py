"""Command-line mistakes in npu-opt and npu-run: one line, the tool's prefix,
exit code 2, no traceback, and found before any compile or simulation."""

from __future__ import annotations

import numpy as np
import pytest

import npu.simulator
from npu.tools import npu_opt, npu_run

ADD = """func.func @add(%a: memref<256xf16, "gm">, %b: memref<256xf16, "gm">, %c: memref<256xf16, "gm">) {
  "ascend.add"(%a, %b, %c) : (memref<256xf16, "gm">, memref<256xf16, "gm">, memref<256xf16, "gm">) -> ()
  return
}
"""


@pytest.fixture
def src(tmp_path):
    path = tmp_path / "add.mlir"
    path.write_text(ADD)
    return path


@pytest.fixture
def no_simulation(monkeypatch):
    """Fail the test if the tool gets as far as simulating."""
    def refuse(*args, **kwargs):
        raise AssertionError("simulated before checking the command line")
    monkeypatch.setattr(npu.simulator, "simulate", refuse)


def exit_code(main, argv: list[str]) -> int:
    """The tool's exit status, whether it returns it or exits (argparse)."""
    try:
        return main(argv)
    except SystemExit as e:
        return e.code


def one_line(capsys, prefix: str) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(prefix), err
    assert "Traceback" not in err and "internal error" not in err
    return lines[0]


@pytest.mark.parametrize("args, message", [
    (["--seed", "-1"], "argument --seed: must be in [0, 2**64), got -1"),
    (["--seed", "x"], "argument --seed: expected an integer, got 'x'"),
    (["--seed"], "argument --seed: expected one argument"),
    (["--pipeline", "npu-lower)"], "invalid pass pipeline: unbalanced ')'"),
    (["--pipeline", "bogus"], "invalid pass pipeline: unknown pass 'bogus'"),
    (["--pipeline", "npu-lower{strategy=zz}"], "bad value for option 'strategy'"),
    (["--target", "ascend999"], "unknown target preset 'ascend999'"),
    (["--trace", "{tmp}/missing/t.json"], "cannot write '{tmp}/missing/t.json': no directory"),
    (["-o", "{tmp}/missing/o.npz"], "cannot write '{tmp}/missing/o.npz': no directory"),
    (["--html", "{tmp}"], "cannot write '{tmp}': it is a directory"),
    (["--csv", "{tmp}/add.mlir"], "cannot write CSVs into '{tmp}/add.mlir': not a directory"),
    (["--csv", "{tmp}/missing/deeper"], "no directory"),
])
def test_npu_run_usage_errors(src, tmp_path, capsys, no_simulation, args, message):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    assert exit_code(npu_run.main, [str(src)] + args) == 2
    line = one_line(capsys, "npu-run: error: ")
    assert message.replace("{tmp}", str(tmp_path)) in line


def test_npu_run_rejects_an_npz_with_an_object_array(src, tmp_path, capsys, no_simulation):
    bad = tmp_path / "in.npz"
    np.savez(bad, arg0=np.array([1, "a"], dtype=object), arg1=np.zeros(256, np.float16),
             arg2=np.zeros(256, np.float16))
    assert npu_run.main([str(src), "--inputs", str(bad)]) == 1
    line = one_line(capsys, f"{src}: error: cannot read inputs '{bad}'")
    assert "allow_pickle" in line or "object" in line


@pytest.mark.parametrize("content", [b"not a zip", b"", np.lib.format.MAGIC_PREFIX + b"\x01\x00"])
def test_npu_run_rejects_unreadable_inputs(src, tmp_path, capsys, no_simulation, content):
    bad = tmp_path / "in.npz"
    bad.write_bytes(content)
    assert npu_run.main([str(src), "--inputs", str(bad)]) == 1
    one_line(capsys, f"{src}: error: cannot read inputs '{bad}'")


def test_npu_run_rejects_a_bare_npy(src, tmp_path, capsys, no_simulation):
    bad = tmp_path / "in.npy"
    np.save(bad, np.zeros(256, np.float16))
    assert npu_run.main([str(src), "--inputs", str(bad)]) == 1
    assert "not an .npz archive" in one_line(capsys, f"{src}: error: cannot read inputs")


def test_npu_run_writes_npz_output_whole(src, tmp_path, capsys):
    out = tmp_path / "o.npz"
    assert npu_run.main([str(src), "--seed", "7", "-o", str(out)]) == 0
    saved = np.load(out)
    np.testing.assert_array_equal(saved["arg2"], saved["arg0"] + saved["arg1"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["add.mlir", "o.npz"]


def test_check_on_lowered_ops_names_the_file(tmp_path, capsys):
    path = tmp_path / "mixed.mlir"
    path.write_text('func.func @f(%a: memref<256xf16, "gm">, %b: memref<256xf16, "gm">) {\n'
                    '  %u = memref.alloc() : memref<256xf16, "ub">\n'
                    '  "ascend.add"(%a, %a, %b) : (memref<256xf16, "gm">, memref<256xf16, "gm">, '
                    'memref<256xf16, "gm">) -> ()\n  return\n}\n')
    assert npu_run.main([str(path), "--check"]) == 1
    line = one_line(capsys, f"{path}:2:")
    assert not line.startswith("-:")


@pytest.mark.parametrize("pipeline, message", [
    ("npu-lower{fractalize=bogus}", "bad value for option 'fractalize' of pass 'npu-lower': "
     "expected one of '', naive, fill-ub, got 'bogus'"),
    ("npu-lower{strategy=zz}", "bad value for option 'strategy' of pass 'npu-lower': "
     "expected one of '', os, is, ws, auto, got 'zz'"),
    ("npu-lower{ub-fraction=-1}", "expected a value in [0, 1], got '-1'"),
    ("npu-lower{ub-fraction=nan}", "expected a finite number, got 'nan'"),
    ("npu-lower{ub-fraction=inf}", "expected a finite number, got 'inf'"),
    ("npu-lower-reduce{ub-fraction=1.5}", "expected a value in (0, 1], got '1.5'"),
    ("npu-lower{m=-16}", "expected a value in [0, inf), got '-16'"),
    ("npu-lower{m}", "expected 'm=<int>', got no value"),
    ("npu-lower-matmul{strategy=xx}", "expected one of os, is, ws, auto, got 'xx'"),
    ("gpu.module(cse)", "nested pipeline 'gpu.module(cse)' runs on 'gpu.module' ops"),
    ("npu-plan-memory{algorithm=best}", "expected one of"),
])
def test_npu_opt_rejects_bad_options_up_front(src, capsys, pipeline, message):
    # The program has no matmul: strategy=zz used to be ignored silently.
    assert npu_opt.main([str(src), "-p", pipeline]) == 2
    assert message in one_line(capsys, "npu-opt: error: invalid pass pipeline: ")


def test_pass_flags_get_the_same_checks(src, capsys):
    assert npu_opt.main([str(src), "--npu-lower=strategy=zz"]) == 2
    assert "expected one of '', os, is, ws, auto, got 'zz'" in one_line(capsys, "npu-opt: error: ")


def test_direct_construction_is_checked_too():
    from npu.passes import OptionError, registry

    with pytest.raises(OptionError, match="expected a value in \\(0, 1\\], got '0.0'"):
        registry()["npu-lower-elementwise"](ub_fraction=0.0)
    with pytest.raises(OptionError, match="expected one of"):
        registry()["npu-lower"](fractalize="bogus")


@pytest.mark.parametrize("argv", [["-o"], ["--pass-pipeline"], ["--target"], ["--bogus-flag"]])
def test_npu_opt_option_without_value_is_one_line(src, capsys, argv):
    assert exit_code(npu_opt.main, [str(src)] + argv) == 2
    line = one_line(capsys, "npu-opt: error: ")
    assert "usage:" not in line


def test_good_options_still_pass(src, tmp_path):
    out = tmp_path / "o.mlir"
    # (options acting on the add: a matmul's would be refused, `npu.passes.applies.OnOps`)
    assert npu_opt.main([str(src), "-p", "npu-lower{ub-fraction=0.25 plan=greedy-by-size "
                         "max-chunk=128 double-buffer}", "-o", str(out)]) == 0
    assert ".vadd\"" in out.read_text()  # cce or hivm, as npu-lower emits
    assert npu_opt.main([str(src), "-p", "func.func(cse),any(canonicalize)", "-o", str(out)]) == 0


def test_overflow_and_nan_are_results_not_warnings(tmp_path, capsys):
    """f16 division by tiny numbers overflows to inf, 0/0 is NaN: both are
    values, compared as such, and npu-run prints no numpy warning."""
    import warnings

    t = 'memref<256xf16, "gm">'
    src = tmp_path / "div.mlir"
    src.write_text(f'func.func @d(%a: {t}, %b: {t}, %c: {t}) {{\n'
                   f'  "ascend.div"(%a, %b, %c) : ({t}, {t}, {t}) -> ()\n  return\n}}\n')
    a = np.full(256, 60000, np.float16)
    a[:8] = 0
    b = np.full(256, 1e-3, np.float16)
    b[:8] = 0
    inputs = tmp_path / "in.npz"
    np.savez(inputs, arg0=a, arg1=b, arg2=np.zeros(256, np.float16))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert npu_run.main([str(src), "--inputs", str(inputs), "--check", "-o",
                             str(tmp_path / "o.npz")]) == 0
    out = np.load(tmp_path / "o.npz")["arg2"]
    assert np.isnan(out[:8]).all() and np.isinf(out[8:]).all()
    assert "check: passed" in capsys.readouterr().out


def test_npu_run_rejects_inputs_that_contradict_a_constant(tmp_path, capsys, no_simulation):
    t = 'memref<256xf16, "gm">'
    src = tmp_path / "bias.mlir"
    src.write_text(f'func.func @b(%a: {t}, %w: {t} {{npu.constant = dense<1.5> : tensor<256xf16>}},'
                   f' %c: {t}) {{\n  "ascend.add"(%a, %w, %c) : ({t}, {t}, {t}) -> ()\n  return\n}}\n')
    inputs = tmp_path / "in.npz"
    np.savez(inputs, arg0=np.ones(256, np.float16), arg1=np.full(256, 2.5, np.float16),
             arg2=np.zeros(256, np.float16))
    assert npu_run.main([str(src), "--inputs", str(inputs)]) == 1
    one_line(capsys, f"{src}: error: input 'arg1' differs from the data of argument #1, an "
             "npu.constant the program was compiled for")
