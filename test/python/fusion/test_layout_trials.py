"""npu-lower-fused emits a trial chunk per candidate layout of a group to
profile it (`LayoutChoice.trial`); a group of the same structure as an
earlier one (BERT-12's layers repeat their layernorms) takes the earlier
group's profiles instead (`LayoutChoice.cached_trial`: 74 trials -> 11 on
BERT-12 at 32 cores, 0.43 CPU s). The IR is that of trying every group."""

from __future__ import annotations

from ascend_program import Program, layernorm_rows
from helpers import compile_program

from npu.passes.lower_fused import FusedKernel
from npu.passes.lower_fused.layouts import LayoutChoice

ROWS, N, N3 = 24, 256, 128


def _three_layernorms() -> str:
    """Layernorms of x1 and x2 (same shapes and gamma, beta: the same
    structure on other values), then of x3 with shorter rows."""
    full, full3, col = (1, ROWS, N), (1, ROWS, N3), (1, ROWS, 1)
    args = [(f"%x{i}", full, "f32") for i in (1, 2)] + [("%x3", full3, "f32")]
    args += [("%g", (N,), "f32"), ("%b", (N,), "f32"), ("%g3", (N3,), "f32"), ("%b3", (N3,), "f32")]
    args += [(f"%y{i}", full, "f32") for i in (1, 2)] + [("%y3", full3, "f32")]
    p = Program("three", args)
    for i, (shape, g, b) in enumerate([(full, "%g", "%b"), (full, "%g", "%b"),
                                       (full3, "%g3", "%b3")], 1):
        n = shape[-1]
        layernorm_rows(p, (f"%x{i}", shape, "f32"), col, (g, (n,), "f32"), (b, (n,), "f32"),
                       (f"%y{i}", shape, "f32"), 1e-5)
    return p.text()


def _lowered(monkeypatch, cached: bool) -> tuple[str, list[int]]:
    """(the cce module, trials per fused group in emission order)."""
    trials: list[int] = []
    plain_emit, plain_trial = FusedKernel.emit, LayoutChoice.trial

    def emit(self):
        trials.append(0)
        return plain_emit(self)

    def trial(self, layout):
        trials[-1] += 1
        return plain_trial(self, layout)

    monkeypatch.setattr(FusedKernel, "emit", emit)
    monkeypatch.setattr(LayoutChoice, "trial", trial)
    if not cached:
        monkeypatch.setattr(LayoutChoice, "cached_trial", trial)
    module = compile_program(_three_layernorms(), "npu-lower")
    monkeypatch.undo()
    return module.operation.get_asm(enable_debug_info=True), trials


def test_same_structure_reuses_the_trials(monkeypatch) -> None:
    text, trials = _lowered(monkeypatch, cached=True)
    assert len(trials) == 3, trials
    first, second, third = trials
    assert first > 0 and second == 0 and third > 0, trials  # hit for x2's, miss for x3's
    plain, every = _lowered(monkeypatch, cached=False)
    assert every == [first, first, third], every
    assert text == plain
