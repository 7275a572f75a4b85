"""docs/passes.md and docs/dialects.md are generated from the pass registry
and the IRDL definitions; a pass, option or op added without regenerating
them fails here."""

from __future__ import annotations

from pathlib import Path

from npu.passes import registry
from npu.tools import gen_docs

ROOT = Path(__file__).resolve().parents[3]


def test_generated_pages_are_up_to_date(capsys) -> None:
    assert gen_docs.main(["--check", "--root", str(ROOT)]) == 0, capsys.readouterr().err


def test_every_pass_and_option_is_on_the_page() -> None:
    page = (ROOT / "docs" / "passes.md").read_text()
    for name, cls in registry().items():
        section = page.split(f"## `{name}`", 1)[1].split("\n## ", 1)[0]
        for opt in cls.options:
            assert f"| `{opt.name}` |" in section, (name, opt.name)


def test_a_stale_page_is_reported(tmp_path, capsys) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "passes.md").write_text("old\n")
    assert gen_docs.main(["--check", "--root", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "docs/passes.md is stale" in err and "docs/dialects.md is stale" in err
