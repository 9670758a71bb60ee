"""Where the project's shared folder is: ``shared/`` beside the repository (``<repo>/../shared``).

CI clones the repository with a copy of ``shared/`` beside it; a git worktree
(``.git`` is a file naming the main checkout's git folder) uses the one beside
the main checkout. Tests that need it fail when it is missing, rather than
skipping: a skipped reference check checks nothing.
"""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def _main_checkout(root: Path) -> Path:
    git = root / ".git"
    if git.is_file():  # a worktree: "gitdir: <main>/.git/worktrees/<name>"
        gitdir = Path(git.read_text().split("gitdir:", 1)[1].strip())
        return gitdir.parents[2]
    return root


SHARED_DIR = _main_checkout(REPO_ROOT).parent / "shared"


def shared_file(*parts: str) -> Path:
    """A file of the shared folder; an AssertionError naming where it was looked for when it is not there."""
    path = SHARED_DIR.joinpath(*parts)
    assert path.exists(), f"{path} is missing: the shared folder must sit beside the repository (<repo>/../shared)"
    return path
