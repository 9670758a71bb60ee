"""The compiled scorer's C sources stay a newcomer's to take over (#40, item 4): no function longer than a reader can
hold (MAX_FUNCTION_LINES), and a README (``evaluation/fastscore_c/README.md``) that names only files and functions
that exist, and every file of the folder.

The functions are found by matching braces in the sources, comments, strings and character literals blanked: a
top-level ``{`` whose header ends with ``)`` opens a function; its length runs from its header's first line to
its closing brace.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "evaluation" / "fastscore_c"
README = NATIVE / "README.md"
MAX_FUNCTION_LINES = 80

_NOT_CODE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
#: How the README names a C function: in backticks, called, without a dot (``finish_query()``).
_README_FUNCTION = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)\(\)`")
_README_FILE = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*\.[ch])`")


def _code(text: str) -> str:
    """``text`` with its comments, strings and character literals blanked, line breaks kept."""
    return _NOT_CODE.sub(lambda found: re.sub(r"[^\n]", " ", found[0]), text)


def functions(text: str) -> list[tuple[str, int, int]]:
    """The functions defined in C source ``text``: (name, first line of the header, lines up to the closing brace)."""
    code = _code(text)
    found, depth, header_start, opened = [], 0, 0, None
    for at, char in enumerate(code):
        if char == "{":
            if depth == 0:
                header = code[header_start:at]
                call = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*\([^()]*\)\s*$", header)
                if call and not re.search(r"=\s*$", header):
                    stripped = len(header) - len(header.lstrip())
                    opened = (call[1], code.count("\n", 0, header_start + stripped) + 1)
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                if opened is not None:
                    last = code.count("\n", 0, at) + 1
                    found.append((opened[0], opened[1], last - opened[1] + 1))
                opened, header_start = None, at + 1
        elif char == ";" and depth == 0:
            header_start = at + 1
        elif char == "#" and depth == 0:
            header_start = at
        elif char == "\n" and depth == 0 and code[header_start:at].lstrip().startswith("#"):
            header_start = at + 1  # a preprocessor line ends at its line's end
    return found


def _sources() -> list[Path]:
    return sorted(NATIVE.glob("*.[ch]"))


def _all_functions() -> dict[str, tuple[str, int, int]]:
    return {name: (path.name, line, length) for path in _sources()
            for name, line, length in functions(path.read_text())}


def test_the_function_finder_sees_the_functions_and_only_them():
    text = (
        "#include <x.h>\n"
        "/* a comment { with braces } and f() */\n"
        "enum { A = 0, B };\n"
        "static const char *s = \"{\";\n"
        "static struct T t = { 1, '}' };\n"
        "static inline int one(int a)\n{\n    if (a) { return 1; }\n    return 0;\n}\n"
        "PyMODINIT_FUNC PyInit_x(void)\n{\n    return NULL;\n}\n"
    )
    assert functions(text) == [("one", 6, 5), ("PyInit_x", 11, 4)]


def test_the_folder_holds_the_compiled_scorer():
    names = {path.name for path in _sources()}
    assert "fastscore.h" in names and len(names) > 2
    assert "PyInit__fastscore" in _all_functions()


def test_no_function_of_the_compiled_scorer_is_longer_than_a_reader_can_hold():
    found = [(path.name, name, line, length) for path in _sources()
             for name, line, length in functions(path.read_text())]
    assert len(found) > 30
    long = [f"{file}:{line} {name}: {length} lines" for file, name, line, length in found
            if length > MAX_FUNCTION_LINES]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: split them into named helpers\n" + "\n".join(long)


def test_the_readme_names_only_functions_and_files_that_exist():
    text = README.read_text()
    defined = _all_functions()
    named = set(_README_FUNCTION.findall(text))
    assert len(named) > 10
    assert not named - set(defined), f"README.md names functions the C files do not define: {sorted(named - set(defined))}"
    files = set(_README_FILE.findall(text))
    sources = {path.name for path in _sources()}
    assert not files - sources, f"README.md names files the folder does not hold: {sorted(files - sources)}"
    assert not sources - files, f"README.md does not say what these files hold: {sorted(sources - files)}"
