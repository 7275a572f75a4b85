"""The package layout is the architecture: dependencies run one way, from the
drivers down to the IR, and no module imports another that imports it back.

Every import counts, late ones inside functions and `if TYPE_CHECKING:`
ones too: a late import that dodges a cycle at run time is still a cycle in
the design. The graph is read from the sources with `ast`, so nothing is
imported to build it.
"""

from __future__ import annotations

import ast
import importlib.util
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _setup_roots() -> dict[str, str]:
    """Where each package of the distribution lives: setup.py's `ROOTS`."""
    spec = importlib.util.spec_from_file_location("npu_setup", ROOT / "setup.py")
    setup = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(setup)
    return setup.ROOTS


FOLDERS = _setup_roots()
CORE = {"npu.target", "npu.diagnostics", "npu.dialects", "npu.ir", "npu.memory_planning"}
# What each unit may import besides itself: the layering
# passes -> kernels -> costmodel -> analysis -> ir/target, with the drivers
# (pipeline, frontend, tune, tools) on top and the simulator beside passes.
LOWER = {
    "npu.analysis": CORE,
    "npu.hivm": CORE,
    "npu.reference": CORE,
    "npu.costmodel": CORE | {"npu.analysis"},
    "npu.kernels": CORE | {"npu.analysis", "npu.costmodel"},
    "npu.passes": CORE | {"npu.analysis", "npu.costmodel", "npu.kernels", "npu.hivm",
                          "npu.reference"},
    "npu.simulator": CORE | {"npu.analysis", "npu.hivm", "npu.reference"},
    "npu.pipeline": CORE | {"npu.passes"},
}
LOWER["npu.frontend"] = LOWER["npu.pipeline"] | LOWER["npu.passes"] | {
    "npu.pipeline", "npu.simulator"}
LOWER["npu.tune"] = LOWER["npu.frontend"] | {"npu.frontend"}
LOWER["npu.tools"] = LOWER["npu.tune"] | {"npu.tune"}
LOWER["npu"] = CORE | {"npu.frontend"}  # `npu.compile`, the API's front door
# The conv reference semantics, beside `npu.reference` (which would pass 450 lines).
LOWER["npu.reference_conv"] = CORE
for _unit in ("npu.reference", "npu.passes", "npu.simulator", "npu.frontend", "npu.tune", "npu.tools"):
    LOWER[_unit] = LOWER[_unit] | {"npu.reference_conv"}
# The int8 cube's reference semantics: a leaf beside reference_conv.
LOWER["npu.reference_int8"] = CORE
for _unit in ("npu.reference", "npu.passes", "npu.simulator", "npu.frontend", "npu.tune", "npu.tools"):
    LOWER[_unit] = LOWER[_unit] | {"npu.reference_int8"}


def modules() -> dict[str, Path]:
    """Every module of the distribution by its dotted name."""
    found = {}
    for package, folder in FOLDERS.items():
        base = ROOT / folder
        for path in base.rglob("*.py"):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def _resolve(name: str, known: dict) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imports(known: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the project modules it imports, anywhere in its body."""
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                source = node.module or ""
                if node.level:
                    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    source = f"{base}.{source}" if source else base
                for alias in node.names:  # `from pkg import module` names the module
                    candidate = f"{source}.{alias.name}"
                    targets.add(candidate if candidate in known else source)
        resolved = {_resolve(t, known) for t in targets if t.startswith("npu")}
        graph[name] = {t for t in resolved if t and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def unit(module: str) -> str:
    """The layer a module belongs to: its top-level subpackage of `npu`."""
    return ".".join(module.split(".")[:2])


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return imports(modules())


def test_no_import_cycles(graph):
    assert cycles(graph) == []


def test_dependencies_run_one_way(graph):
    wrong = defaultdict(set)
    for source, targets in graph.items():
        allowed = LOWER.get(unit(source), CORE)
        for target in targets:
            if unit(target) != unit(source) and unit(target) not in allowed:
                wrong[source].add(target)
    assert dict(wrong) == {}


# One layer in two packages: the dialects' verifier rules read IR through
# npu.ir's accessors, and npu.ir's parser loads the dialects (module by
# module there is no cycle, which test_no_import_cycles checks).
IR_LAYER = {"npu.dialects": "npu.ir"}


def test_units_form_no_cycle(graph):
    def layer(module: str) -> str:
        return IR_LAYER.get(unit(module), unit(module))

    units = defaultdict(set)
    for source, targets in graph.items():
        units[layer(source)].update(layer(t) for t in targets if layer(t) != layer(source))
    assert cycles(units) == []


def test_checker_sees_late_and_type_only_imports(tmp_path):
    """The graph would miss the cycles that matter if it read only the
    top-level imports."""
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("def f():\n    from npu.b import g\n")
    b.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from npu import a\n")
    graph = imports({"npu.a": a, "npu.b": b})
    assert graph == {"npu.a": {"npu.b"}, "npu.b": {"npu.a"}}
    assert cycles(graph) == [["npu.a", "npu.b"]]


def test_no_source_file_over_450_lines():
    """Python and the simulator's C (`simulator/csrc/`) alike."""
    folders = [*FOLDERS.values(), "test", "bench"]
    long = {str(p.relative_to(ROOT)): n for folder in folders
            for pattern in ("*.py", "*.c", "*.h") for p in (ROOT / folder).rglob(pattern)
            if (n := len(p.read_text().splitlines())) > 450}
    assert long == {}
