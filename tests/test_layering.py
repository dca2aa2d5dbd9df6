"""The code's layering, read from the imports of every module (those inside functions and under
TYPE_CHECKING included): no import circle anywhere, and every room (a package, or a module at the top of
backend/) imports only rooms of lower floors. Also: one list of search modes; the UI reaches the backend
through the facade, its result types, settings and errors, and the quality checks above the facade."""

from __future__ import annotations

import ast
import re
from functools import cache, lru_cache
from pathlib import Path

from backend.types import SEARCH_MODES, SearchMode
from tests.conftest import REPO_ROOT

BACKEND = REPO_ROOT / "backend"
UI = REPO_ROOT / "ui"

# Floors, top first: a room may import only rooms on floors below its own (never beside or above).
FLOORS: list[list[str]] = [
    ["main"],
    ["ui"],
    ["backend.quality"],
    ["backend.service"],
    ["backend.ingestion"],
    ["backend.retrieval", "backend.answering"],
    ["backend.documents", "backend.embedding", "backend.knowledge_bases"],
    ["backend.llm", "backend.store"],
    ["backend.settings", "backend.memory", "backend.processes"],
    ["backend.text", "backend.types", "backend.errors", "backend.cpu", "backend.stage_times"],
]
# What the UI may import of the backend: the facade and what it returns or takes, and the quality checks
# that run on top of it (evaluation, benchmarks).
UI_MAY_IMPORT = ("backend.service", "backend.types", "backend.settings", "backend.errors", "backend.quality")


def _module_name(path: Path) -> str:
    name = ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts)
    return name.removesuffix(".__init__")


@lru_cache(maxsize=1)
def modules() -> dict[str, Path]:
    paths = [*BACKEND.rglob("*.py"), *UI.rglob("*.py"), REPO_ROOT / "main.py"]
    return {_module_name(p): p for p in paths if p != BACKEND / "__init__.py"}  # the namespace only


def _resolve(name: str) -> str | None:
    """The project module an imported name refers to (``backend.x.y`` may be module ``backend.x`` plus a name)."""
    known = modules()
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


@cache
def imports_of(module: str) -> frozenset[str]:
    """The project modules ``module`` imports, anywhere in its code."""
    tree = ast.parse(modules()[module].read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.update(_resolve(f"{node.module}.{alias.name}") for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(_resolve(alias.name) for alias in node.names)
    return frozenset(m for m in found if m and m != module)


def room_of(module: str) -> str:
    """``backend.retrieval.rerank.composite`` -> ``backend.retrieval``; ``ui.chat.page`` -> ``ui``."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "backend" else parts[0]


def _floor(room: str) -> int:
    floors = [i for i, floor in enumerate(FLOORS) if room in floor]
    assert floors, f"{room} is on no floor of FLOORS: add it where it belongs"
    return floors[0]


def _circles() -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in imports_of(module):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(modules()):
        if module not in index:
            visit(module)
    return found


def test_no_module_imports_itself_back_through_others():
    assert _circles() == []


def test_every_room_imports_only_rooms_of_lower_floors():
    upward = sorted(
        f"{module} -> {other}"
        for module in modules()
        for other in imports_of(module)
        if room_of(other) != room_of(module) and _floor(room_of(other)) <= _floor(room_of(module))
    )
    assert upward == []


def test_every_room_is_on_a_floor_and_every_floor_names_a_room():
    rooms = {room_of(m) for m in modules()}
    named = {room for floor in FLOORS for room in floor}
    assert rooms == named


def test_the_ui_reaches_the_backend_only_through_the_facade():
    offenders = sorted(
        f"{module} -> {other}"
        for module in modules()
        if room_of(module) == "ui"
        for other in imports_of(module)
        if other.startswith("backend.") and not other.startswith(UI_MAY_IMPORT)
    )
    assert offenders == []


def test_the_quality_checks_use_only_facade_calls():
    """No store, registry or knowledge-base object: what they need, DocLens offers (indexed_chunks, search)."""
    for name in ("evaluation.py", "selftest.py", "bench_ingest.py"):
        tree = ast.parse((BACKEND / "quality" / name).read_text(encoding="utf-8"))
        used = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
        assert not used & {"store", "registry", "kbs", "open_kb", "collection"}, name


def test_search_modes_are_written_once():
    assert [m.value for m in SearchMode] == list(SEARCH_MODES) == ["dense", "keyword", "hybrid", "rerank"]
    listed = re.compile(r"""["']dense["'],\s*["']keyword["'],\s*["']hybrid["']|dense,keyword,hybrid""")
    copies = [
        str(p.relative_to(REPO_ROOT))
        for root in (BACKEND, UI)
        for p in root.rglob("*.py")
        if p.name != "types.py" and listed.search(p.read_text(encoding="utf-8"))
    ]
    assert copies == []


def test_search_modes_are_one_list_in_the_cli_and_the_page():
    from backend.retrieval.retriever import MODES
    from ui.cli.commands import build_parser
    from ui.knowledge_bases.handlers import EVAL_MODES

    parser = build_parser()
    search = parser.parse_args(["search", "--kb", "k", "question"])
    assert search.mode == SearchMode.RERANK
    assert parser.parse_args(["eval", "--qa", "q", "--docs", "d"]).modes == ",".join(SEARCH_MODES)
    assert tuple(MODES) == tuple(EVAL_MODES) == SEARCH_MODES
