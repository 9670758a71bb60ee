"""Drive docker/compose.yml with podman and podman-compose for the deployment test.

Everything goes through the commands an operator types: `podman build`,
`podman-compose up/stop/down`, `podman exec`, `podman healthcheck run`. The
compose file is used as shipped; the test only sets the variables it offers
(LEXBOARD_IMAGE, LEXBOARD_ENV_FILE, LEXBOARD_BIND).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from submissions.client import Client
from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
IMAGE = "localhost/lexboard:deploytest"
SCORE_TIMEOUT = 300



def podman_environment() -> dict[str, str]:
    """This process's environment plus the project's containers.conf where the machine has none (scripts/podman-env.sh)."""
    done = subprocess.run(["bash", "-c", ". scripts/podman-env.sh && printf %s \"${CONTAINERS_CONF:-}\""],
                          cwd=ROOT, capture_output=True, text=True, check=True)
    env = dict(os.environ)
    if done.stdout:
        env["CONTAINERS_CONF"] = done.stdout
    return env


def podman_compose() -> str | None:
    return shutil.which("podman-compose", path=os.path.dirname(sys.executable)) or shutil.which("podman-compose")


def run(command: list[str], *, env: dict, timeout: float = 900, check: bool = True, input: str | None = None
        ) -> subprocess.CompletedProcess:
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, input=input)
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


def build_image(env: dict, *, version: str) -> None:
    """The project's image from docker/Dockerfile, never pulling (the base images are local)."""
    # --label as well: podman 4.3's layer cache does not see a changed build argument.
    run(["podman", "build", "--pull=never", "--file", "docker/Dockerfile", "--tag", IMAGE,
         "--build-arg", f"LEXBOARD_VERSION={version}", "--label", f"org.opencontainers.image.version={version}", "."],
        env=env, timeout=1800)


def write_env_file(path: Path, *, port: int) -> Path:
    """The containers' settings, as an operator's .env would give them (plain HTTP on loopback, no TLS)."""
    password = secrets.token_urlsafe(16)
    path.write_text("\n".join([
        "DJANGO_SETTINGS_MODULE=lexboard.settings.production",
        f"SECRET_KEY={secrets.token_urlsafe(50)}",
        "ALLOWED_HOSTS=127.0.0.1,localhost",
        f"CSRF_TRUSTED_ORIGINS=http://127.0.0.1:{port}",
        "SECURE_SSL_REDIRECT=0",
        "SECURE_HSTS_SECONDS=0",
        f"POSTGRES_PASSWORD={password}",
        f"DATABASE_URL=postgres://lexboard:{password}@postgres:5432/lexboard",
        "CELERY_BROKER_URL=redis://redis:6379/0",
        "CACHE_URL=redis://redis:6379/1",
        "LEXBOARD_QUEUE=lexboard",
        "WEB_CONCURRENCY=2",
        "LEXBOARD_WORKER_CONCURRENCY=2",
        "EMAIL_BACKEND=django.core.mail.backends.console.EmailBackend",
        "LEXBOARD_S3_BUCKET=",
        "",
    ]))
    return path


@dataclass
class Stack:
    """One compose project: ``podman-compose -p NAME -f docker/compose.yml [-f override]``."""

    name: str
    env_file: Path
    port: int
    files: list[str] = field(default_factory=lambda: ["docker/compose.yml"])

    def __post_init__(self):
        self.env = {**podman_environment(), "LEXBOARD_IMAGE": IMAGE, "LEXBOARD_ENV_FILE": str(self.env_file),
                    "LEXBOARD_BIND": f"127.0.0.1:{self.port}"}
        self.url = f"http://127.0.0.1:{self.port}"

    def compose(self, *args: str, timeout: float = 900, check: bool = True) -> subprocess.CompletedProcess:
        files = [arg for f in self.files for arg in ("-f", f)]
        return run([podman_compose(), "--in-pod", "false", "--project-name", self.name, *files, *args], env=self.env, timeout=timeout,
                   check=check)

    def container(self, service: str) -> str:
        done = run(["podman", "ps", "--filter", f"label=com.docker.compose.project={self.name}",
                    "--filter", f"label=com.docker.compose.service={service}", "--format", "{{.Names}}"],
                   env=self.env)
        names = done.stdout.split()
        assert names, f"no running container for {service}:\n{self.logs()}"
        return names[0]

    def manage(self, *args: str, input: str | None = None) -> str:
        """``manage.py`` through the image's entry point in the running web container; its standard output."""
        done = run(["podman", "exec", "-i", self.container("web"), "/app/docker/entrypoint.sh", "manage", *args],
                   env=self.env, timeout=300, input=input)
        return done.stdout

    def python(self, code: str) -> object:
        """Run ``code`` in Django's shell in the web container; it prints one JSON value, returned decoded."""
        return json.loads(self.manage("shell", "-c", code).strip().splitlines()[-1])

    def healthcheck(self, service: str, *, within: float = 90) -> None:
        deadline = time.monotonic() + within
        while True:
            done = run(["podman", "healthcheck", "run", self.container(service)], env=self.env, check=False)
            if done.returncode == 0:
                return
            assert time.monotonic() < deadline, (
                f"{service} unhealthy after {within:.0f}s: {done.stdout} {done.stderr}\n{self.logs(service)}")
            time.sleep(3)

    def wait_healthz(self, *, within: float = 300) -> dict:
        deadline = time.monotonic() + within
        last = ""
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=10) as response:
                    body = json.loads(response.read())
                    if body == {"database": "ok", "broker": "ok"}:
                        return body
                    last = str(body)
            except (OSError, ValueError) as exc:
                last = str(exc)
            time.sleep(2)
        raise AssertionError(f"/healthz did not answer ok within {within:.0f}s ({last}):\n{self.logs()}")

    def image_version(self, service: str) -> str:
        done = run(["podman", "inspect", "--format", "{{.ImageName}}", self.container(service)], env=self.env)
        image = done.stdout.strip()
        done = run(["podman", "inspect", "--format",
                    '{{index .Config.Labels "org.opencontainers.image.version"}}', self.container(service)],
                   env=self.env)
        return done.stdout.strip() or image

    def logs(self, *services: str) -> str:
        out = []
        for service in services or ("proxy", "web", "worker", "beat", "remote-worker", "s3"):
            done = run(["podman", "ps", "-a", "--filter", f"label=com.docker.compose.project={self.name}",
                        "--filter", f"label=com.docker.compose.service={service}", "--format", "{{.Names}}"],
                       env=self.env, check=False)
            for name in done.stdout.split():
                logs = run(["podman", "logs", "--tail", "40", name], env=self.env, check=False)
                out.append(f"--- {name}\n{logs.stdout[-2500:]}{logs.stderr[-2500:]}")
        return "\n".join(out)

    def volumes(self) -> list[str]:
        done = run(["podman", "volume", "ls", "--filter", f"label=com.docker.compose.project={self.name}",
                    "--format", "{{.Name}}"], env=self.env, check=False)
        return done.stdout.split()

    def down(self) -> None:
        self.compose("down", "--volumes", "--timeout", "20", timeout=300, check=False)
        for volume in self.volumes():  # whatever down left behind
            run(["podman", "volume", "rm", "--force", volume], env=self.env, check=False)


