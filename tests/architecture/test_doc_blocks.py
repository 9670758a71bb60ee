"""Docs as tests (issue #38, item 2): every command block of README.md and docs/*.md is run by a named test, run by
a named section of CI, or marked illustrative with the reason (the markers: tests/doc_blocks.py).

Reads files only (no database, no import of the tests it names): a fraction of a second.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

from tests.doc_blocks import (
    COMMAND_LABELS,
    FENCE,
    MARKER,
    ROOT,
    Block,
    blocks_in,
    blocks_of,
    command_blocks,
    documents,
)

CI = ROOT / ".ci" / "run"


@cache
def _test_functions(module: Path) -> frozenset[str]:
    tree = ast.parse(module.read_text())
    return frozenset(node.name for node in tree.body
                     if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"))


def ci_sections() -> list[str]:
    return re.findall(r'^\s*echo "==> ([^"]+)"', CI.read_text(), flags=re.M)


def problems_of(block: Block) -> list[str]:
    """What is wrong with one block's markers, each naming the fix."""
    if not block.markers:
        return [f"{block.where}: a ```{block.label} block with no marker: put <!-- run by: tests/…::test_… --> (a test "
                f"that runs it as written), <!-- run in CI: <section of .ci/run> --> or <!-- illustrative: why --> "
                f"on the line above its fence (a block that holds no commands: label it ```text)"]
    found = []
    for node in block.run_by:
        module, _, name = node.partition("::")
        path = ROOT / module
        if not (module.startswith("tests/") and path.suffix == ".py" and path.is_file()):
            found.append(f"{block.where}: 'run by: {node}': no test module {module}")
        elif name not in _test_functions(path):
            found.append(f"{block.where}: 'run by: {node}': {module} has no test function {name!r}")
        elif "doc_blocks" not in path.read_text() and block.doc.rsplit("/", 1)[-1] not in path.read_text():
            found.append(f"{block.where}: 'run by: {node}': {module} neither names {block.doc} nor reads its blocks "
                         f"(tests.doc_blocks.blocks_run_by)")
    for section in block.markers.get("run in CI", []):
        if not any(title.startswith(section) for title in ci_sections()):
            found.append(f"{block.where}: 'run in CI: {section}': .ci/run has no section echoing \"==> {section}…\" "
                         f"(its sections: {'; '.join(ci_sections())})")
    for reason in block.markers.get("illustrative", []):
        if len(reason.split()) < 3:
            found.append(f"{block.where}: 'illustrative: {reason}': say why it is not run (a few words at least)")
    return found


def test_every_command_block_is_run_by_a_test_or_ci_or_says_why_not():
    blocks = command_blocks()
    assert len(blocks) > 30  # README.md and docs/*.md were read
    found = [problem for block in blocks for problem in problems_of(block)]
    assert not found, "\n".join(found)


def test_every_marker_sits_right_above_a_command_block():
    """A marker above a paragraph, or above a ```text block, marks nothing: it would hide a block left unmarked."""
    stray = []
    for path in documents():
        lines = path.read_text().splitlines()
        for n, line in enumerate(lines):
            if not MARKER.match(line):
                continue
            below = n + 1
            while below < len(lines) and MARKER.match(lines[below]):
                below += 1
            fence = FENCE.match(lines[below]) if below < len(lines) else None
            if not (fence and (fence["info"].split() or [""])[0] in COMMAND_LABELS):
                stray.append(f"{path.relative_to(ROOT)}:{n + 1}: {line.strip()}")
    assert not stray, "markers with no command block right below them:\n" + "\n".join(stray)


@pytest.mark.parametrize("text, expected", [
    ("```sh\nmake run\n```\n", "with no marker"),
    ("<!-- run by: tests/demo/test_readme.py::test_nothing_of_the_kind -->\n```sh\nmake run\n```\n",
     "has no test function 'test_nothing_of_the_kind'"),
    ("<!-- run by: tests/nowhere.py::test_it -->\n```bash\nmake run\n```\n", "no test module tests/nowhere.py"),
    ("<!-- run in CI: a block CI never had -->\n```\nmake run\n```\n", ".ci/run has no section"),
    ("<!-- illustrative: prod -->\n```console\n$ make run\n```\n", "say why it is not run"),
])
def test_the_check_names_each_fault_and_its_fix(text, expected):
    (block,) = blocks_in(text, "docs/x.md")
    assert block.label in ("sh", "bash", "", "console")
    assert any(expected in problem for problem in problems_of(block)), problems_of(block)


def test_a_block_that_is_marked_and_run_passes():
    blocks = [block for path in (ROOT / "README.md",) for block in blocks_of(path) if block.run_by]
    assert blocks and not [problem for block in blocks for problem in problems_of(block)]

