"""A launch's scalar walk is bounded (MAX_INSTRUCTIONS, a located error on
both engines) and the compiled walk's loops answer signals. An npu-run fuzz
case whose loop bound became 10^12 ran inside the compiled walk, which never
returned to Python: no Ctrl-C, CPU timer or test timeout could stop it, and
its trace filled 10 GB in 20 s, so a --runslow fuzz session died without a
summary. Both tests fail (the second by its timeout) without the bounds."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from npu.ir import make_context, parse_module
from npu.simulator import SimulationError, compiled, program, simulate


def loop(trips: int, vector: bool = True) -> str:
    """A hivm loop of `trips` iterations; one vector instruction each, or none."""
    body = '"hivm.vadds"(%z, %z, %cfg) {dtype = f16, scalar = 2.0 : f64} : (i64, i64, i64) -> ()'
    return textwrap.dedent(f"""\
        func.func @spin(%a: memref<256xf16, "gm">) {{
          %z = arith.constant 0 : i64
          %cfg = arith.constant 144115222569812225 : i64
          %m = arith.constant -1 : i64
          %c0 = arith.constant 0 : index
          %n = arith.constant {trips} : index
          %c1 = arith.constant 1 : index
          "hivm.set_vector_mask"(%m, %m) : (i64, i64) -> ()
          scf.for %i = %c0 to %n step %c1 {{
            %j = arith.addi %i, %c1 : index
            {body if vector else ''}
          }}
          return
        }}
        """)


@pytest.mark.parametrize("engine", ["compiled", "python"])
def test_more_instructions_than_the_limit_is_a_located_error(engine, monkeypatch):
    if engine == "compiled" and not compiled.available():
        pytest.skip("npu.simulator._cengine is not built")
    monkeypatch.setenv("NPU_SIM", engine)
    monkeypatch.setattr(program, "MAX_INSTRUCTIONS", 1000)
    module = parse_module(loop(10**12), make_context())
    with pytest.raises(SimulationError) as err:
        simulate(module, [np.zeros(256, np.float16)])
    assert str(err.value) == ("-:1:1: error: unsupported: the program issues more than 1000 "
                              "instructions (every core's together); the simulator runs at "
                              "most that many")


SPIN = """
import signal, sys
import numpy as np
from npu.ir import make_context, parse_module
from npu.simulator import simulate

class Stop(Exception):
    pass

def stop(signum, frame):
    raise Stop

module = parse_module(open(sys.argv[1]).read(), make_context())
signal.signal(signal.SIGPROF, stop)
signal.setitimer(signal.ITIMER_PROF, 1.0)  # a second of CPU into the walk
try:
    simulate(module, [np.zeros(256, np.float16)])
except Stop:
    print("stopped")
"""


@pytest.mark.skipif(not compiled.available(), reason="npu.simulator._cengine is not built")
def test_a_timer_stops_a_long_loop_of_the_compiled_walk(tmp_path):
    # No instructions: the limit never comes, only the signal can end it
    # (as Ctrl-C, the fuzz harness's CPU timer or pytest-timeout would).
    path = tmp_path / "spin.mlir"
    path.write_text(loop(10**15, vector=False))
    run = subprocess.Popen([sys.executable, "-c", SPIN, str(path)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True,
                           env=dict(os.environ, NPU_SIM="compiled"))
    try:
        out, err = run.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        run.kill()
        run.communicate()
        pytest.fail("the walk did not stop within 60 s: its loop ignores signals")
    assert (run.returncode, out.strip()) == (0, "stopped"), err[-1000:]
