"""The package layout, found on disk: the top-level folders show the
architecture and map onto one package, `npu` (`ROOTS`). setuptools' `find`
directive cannot map several folders under one prefix, so the packages are
listed here by walking them: a new subpackage is installed without a line
anywhere. Metadata, dependencies, scripts and package data stay in
pyproject.toml."""

from __future__ import annotations

from pathlib import Path

from setuptools import Extension, setup

HERE = Path(__file__).resolve().parent

# package -> the folder (relative to this file) it is read from
ROOTS = {
    "npu": "python/npu",
    "npu.dialects": "dialects",
    "npu.passes": "passes",
    "npu.simulator": "simulator",
    "npu.tools": "tools",
}


def packages() -> list[str]:
    """Every folder under a root that holds Python modules, as a package name."""
    found = []
    for package, folder in ROOTS.items():
        root = HERE / folder
        for directory in sorted({p.parent for p in root.rglob("*.py")}):
            if "__pycache__" in directory.parts:
                continue
            found.append(".".join([package, *directory.relative_to(root).parts]))
    return found


# The simulator's compiled scheduling loop (simulator/compiled.py says why).
# Optional: without a C compiler the build skips it and the Python loop runs.
CENGINE = Extension(
    "npu.simulator._cengine",
    sources=[f"simulator/csrc/{name}.c" for name in ("module", "entries", "engine", "crosscore",
                                                          "generic", "stamps", "covered",
                                                          "memsys", "gmxfer", "bind", "walk", "walkobj", "runner",
                                                          "numbering", "gmfacts", "partial", "cubeconv")],
    depends=["simulator/csrc/engine.h", "simulator/csrc/stamps.h", "simulator/csrc/walk.h"],
    # -O3: the cross-core check's byte loops vectorise (crosscore.c).
    extra_compile_args=["-O3", "-std=c11"],
    optional=True,
)


if __name__ == "__main__":  # also how setuptools' build backend runs it
    setup(packages=packages(), package_dir=dict(ROOTS), ext_modules=[CENGINE])
