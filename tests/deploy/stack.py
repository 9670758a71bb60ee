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
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from lexboard_cli.client import Client, ClientError
from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
IMAGE = "localhost/lexboard:deploytest"
SCORE_TIMEOUT = 300
#: The local stand-ins (scripts/local-base-images.sh), tagged as what they are and passed through the compose
#: file's image variables; the compose file's defaults stay the official images a real site pulls.
STAND_INS = {
    "LEXBOARD_PYTHON_IMAGE": "localhost/lexboard-python:3.11",
    "LEXBOARD_POSTGRES_IMAGE": "localhost/lexboard-postgres:15",
    "LEXBOARD_REDIS_IMAGE": "localhost/lexboard-redis:7.0",
    "LEXBOARD_PROXY_IMAGE": "localhost/lexboard-nginx:1.22",
    "LEXBOARD_S3_SERVER_IMAGE": "localhost/lexboard-moto:5.2.5",
}
SERVICES = ("proxy", "web", "web-2", "worker", "sweep", "beat", "remote-worker", "s3", "postgres", "redis")


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
         "--build-arg", f"PYTHON_IMAGE={STAND_INS['LEXBOARD_PYTHON_IMAGE']}",
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
        # The request loop uploads during the upgrade: more than the default 30 an hour.
        "LEXBOARD_UPLOAD_RATE=1000/h",
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
    token: str = ""

    def __post_init__(self):
        self.env = {**podman_environment(), **STAND_INS, "LEXBOARD_IMAGE": IMAGE,
                    "LEXBOARD_ENV_FILE": str(self.env_file), "LEXBOARD_BIND": f"127.0.0.1:{self.port}"}
        self.url = f"http://127.0.0.1:{self.port}"

    def compose_command(self) -> list[str]:
        """The compose command with this project's name and files, as an operator would type it."""
        files = [arg for f in self.files for arg in ("-f", f)]
        return [podman_compose(), "--in-pod", "false", "--project-name", self.name, *files]

    def compose(self, *args: str, timeout: float = 900, check: bool = True) -> subprocess.CompletedProcess:
        return run([*self.compose_command(), *args], env=self.env, timeout=timeout, check=check)

    def container(self, service: str) -> str:
        done = run(["podman", "ps", "--filter", f"label=com.docker.compose.project={self.name}",
                    "--filter", f"label=com.docker.compose.service={service}", "--format", "{{.Names}}"],
                   env=self.env)
        names = done.stdout.split()
        assert names, f"no running container for {service}:\n{self.logs()}"
        return names[0]

    def container_id(self, service: str) -> str:
        return run(["podman", "inspect", "--format", "{{.Id}}", self.container(service)], env=self.env).stdout.strip()

    def all_containers(self) -> list[str]:
        """Every container of the project, running or not."""
        done = run(["podman", "ps", "-a", "--filter", f"label=com.docker.compose.project={self.name}",
                    "--format", "{{.Names}}"], env=self.env, check=False)
        return done.stdout.split()

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

    def full_logs(self, *services: str) -> dict[str, str]:
        """Each container's whole log (standard output and error), by container name: searched, never a tail.

        Containers of the services given (default: all), running or stopped;
        podman keeps a replaced container's log only until it is removed, so
        read them before a `down`.
        """
        out = {}
        for service in services or SERVICES:
            done = run(["podman", "ps", "-a", "--filter", f"label=com.docker.compose.project={self.name}",
                        "--filter", f"label=com.docker.compose.service={service}", "--format", "{{.Names}}"],
                       env=self.env, check=False)
            for name in done.stdout.split():
                logs = run(["podman", "logs", name], env=self.env, check=False)
                out[name] = logs.stdout + logs.stderr
        return out

    def logs(self, *services: str) -> str:
        """The end of each log, for a failure message (searches use :meth:`full_logs`)."""
        return "\n".join(f"--- {name}\n{text[-2500:]}" for name, text in self.full_logs(*services).items())

    def volumes(self) -> list[str]:
        done = run(["podman", "volume", "ls", "--filter", f"label=com.docker.compose.project={self.name}",
                    "--format", "{{.Name}}"], env=self.env, check=False)
        return done.stdout.split()

    def mounted_volumes(self) -> dict[str, list[str]]:
        """The volumes each container of the project mounts (named or anonymous), by container name."""
        mounted = {}
        for name in self.all_containers():
            done = run(["podman", "inspect", "--format", '{{range .Mounts}}{{if eq .Type "volume"}}{{.Name}} {{end}}{{end}}',
                        name], env=self.env, check=False)
            mounted[name] = done.stdout.split()
        return mounted

    def down(self) -> list[str]:
        """``down --volumes``; the volumes any container had mounted that survived it (none, if all is well).

        Anonymous volumes carry no project label, so they are found through the
        containers' mounts before the down, not by listing labelled volumes after.
        """
        mounted = {volume for volumes in self.mounted_volumes().values() for volume in volumes}
        self.compose("down", "--volumes", "--timeout", "20", timeout=300, check=False)
        survivors = sorted(set(self.volumes()) | {
            volume for volume in mounted
            if run(["podman", "volume", "exists", volume], env=self.env, check=False).returncode == 0})
        for volume in survivors:  # never left on the machine, whatever the assertion says
            run(["podman", "volume", "rm", "--force", volume], env=self.env, check=False)
        return survivors


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
    stack.python("import json; from catalogue.models import Split; "
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
        anonymous = {container: [v for v in volumes if not v.startswith(f"{site.name}_")]
                     for container, volumes in site.mounted_volumes().items()}
        survivors = site.down()
        say(f"{name}: down --volumes in {time.monotonic() - t0:.0f}s")
        assert survivors == [], f"volumes that survived `down --volumes`: {survivors}"
        assert not any(anonymous.values()), f"anonymous volumes (a VOLUME in an image?): {anonymous}"


def rolling_upgrade(stack: Stack, *, on_step: Callable[[str, bool], None], timeout: float = 900) -> str:
    """scripts/rolling-upgrade.sh on this stack, its output; ``on_step(step, running)`` as each step begins.

    The script's own progress lines ("replacing web", "replacing web-2",
    "replacing worker, sweep and beat ...") are the sentinels: whatever the
    machine's speed, the caller acts while each step is under way (a clock
    alone puts nothing in a step that a fast machine finishes in seconds).
    ``running``: the script had not exited yet when the step was read.
    """
    with tempfile.TemporaryFile("w+") as errors:  # podman's own noise; shown only if the script fails
        script = subprocess.Popen(["bash", "scripts/rolling-upgrade.sh"], cwd=ROOT, text=True,
                                  env={**stack.env, "COMPOSE": " ".join(stack.compose_command())},
                                  stdout=subprocess.PIPE, stderr=errors)
        assert script.stdout is not None
        watchdog = threading.Timer(timeout, script.kill)
        watchdog.start()
        lines = []
        try:
            for line in script.stdout:
                lines.append(line)
                if step := re.fullmatch(r"\[[\d:]+\] (replacing .+)", line.strip()):
                    on_step(step.group(1), script.poll() is None)
            script.wait()
        finally:
            watchdog.cancel()
        output = "".join(lines).strip()
        if script.returncode != 0:
            errors.seek(0)
            raise AssertionError(f"scripts/rolling-upgrade.sh exited {script.returncode}:\n{output[-3000:]}\n"
                                 f"{errors.read()[-3000:]}")
    return output


class RequestLoop(threading.Thread):
    """Requests through the proxy, on loopback, while something happens to the stack: each one's status recorded.

    GETs of a few pages and API reads one after the other, and an upload with
    the project's client every ``upload_every`` seconds; bounded by
    ``max_requests`` and ``max_seconds`` whatever happens. ``failures()``: every
    answer of 500 or more and every request that got no answer at all.
    """

    PATHS = ("/healthz", "/api/v1/datasets/", "/", "/api/v1/datasets/demo/leaderboard/")

    def __init__(self, stack: Stack, *, upload_one=None, upload_every: float = 5.0, max_requests: int = 4000,
                 max_seconds: float = 900.0):
        super().__init__(name="request-loop", daemon=True)
        assert stack.url.startswith("http://127.0.0.1:"), stack.url  # loopback only
        self.stack, self.upload_one, self.upload_every = stack, upload_one, upload_every
        self.max_requests, self.max_seconds = max_requests, max_seconds
        self.records: list[tuple[float, str, object]] = []
        self.uploaded: list[int] = []
        self._halt = threading.Event()

    def __enter__(self) -> RequestLoop:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self._halt.set()
        self.join(timeout=120)

    def _record(self, started: float, what: str, outcome: object) -> None:
        self.records.append((round(started, 2), what, outcome))

    def run(self) -> None:
        t0 = time.monotonic()
        next_upload = t0
        while not self._halt.is_set() and len(self.records) < self.max_requests:
            if time.monotonic() - t0 > self.max_seconds:
                break
            for path in self.PATHS:
                started = time.monotonic() - t0
                try:
                    with urllib.request.urlopen(self.stack.url + path, timeout=30) as response:
                        response.read()
                        self._record(started, f"GET {path}", response.status)
                except urllib.error.HTTPError as err:
                    self._record(started, f"GET {path}", err.code)
                except OSError as exc:
                    self._record(started, f"GET {path}", f"no answer: {exc}")
            if self.upload_one is not None and time.monotonic() >= next_upload:
                next_upload = time.monotonic() + self.upload_every
                started = time.monotonic() - t0
                try:
                    self.uploaded.append(self.upload_one(len(self.uploaded)))
                    self._record(started, "POST /api/v1/submissions/", 202)
                except ClientError as err:
                    self._record(started, "POST /api/v1/submissions/", err.status or f"no answer: {err}")
            time.sleep(0.05)

    def failures(self) -> list[tuple[float, str, object]]:
        return [r for r in self.records if not (isinstance(r[2], int) and r[2] < 500)]


ACCESS_LINE = re.compile(r'"[A-Z]+ (\S+) HTTP/[\d.]+" (\d{3}) ')


def proxy_5xx(log: str) -> list[str]:
    """The proxy's access-log lines with a 5xx status, from the whole log, since the site first answered 200.

    Before that (the proxy starts before the web containers: it does not depend on them) a 502 is the truth.
    """
    lines = [(m.group(2), line) for line in log.splitlines() if (m := ACCESS_LINE.search(line))]
    first_ok = next((i for i, (status, _) in enumerate(lines) if status == "200"), len(lines))
    return [line for status, line in lines[first_ok:] if status.startswith("5")]


#: Run in the worker container (its DATABASE_URL): wait until the first submission with an id above argv[1] is
#: being scored, then SIGKILL every process the Celery main process (PID 1) forked, i.e. its scoring processes,
#: mid-task. Started before the upload (a quiet machine scores the large run in about a second: a watcher started
#: after the upload's answer saw it scored already). Prints "ready" once connected, then what it killed.
KILL_SCORING_PROCESSES = r"""
import os, signal, sys, time
import psycopg
after, deadline = int(sys.argv[1]), time.monotonic() + float(sys.argv[2])
with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
    print("ready", flush=True)
    while True:
        row = conn.execute("SELECT id, status, progress FROM submissions_submission WHERE id > %s ORDER BY id LIMIT 1",
                           (after,)).fetchone()
        if row is not None:
            submission_id, status, progress = row
            if status == "scoring":
                break
            if status != "queued":
                sys.exit(f"submission {submission_id} is {status!r}, never seen in scoring")
        if time.monotonic() > deadline:
            sys.exit(f"no submission after {after} was seen in scoring")
        time.sleep(0.005)
children = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[1] == "1":
                    children.append(int(pid))
        except OSError:
            pass
for pid in children:
    os.kill(pid, signal.SIGKILL)
print(f"killed {children} while submission {submission_id} was in scoring (progress {progress})")
"""


def scoring_killer(stack: Stack, *, after: int, within: float = 120) -> subprocess.Popen:
    """Start watching (before the upload): SIGKILL the composed worker's scoring processes as soon as the first
    submission with an id above ``after`` is being scored. Returns once the watcher is connected; ``killed``
    waits for it."""
    watcher = subprocess.Popen(["podman", "exec", "-i", stack.container("worker"), "python", "-", str(after),
                                str(within)], cwd=ROOT, env=stack.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    assert watcher.stdin is not None and watcher.stdout is not None
    watcher.stdin.write(KILL_SCORING_PROCESSES)
    watcher.stdin.close()
    ready = watcher.stdout.readline().strip()
    assert ready == "ready", (ready, watcher.stderr.read() if watcher.stderr else "")
    return watcher


def killed(watcher: subprocess.Popen, *, timeout: float = 180) -> str:
    """What the watcher of ``scoring_killer`` killed (an AssertionError with its message when it did not)."""
    assert watcher.stdout is not None and watcher.stderr is not None
    out = watcher.stdout.read()  # to the end: the watcher exits once it killed, or at its deadline
    err = watcher.stderr.read()
    watcher.wait(timeout=timeout)
    if watcher.returncode != 0:
        raise AssertionError(f"the scoring killer exited {watcher.returncode}:\n{out[-3000:]}\n{err[-3000:]}")
    return out.strip()
