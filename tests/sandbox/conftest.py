"""The sandbox tests' prerequisites: podman, root, the local base images; the test images built once.

Marked ``sandbox``: skipped, with the reason, where podman or root or the
local base images are missing (``scripts/local-base-images.sh python`` builds
the two these images stand on), or where ``LEXBOARD_SANDBOX_TEST=0`` (`.ci/run`'s
full suite: its own sandbox block runs them once, after installing podman).
The hostile images of ``tests/sandbox/images/`` and the worked example of
``docker/sandbox-example/`` are built (cached by podman) as
``localhost/lexboard-sandbox-test-<folder>:latest`` and
``localhost/lexboard-sandbox-example:latest``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sandbox.runner import Limits, Sandbox, available, default_containers_conf, podman

ROOT = Path(__file__).resolve().parents[2]
IMAGES = Path(__file__).resolve().parent / "images"
BASES = ("localhost/lexboard-debian:bookworm", "localhost/lexboard-python:3.11")
EXAMPLE = "localhost/lexboard-sandbox-example:latest"

SANDBOX = Sandbox(containers_conf=default_containers_conf(ROOT))
# Small limits, so each hostile image meets its limit in seconds.
SMALL = Limits(memory_mb=128, cpus=1, pids=32, wall_seconds=6, output_mb=16, tmp_mb=16)


def _missing() -> str | None:
    if os.environ.get("LEXBOARD_SANDBOX_TEST") == "0":
        return "LEXBOARD_SANDBOX_TEST=0: .ci/run runs these in their own block, after podman is installed"
    reason = available(SANDBOX)
    if reason:
        return reason
    for base in BASES:
        if podman(SANDBOX, "image", "exists", base, check=False).returncode != 0:
            return f"{base} is missing: scripts/local-base-images.sh python builds it"
    return None


def pytest_collection_modifyitems(config, items):
    wanted = [item for item in items if item.get_closest_marker("sandbox")]
    if not wanted:
        return
    reason = _missing()
    if reason is None:
        return
    for item in wanted:
        item.add_marker(pytest.mark.skip(reason=reason))


def build(tag: str, folder: Path) -> str:
    proc = subprocess.run([SANDBOX.podman, "build", "--pull=never", "--quiet", "--tag", tag, str(folder)],
                          capture_output=True, text=True, env=SANDBOX.env(), timeout=600, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"building {tag} from {folder} failed:\n{proc.stderr[-2000:]}")
    return tag


@pytest.fixture(scope="session")
def hostile_image():
    """``hostile_image("fork-bomb")``: the tag of tests/sandbox/images/fork-bomb, built on first use."""
    built: dict[str, str] = {}

    def get(name: str) -> str:
        if name not in built:
            built[name] = build(f"localhost/lexboard-sandbox-test-{name}:latest", IMAGES / name)
        return built[name]

    return get


@pytest.fixture(scope="session")
def example_image() -> str:
    return build(EXAMPLE, ROOT / "docker/sandbox-example")


@pytest.fixture
def sandbox_input(tmp_path) -> Path:
    """A tiny input folder as the platform writes it (docs/sandbox.md), readable by the container's uids."""
    folder = tmp_path / "input"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text(
        '{"_id": "art-1", "title": "Art. 1", "text": "Le bail est un contrat de louage."}\n'
        '{"_id": "art-2", "title": "Art. 2", "text": "Le vendeur doit livrer la chose vendue."}\n'
        '{"_id": "art-3", "title": "Art. 3", "text": "Le preneur paie le loyer du bail."}\n'
    )
    (folder / "topics.jsonl").write_text(
        '{"_id": "q1", "text": "Qui paie le loyer du bail ?"}\n{"_id": "q2", "text": "Que doit livrer le vendeur ?"}\n'
    )
    folder.chmod(0o755)
    tmp_path.chmod(0o755)
    return folder


def leftovers(work_dir: Path, name: str) -> list[str]:
    """The container named ``name`` and the mounts under ``work_dir``, if they still exist (a run leaves none)."""
    names = podman(SANDBOX, "ps", "--all", "--filter", "label=lexboard.sandbox=1", "--format", "{{.Names}}",
                   check=False).stdout.split()
    mounts = [line for line in Path("/proc/mounts").read_text().splitlines() if str(work_dir) in line]
    return [n for n in names if n == SANDBOX.name_prefix + name] + mounts + [str(p) for p in work_dir.glob("output")]
