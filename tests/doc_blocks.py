"""The command blocks of README.md and docs/*.md, and what each says about itself (issue #38, item 2).

A command block is a fenced block labelled ``sh``, ``bash``, ``shell`` or ``console``, or one with no label (a
diagram, a configuration file or an ``.env`` excerpt is labelled ``text``, ``caddyfile``, ``ini``… so it is not
taken for commands). The HTML comment on the line right above its fence says how it is kept working:

- ``<!-- run by: tests/x/test_y.py::test_z -->``: that test runs the block as written (one or more node ids,
  separated by commas); the test finds its block with ``blocks_run_by(<its node id>)``, or by the same marker;
- ``<!-- run in CI: <section> -->``: the section of ``.ci/run`` (an ``echo "==> <section>…"`` line) that runs
  it, for a block that needs what only CI installs (podman, the deployment, the whole suite);
- ``<!-- illustrative: <reason> -->``: not run, and why (a production host, a placeholder a reader fills in,
  a synopsis).

``tests/architecture/test_doc_blocks.py`` fails on a command block with none of them, a test that does not
exist, a CI section that does not, or an illustrative block with no reason.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMAND_LABELS = frozenset({"", "sh", "bash", "shell", "console"})
FENCE = re.compile(r"^(?P<indent> *)```(?P<info>[^`]*)$")
MARKER = re.compile(r"^\s*<!--\s*(?P<kind>run by|run in CI|illustrative)\s*:\s*(?P<what>.*?)\s*-->\s*$")


@dataclass
class Block:
    doc: str          # relative to the repository: README.md, docs/operations.md
    line: int         # the opening fence's line, from 1
    label: str        # the fence's first word ("sh" for ```sh session)
    text: str         # the block's lines, the fence's indentation taken off
    markers: dict[str, list[str]] = field(default_factory=dict)  # kind -> what each marker of that kind says

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"

    @property
    def run_by(self) -> list[str]:
        return [node.strip() for what in self.markers.get("run by", []) for node in what.split(",") if node.strip()]


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks_of(path: Path) -> list[Block]:
    """Every fenced block of one Markdown file, with the markers on the lines right above it."""
    return blocks_in(path.read_text(), str(path.relative_to(ROOT)))


def blocks_in(text: str, doc: str) -> list[Block]:
    """Every fenced block of Markdown ``text`` (``doc``: its name in the messages)."""
    lines = text.splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent = len(opening["indent"])
        end = i + 1
        while end < len(lines) and not re.match(r"^ *```\s*$", lines[end]):
            end += 1
        if end == len(lines):
            raise ValueError(f"{doc}:{i + 1}: a fence that is never closed: add ``` after it")
        markers: dict[str, list[str]] = {}
        above = i - 1
        while above >= 0 and (marker := MARKER.match(lines[above])):
            markers.setdefault(marker["kind"], []).insert(0, marker["what"])
            above -= 1
        text = "\n".join(line[indent:] if line[:indent].isspace() else line.lstrip() for line in lines[i + 1:end])
        found.append(Block(doc, i + 1, (opening["info"].split() or [""])[0], text, markers))
        i = end + 1
    return found


def command_blocks() -> list[Block]:
    return [block for path in documents() for block in blocks_of(path) if block.label in COMMAND_LABELS]


def blocks_run_by(node_id: str) -> list[Block]:
    """The command blocks a test says it runs (``request.node.nodeid``, parameters left out); at least one."""
    node_id = node_id.split("[", 1)[0]
    mine = [block for block in command_blocks() if node_id in block.run_by]
    assert mine, f"no block of README.md or docs/*.md is marked <!-- run by: {node_id} -->: mark the one it runs"
    return mine


#: What a block's shell must not inherit from the test's session: it runs on the embedded default.
SESSION_VARIABLES = ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL", "DJANGO_SETTINGS_MODULE", "LEXBOARD_QUEUE",
                     "LEXBOARD_VAR_DIR", "LEXBOARD_SITE_URL", "PORT")


def reader_folder(where: Path, venv: Path) -> dict[str, str]:
    """A reader's working folder for a block: ``.venv`` and ``manage.py`` as in a checkout (the script's folder is
    the repository, so Django finds the project), nothing else of the repository; and the environment of a shell
    there on the embedded default: its own ``var/``, ``python`` the project's interpreter (the docs' bare
    ``python`` is the activated virtualenv's)."""
    where.mkdir(parents=True, exist_ok=True)
    (where / ".venv").symlink_to(venv, target_is_directory=True)
    (where / "manage.py").symlink_to(ROOT / "manage.py")
    env = {k: v for k, v in os.environ.items() if k not in SESSION_VARIABLES}
    env.update(LEXBOARD_VAR_DIR=str(where / "var"), PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
               PYTHONPATH=str(ROOT))
    return env


def run_block(block: Block, cwd: Path, env: dict[str, str], timeout: float = 600) -> str:
    """A ``sh`` block with ``bash -e`` (every command must succeed), its stdout; a failure names the block."""
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block.text], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert done.returncode == 0, (f"{block.where} failed (exit {done.returncode}):\n{block.text}\n--- stdout\n"
                                  f"{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}")
    return done.stdout
