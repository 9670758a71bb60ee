"""The deployment test's prerequisites: podman, podman-compose, the local base images, the project image.

Marked ``deploy`` and run by `.ci/run` (which installs podman, runc and
debootstrap with apt and podman-compose with pip). Elsewhere it is skipped
with the reason, unless ``LEXBOARD_DEPLOY_TEST=1`` asks for it: it builds
images and starts containers for several minutes.

``LEXBOARD_DEPLOY_REBUILD=1`` builds the local base images again
(scripts/local-base-images.sh --force); by default existing ones are reused.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .stack import (
    _TIMELINE,
    ROOT,
    build_image,
    podman_compose,
    podman_environment,
    prepare_site,
    run,
    running_stack,
    say,
)

pytestmark = pytest.mark.deploy


def _missing() -> str | None:
    if os.environ.get("LEXBOARD_DEPLOY_TEST") != "1":
        return "the deployment test builds images and starts containers: set LEXBOARD_DEPLOY_TEST=1 (as .ci/run does)"
    if not shutil.which("podman"):
        return "podman is not installed (apt-get install podman runc debootstrap)"
    if not podman_compose():
        return "podman-compose is not installed (pip install podman-compose)"
    if os.geteuid() != 0:
        return "the local base images are built with debootstrap, which needs root"
    return None


def pytest_collection_modifyitems(config, items):
    reason = _missing()
    if reason is None:
        return
    for item in items:
        if item.get_closest_marker("deploy"):
            item.add_marker(pytest.mark.skip(reason=reason))


def pytest_terminal_summary(terminalreporter):
    if _TIMELINE:
        terminalreporter.section("deployment test: steps and times")
        for line in _TIMELINE:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def deploy_clock():
    started = time.monotonic()
    yield started
    say(f"deployment test took {time.monotonic() - started:.0f}s in all")
    # The project images this test built and then tagged over (version 1 under version 2, earlier runs): ours
    # to remove, and only those (the image store is shared; never a prune).
    env = podman_environment()
    done = run(["podman", "images", "--quiet", "--filter", "dangling=true",
                "--filter", "label=org.opencontainers.image.title=Lexboard"], env=env, check=False)
    for image in done.stdout.split():
        run(["podman", "rmi", image], env=env, check=False)


@pytest.fixture(scope="session")
def project_image(deploy_clock):
    """Base images (built if missing), then the project's image, version 1."""
    env = podman_environment()
    args = ["--force"] if os.environ.get("LEXBOARD_DEPLOY_REBUILD") == "1" else []
    t0 = time.monotonic()
    done = run(["bash", "scripts/local-base-images.sh", *args], env=env, timeout=1800)
    say(f"base images ready in {time.monotonic() - t0:.0f}s\n{done.stdout.strip()}")
    t0 = time.monotonic()
    build_image(env, version="1")
    say(f"project image (version 1) built in {time.monotonic() - t0:.0f}s")
    return env


@pytest.fixture(scope="session")
def demo_export(tmp_path_factory) -> Path:
    """The demo's files (`load_demo --export`): runs, topics, corpus ids, for the demo dataset loaded in the stack."""
    folder = tmp_path_factory.mktemp("demo-export")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "lexboard.settings", "LEXBOARD_VAR_DIR": str(folder / "var")}
    for name in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL"):
        env.pop(name, None)
    subprocess.run([sys.executable, "manage.py", "load_demo", "--export", str(folder / "demo")], cwd=ROOT, env=env,
                   check=True, capture_output=True, timeout=600)
    return folder / "demo"


@pytest.fixture(scope="session")
def demo_runs(demo_export) -> dict[str, bytes]:
    """The demo's baseline runs on its test split."""
    return {path.name.split(".")[0]: path.read_bytes() for path in (demo_export / "runs").glob("*.test.trec")}


@pytest.fixture(scope="session")
def large_run(demo_export, demo_runs) -> bytes:
    """The largest run the demo's test split takes: every corpus document ranked for every query (200,000 lines)."""
    queries = sorted({line.split()[0] for line in demo_runs["random"].decode().splitlines() if line.strip()})
    documents = (demo_export / "trec" / "corpus_ids.txt").read_text().split()
    lines = []
    for q, query in enumerate(queries):
        ranked = documents[q % len(documents):] + documents[:q % len(documents)]
        lines.extend(f"{query} Q0 {doc} {rank} {len(ranked) - rank} large" for rank, doc in enumerate(ranked, 1))
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture(scope="session")
def stack(project_image, tmp_path_factory):
    """docker/compose.yml up on a free port, with the demo dataset, a participant and their token (``stack.token``).

    One stack for test_compose_stack.py and test_proxy_errors.py (in that order: the last one stops web)."""
    with running_stack("lexboard-deploy", tmp_path_factory.mktemp("stack")) as site:
        site.token = prepare_site(site)
        yield site