_TIMELINE: list[str] = []


def say(message: str) -> None:
    """A step and its time: on stderr now (shown with -s or on failure), in the terminal summary at the end."""
    line = f"[deploy {time.strftime('%H:%M:%S')}] {message}"
    _TIMELINE.append(line)
    print(line, file=sys.stderr, flush=True)


def variant(run: bytes, tag: str) -> bytes:
    """The same ranking under another run tag: a different file (checksum) for every upload."""
    return re.sub(rb"\S+$", tag.encode(), run, flags=re.M)


def prepare_site(stack: Stack) -> str:
    """The demo dataset without limits, a participant, and their API token (through the image's entry point)."""
    t0 = time.monotonic()
    stack.manage("load_demo", "--no-baselines")
    stack.python("import json; from leaderboard.models import Split; "
                 "print(json.dumps(Split.objects.filter(dataset__slug='demo').update(daily_limit=0, total_limit=0)))")
    # A participant whose address is verified: hidden splits take uploads from verified addresses only.
    stack.python("import json; from django.contrib.auth import get_user_model; "
                 "from allauth.account.models import EmailAddress; "
                 "u = get_user_model().objects.create_user('deployer', 'deployer@example.org', 'a long deploy password 42'); "
                 "EmailAddress.objects.create(user=u, email=u.email, primary=True, verified=True); "
                 "print(json.dumps(True))")
    token = stack.manage("create_api_token", "deployer", "--name", "deploy-test").strip().splitlines()[-1]
    assert token.startswith("lxb_") or len(token) > 20, token
    say(f"demo dataset, user and token in {time.monotonic() - t0:.0f}s")
    return token


def upload(client: Client, tmp_path: Path, run: bytes, name: str) -> int:
    path = tmp_path / f"{name}.trec"
    path.write_bytes(variant(run, name))
    return int(client.submit(dataset="demo", split="test", run=str(path), system_name=name)["id"])


def wait_scored(stack: Stack, ids: list[int]) -> list[list]:
    """[id, status, results, times scored] for each id, once none is queued or scoring."""
    code = ("import json; from submissions.models import Submission; "
            f"print(json.dumps([[s.pk, s.status, s.results.count(), s.events.filter(status='scored').count()] "
            f"for s in Submission.objects.filter(pk__in={ids!r}).order_by('pk')]))")
    deadline = time.monotonic() + SCORE_TIMEOUT
    while True:
        rows = stack.python(code)
        if len(rows) == len(ids) and all(status in ("scored", "failed") for _, status, _, _ in rows):
            return rows
        assert time.monotonic() < deadline, f"not all scored after {SCORE_TIMEOUT}s: {rows}\n{stack.logs()}"
        time.sleep(3)


@contextmanager
def running_stack(name: str, folder: Path, *, files: list[str] | None = None, services: tuple[str, ...] = ()):
    """``up -d`` (the given services, or all), wait for /healthz through the proxy; ``down --volumes`` after."""
    port = free_port()
    site = Stack(name=f"{name}-{os.getpid()}", env_file=write_env_file(folder / "site.env", port=port), port=port,
                 files=files or ["docker/compose.yml"])
    t0 = time.monotonic()
    try:
        site.compose("up", "-d", "--no-build", "--pull", "never", *services)
        body = site.wait_healthz()
        say(f"{name}: up, /healthz answered {body} through the proxy {time.monotonic() - t0:.0f}s after `up`")
        yield site
    finally:
        t0 = time.monotonic()
        site.down()
        say(f"{name}: down --volumes in {time.monotonic() - t0:.0f}s")
        assert site.volumes() == []
