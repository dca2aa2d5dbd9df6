"""The shape of the code: modules of at most 450 lines, functions of at most 60, loggers named by module.
The line limits hold for the tests under tests/ too, with no allowlist there.

Run as a script (``python tests/test_code_shape.py``) to list every module and function over its limit,
e.g. to update the allowlists below after a change."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 60

# Gradio layout builders: one long function that lays the components out in page order reads better than
# the same page cut into pieces. Only these are exempt for good.
LAYOUT_BUILDERS = {
    "ui/chat/page.py::build_chat_tab": "Gradio layout builder (the chat page, in page order)",
    "ui/knowledge_bases/page.py::build_kb_tab": "Gradio layout builder (the knowledge-base page, in page order)",
    "ui/settings/page.py::build_settings_tab": "Gradio layout builder (the settings page, in page order)",
}
# Over the limit today, being split (issue 14): shrink this list, never grow it. Never for tests/.
OVERSIZED_MODULES: dict[str, str] = {}
LONG_FUNCTIONS: dict[str, str] = {}


def _sources() -> list[Path]:
    return sorted([*ROOT.joinpath("backend").rglob("*.py"), *ROOT.joinpath("ui").rglob("*.py"), ROOT / "main.py"])


def _tests() -> list[Path]:
    return sorted(ROOT.joinpath("tests").rglob("*.py"))


def _checked() -> list[Path]:
    """What the line limits cover: the application and its tests."""
    return [*_sources(), *_tests()]


def _name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def long_modules() -> dict[str, int]:
    sizes = {_name(p): len(p.read_text(encoding="utf-8").splitlines()) for p in _checked()}
    return {name: lines for name, lines in sizes.items() if lines > MAX_MODULE_LINES}


def long_functions() -> dict[str, int]:
    found = {}
    for path in _checked():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    found[f"{_name(path)}::{node.name}"] = lines
    return found


def test_no_module_over_the_line_limit():
    over = {name: lines for name, lines in long_modules().items() if name not in OVERSIZED_MODULES}
    assert not over, f"modules over {MAX_MODULE_LINES} lines (split them): {over}"


def test_no_function_over_the_line_limit():
    allowed = LAYOUT_BUILDERS.keys() | LONG_FUNCTIONS.keys()
    over = {name: lines for name, lines in long_functions().items() if name not in allowed}
    assert not over, f"functions over {MAX_FUNCTION_LINES} lines (split them): {over}"


def test_allowlists_hold_only_current_offenders():
    """An entry that is back under its limit (or gone) leaves the list, so the list only shrinks."""
    stale_modules = OVERSIZED_MODULES.keys() - long_modules().keys()
    stale_functions = (LAYOUT_BUILDERS.keys() | LONG_FUNCTIONS.keys()) - long_functions().keys()
    assert not stale_modules and not stale_functions, f"remove from the allowlists: {stale_modules | stale_functions}"


def test_every_logger_is_named_by_its_module():
    """``log = logging.getLogger(__name__)``: the logger name says where a line comes from, and one
    ``logging`` setting (ui/cli/commands.py) covers every module."""
    wrong = []
    for path in _checked():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:  # module level only
            value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
            if (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Attribute)
                and value.func.attr == "getLogger"
                and not (
                    len(value.args) == 1 and isinstance(value.args[0], ast.Name) and value.args[0].id == "__name__"
                )
            ):
                wrong.append(f"{_name(path)}:{node.lineno}")
    assert not wrong, f"use logging.getLogger(__name__): {wrong}"


if __name__ == "__main__":
    for name, lines in sorted(long_modules().items()):
        print(f"module   {lines:5d}  {name}")
    for name, lines in sorted(long_functions().items()):
        print(f"function {lines:5d}  {name}")
    sys.exit(0)
