"""The code's shape (issue 14 item 5): one list of search modes, evaluation through the service facade."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from backend.types import SEARCH_MODES, SearchMode
from tests.conftest import REPO_ROOT

BACKEND = REPO_ROOT / "backend"
UI = REPO_ROOT / "ui"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_the_ui_and_cli_reach_the_evaluation_only_through_the_service():
    offenders = [p.name for p in UI.rglob("*.py") if any(m.startswith("backend.evaluation") for m in _imports(p))]
    assert offenders == []


def test_the_evaluation_uses_only_facade_calls():
    """No store, registry or knowledge-base object: what it needs, DocLens offers (indexed_chunks, search)."""
    tree = ast.parse((BACKEND / "evaluation.py").read_text(encoding="utf-8"))
    used = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    assert not used & {"store", "registry", "kbs", "open_kb", "collection"}


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
    from backend.retrieval.search import MODES
    from ui.cli import build_parser
    from ui.kb_tab import EVAL_MODES

    parser = build_parser()
    search = parser.parse_args(["search", "--kb", "k", "question"])
    assert search.mode == SearchMode.RERANK
    assert parser.parse_args(["eval", "--qa", "q", "--docs", "d"]).modes == ",".join(SEARCH_MODES)
    assert tuple(MODES) == tuple(EVAL_MODES) == SEARCH_MODES
