"""No function of the product spans more than ``MAX_FUNCTION_LINES`` lines (docs/architecture.md, "Layers";
CONTRIBUTING.md, "Modules")."""

from __future__ import annotations

import ast

from tests.project import ROOT, source_files

#: The most lines a function of the product may span, from its ``def`` to its last line (nested functions
#: included, decorators not; migrations left out: generated): past it, split it along its steps.
MAX_FUNCTION_LINES = 120


def _long_functions(tree: ast.AST) -> list[tuple[str, int, int]]:
    """(name, line, lines spanned) of each function longer than ``MAX_FUNCTION_LINES``, nested ones too."""
    return [(fn.name, fn.lineno, fn.end_lineno - fn.lineno + 1) for fn in ast.walk(tree)
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
            and fn.end_lineno is not None and fn.end_lineno - fn.lineno + 1 > MAX_FUNCTION_LINES]


def test_no_function_is_longer_than_the_cap():
    """No function of the product (every package of the project, migrations left out) spans more than
    ``MAX_FUNCTION_LINES`` lines from its ``def`` to its last line."""
    found = [f"{path.relative_to(ROOT).as_posix()}:{line} {name} ({length} lines)" for path in source_files()
             for name, line, length in _long_functions(ast.parse(path.read_text()))]
    assert not found, f"functions over {MAX_FUNCTION_LINES} lines (split them along their steps): " + ", ".join(found)


def test_the_walk_counts_from_def_to_the_last_line():
    """A made-up function of the cap passes; one line more fails, and so does a long method or nested function."""
    body = "\n".join(f"    x = {i}" for i in range(MAX_FUNCTION_LINES - 1))
    assert not _long_functions(ast.parse(f"def f():\n{body}\n"))
    assert _long_functions(ast.parse(f"def f():\n{body}\n    y = 0\n")) == [("f", 1, MAX_FUNCTION_LINES + 1)]
    nested = "\n".join(f"            x = {i}" for i in range(MAX_FUNCTION_LINES))
    found = _long_functions(ast.parse(f"class C:\n    async def m(self):\n        def g():\n{nested}\n"))
    assert [(name, length) for name, _, length in found] == [("m", MAX_FUNCTION_LINES + 2), ("g", MAX_FUNCTION_LINES + 1)]
