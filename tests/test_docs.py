"""The documents agree with the tree: CONTRIBUTING's concern table names every package and every module at
the top of backend/ and ui/, and every path or module it names exists; the README stays a short page for
users that keeps the two quick-start commands."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import REPO_ROOT

CONTRIBUTING = REPO_ROOT / "CONTRIBUTING.md"
README = REPO_ROOT / "README.md"
README_MAX_LINES = 300
ROOTS = ("backend", "ui")


def _table_cells() -> list[str]:
    """The "where" cell of each row of the table under CONTRIBUTING's "Where each concern lives"."""
    text = CONTRIBUTING.read_text(encoding="utf-8")
    section = text.split("## Where each concern lives", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    cells = [row.strip("|").split("|")[-1].strip() for row in rows[2:]]  # after the header and its rule
    assert cells, "CONTRIBUTING.md: no concern table under 'Where each concern lives'"
    return cells


def _named(cell: str) -> tuple[list[str], list[str]]:
    """The paths (with a ``/`` or a file suffix) and the bare module names a cell puts in backticks."""
    names = re.findall(r"`([^`]+)`", cell)
    paths = [n for n in names if "/" in n or "." in n]
    return paths, [n for n in names if n not in paths]


def _named_paths() -> set[str]:
    return {path.rstrip("/") for cell in _table_cells() for path in _named(cell)[0]}


def _packages() -> list[str]:
    return sorted(
        str(init.parent.relative_to(REPO_ROOT))
        for root in ROOTS
        for init in (REPO_ROOT / root).rglob("__init__.py")
        if init.parent != REPO_ROOT / root
    )


def _root_modules() -> list[str]:
    return sorted(
        str(module.relative_to(REPO_ROOT))
        for root in ROOTS
        for module in (REPO_ROOT / root).glob("*.py")
        if module.name != "__init__.py"
    )


def test_the_concern_table_names_every_package_and_every_root_module():
    named = _named_paths()
    missing = [f"{path}/" for path in _packages() if path not in named]
    missing += [path for path in _root_modules() if path not in named]
    assert missing == [], f"CONTRIBUTING.md's concern table does not name: {missing}"


def test_every_path_and_module_the_concern_table_names_exists():
    absent = []
    for cell in _table_cells():
        paths, modules = _named(cell)
        absent += [path for path in paths if not (REPO_ROOT / path).exists()]
        packages = [REPO_ROOT / p for p in paths if p.endswith("/")]
        assert packages or not modules, f"module names without their package: {cell}"
        absent += [
            f"{module} (in {', '.join(str(p.relative_to(REPO_ROOT)) for p in packages)})"
            for module in modules
            if not any(_is_module(package, module) for package in packages)
        ]
    assert absent == [], f"CONTRIBUTING.md's concern table names what does not exist: {absent}"


def _is_module(package: Path, name: str) -> bool:
    return (package / f"{name}.py").is_file() or (package / name / "__init__.py").is_file()


def test_readme_is_short_and_keeps_the_quick_start():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    assert "make run" in text
    assert "make test" in text
