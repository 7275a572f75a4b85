"""Every npu-run output/behaviour option on each kind of input: it either does
its job (the file or the output appears) or is refused with one
`npu-run: error:` line and exit 2, leaving no output file behind."""

from __future__ import annotations

import json

import onnx
import pytest
from onnx import TensorProto, helper

from npu.tools import npu_run

ASCEND = """func.func @add(%a: memref<256xf16, "gm">, %b: memref<256xf16, "gm">, %c: memref<256xf16, "gm">) {
  "ascend.add"(%a, %b, %c) : (memref<256xf16, "gm">, memref<256xf16, "gm">, memref<256xf16, "gm">) -> ()
  return
}
"""

LINALG = """#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @add(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
"""


def _onnx(path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g", [x], [y])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), path)


@pytest.fixture(params=["onnx", "linalg", "ascend"])
def program(request, tmp_path):
    if request.param == "onnx":
        path = tmp_path / "relu.onnx"
        _onnx(path)
    else:
        path = tmp_path / f"{request.param}.mlir"
        path.write_text(LINALG if request.param == "linalg" else ASCEND)
    return request.param, path


# option -> (extra argv given a tmp dir, the artefact it must produce: a path or None for stdout)
OPTIONS = {
    "--html": (lambda d: ["--html", str(d / "r.html")], "r.html"),
    "--csv": (lambda d: ["--csv", str(d / "csv")], "csv/PipeUtilization.csv"),
    "--trace": (lambda d: ["--trace", str(d / "t.json")], "t.json"),
    "-o": (lambda d: ["-o", str(d / "out.npz")], "out.npz"),
    "--json": (lambda d: ["--json"], None),
    "--serialize": (lambda d: ["--serialize"], None),
    "--emit": (lambda d: ["--emit", "cce"], None),
    "--no-numerics": (lambda d: ["--no-numerics"], None),
    "--tuning-record": (lambda d: ["--tuning-record", str(d / "rec.json")], None),
}
# what a model input (ONNX or linalg) refuses today
MODEL_REFUSED = {"--csv", "--serialize", "--emit"}


@pytest.mark.parametrize("option", sorted(OPTIONS))
def test_option_works_or_is_refused(program, option, tmp_path, capsys):
    kind, path = program
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    if option == "--tuning-record":
        from npu.passes.tuning_record import TuningRecord
        (out_dir / "rec.json").write_text(TuningRecord("ascend910").to_json())
    make_argv, artefact = OPTIONS[option]
    before = set(p.relative_to(out_dir) for p in out_dir.rglob("*"))
    code = npu_run.main([str(path), *make_argv(out_dir)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "internal error" not in captured.err, captured.err
    if kind != "ascend" and option in MODEL_REFUSED:
        lines = captured.err.strip().splitlines()
        assert code == 2, captured.err
        assert len(lines) == 1 and lines[0].startswith("npu-run: error: " + option), captured.err
        assert set(p.relative_to(out_dir) for p in out_dir.rglob("*")) == before
        return
    assert code == 0, captured.err
    if artefact is not None:
        assert (out_dir / artefact).stat().st_size > 0
    else:
        assert captured.out.strip()
    if option == "--json":
        json.loads(captured.out)


def test_model_hotspots_name_the_onnx_node(tmp_path, capsys):
    """A model's hotspots say which ONNX node (name and type), not `relu.onnx:1:1`."""
    path = tmp_path / "relu.onnx"
    _onnx(path)
    assert npu_run.main([str(path), "--json"]) == 0
    spots = json.loads(capsys.readouterr().out)["hotspots"]
    assert spots and all(h["node"] == "r (Relu)" and h["location"] == "relu.onnx:1:1" for h in spots)
    assert npu_run.main([str(path)]) == 0
    text = capsys.readouterr().out
    assert "\nr (Relu) vmaxs (V)" in text and "relu.onnx:1:1 vmaxs" not in text, text
