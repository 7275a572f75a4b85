"""Textual pipelines: parsing, and running Python and upstream passes together."""

from __future__ import annotations

import pytest

from npu.ir import make_context, parse_module
from npu.pipeline import PipelineElement, PipelineError, build_pass_manager, parse_pipeline, \
    run_pipeline

PROGRAM = """func.func @f(%a: i32) -> (i32, i32) {
  %c0 = arith.constant 0 : i32
  %b = arith.addi %a, %c0 : i32
  %m1 = arith.muli %b, %b : i32
  %m2 = arith.muli %b, %b : i32
  return %m1, %m2 : i32, i32
}"""


def test_builtin_module_wrapper_and_bare_lists_parse_alike():
    wrapped = parse_pipeline("builtin.module(canonicalize, cse)")
    bare = parse_pipeline("canonicalize,cse")
    assert [e.name for e in wrapped] == [e.name for e in bare] == ["canonicalize", "cse"]


def test_options_and_nested_pipelines_stay_whole():
    elements = parse_pipeline(
        "builtin.module(npu-annotate-target{preset=ascend910b override=true},"
        "func.func(cse,canonicalize{max-iterations=2}),symbol-dce)")
    assert elements[0] == PipelineElement("npu-annotate-target", "preset=ascend910b override=true",
                                          "npu-annotate-target{preset=ascend910b override=true}")
    assert elements[1].text == "func.func(cse,canonicalize{max-iterations=2})"
    assert elements[1].options == ""
    assert elements[2].name == "symbol-dce"


def test_empty_pipelines():
    assert parse_pipeline("builtin.module()") == []
    assert parse_pipeline("") == []


@pytest.mark.parametrize("text", ["builtin.module(cse", "cse)", "func.func(cse}", "a{b"])
def test_unbalanced_brackets_are_errors(text):
    with pytest.raises(PipelineError):
        build_pass_manager(parse_pipeline(text), make_context(), None)


def test_run_pipeline_mixes_python_and_upstream_passes(target):
    ctx = make_context()
    module = parse_module(PROGRAM, ctx)
    run_pipeline(module, "builtin.module(canonicalize,npu-annotate-target{preset=ascend310},cse)",
                 target)
    text = str(module)
    assert 'npu.target = "ascend310"' in text
    assert "arith.addi" not in text  # canonicalize ran
    assert text.count("arith.muli") == 1  # cse ran after our pass


@pytest.mark.parametrize("pipeline,message", [
    ("no-such-pass", "unknown pass 'no-such-pass'"),
    ("func.func(no-such-pass)", "unknown pass 'no-such-pass' in 'func.func(no-such-pass)'"),
    ("func.func(npu-annotate-target)", "is a Python pass and must appear at the top level"),
    ("canonicalize{bogus=1}", "bad options in 'canonicalize{bogus=1}': no such option bogus"),
    ("canonicalize{max-iterations=x}", "'x' value invalid"),
    ("npu-annotate-target{bogus=1}", "has no option 'bogus'"),
    ("npu-annotate-target{override=perhaps}", "expected a boolean, got 'perhaps'"),
])
def test_bad_pipelines_give_one_line_errors(pipeline, message, target, capfd):
    ctx = make_context()
    module = parse_module(PROGRAM, ctx)
    with pytest.raises(PipelineError) as info:
        run_pipeline(module, pipeline, target)
    assert message in str(info.value)
    assert "\n" not in str(info.value)
    # LLVM's option parser writes to fd 2 directly; none of that may leak out.
    assert capfd.readouterr().err == ""


def test_a_failing_python_pass_raises_with_its_location(target):
    ctx = make_context()
    module = parse_module('module attributes {npu.target = "ascend310"} {\n}', ctx)
    with pytest.raises(PipelineError, match=r":1:1: error: module is annotated for target 'ascend310'"):
        run_pipeline(module, "npu-annotate-target", target)
