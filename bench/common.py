"""What the bench scripts share: the bench stack (gunicorn + Celery workers on PostgreSQL and Redis), HTTP helpers, runs.

The stack is the production one (``lexboard.settings.production``, DEBUG off,
whitenoise serving the collected static files through gunicorn), on a
database of its own (``lexboard_bench`` by default, created afresh) and Redis
databases of its own, so a bench never touches a developer's data or the
test suite's. Every process it starts is in its own process group and is
stopped by its id.

Run from the repository root with the project's virtualenv, e.g.
``.venv/bin/python bench/serve.py``.
"""

from __future__ import annotations

import gzip
import json
import os
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
PG_URL = os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432")
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379")
MACHINE_NOTE = f"{os.cpu_count()} cores, shared"

if str(BASE_DIR) not in sys.path:
    sys.path.insert(0, str(BASE_DIR))


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- PostgreSQL and Redis ------------------------------------------------------------


def _psql(sql: str, *, database: str = "postgres") -> None:
    import psycopg

    with psycopg.connect(f"{PG_URL}/{database}", autocommit=True) as conn:
        conn.execute(sql)


def postgres_available() -> bool:
    try:
        _psql("SELECT 1")
    except Exception:
        return False
    return True


def redis_available() -> bool:
    try:
        import redis

        return bool(redis.Redis.from_url(f"{REDIS_URL}/0", socket_timeout=2).ping())
    except Exception:
        return False


def recreate_database(name: str) -> None:
    """Drop and create ``name`` (only bench databases: the name must start with ``lexboard_bench``)."""
    if not name.startswith("lexboard_bench"):
        raise ValueError(f"refusing to drop {name!r}: bench databases are named lexboard_bench*")
    _psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    _psql(f'CREATE DATABASE "{name}"')


def flush_redis_db(db: int) -> None:
    import redis

    redis.Redis.from_url(f"{REDIS_URL}/{db}").flushdb()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- the stack --------------------------------------------------------------------------


@dataclass
class Stack:
    """gunicorn and ``celery_workers`` Celery worker processes against a bench database.

    ``prepare()`` creates the database and seeds it; ``start()`` starts the
    processes and waits until they answer; ``stop()`` stops them. As a
    context manager: prepare (when ``fresh``), start, and stop on exit.
    """

    name: str = "lexboard_bench"
    port: int = 8765
    web_workers: int = 3
    web_threads: int = 4  # gthread: keep-alive, and a thread waiting on the database frees the CPU
    celery_workers: int = 1
    concurrency: int = 1
    worker_nice: int = 0  # > 0: the workers yield the CPU to the web, as on machines of their own
    broker_db: int = 12
    cache_db: int = 13
    entries: int = 200
    fresh: bool = True
    # The embedded default (`make run`'s): SQLite in var/<name>/, kombu's filesystem broker, the local-memory
    # cache; no PostgreSQL or Redis.
    embedded: bool = False
    extra_env: dict = field(default_factory=dict)
    gunicorn_args: list = field(default_factory=list)
    celery_args: list = field(default_factory=list)
    processes: list = field(default_factory=list, repr=False)

    @property
    def var_dir(self) -> Path:
        return BASE_DIR / "var" / self.name

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def state_file(self) -> Path:
        return self.var_dir / "state.json"

    @property
    def token_file(self) -> Path:
        return self.var_dir / "token"

    def env(self) -> dict:
        secret_file = self.var_dir / "secret_key"
        if not secret_file.exists():
            self.var_dir.mkdir(parents=True, exist_ok=True)
            secret_file.write_text(secrets.token_urlsafe(60))
        return {
            **{k: v for k, v in os.environ.items()
               if not k.startswith(("LEXBOARD_", "DJANGO_")) and k not in ("DATABASE_URL", "CELERY_BROKER_URL",
                                                                          "CACHE_URL")},
            "DJANGO_SETTINGS_MODULE": "lexboard.settings.production",
            "DEBUG": "0",
            "SECRET_KEY": secret_file.read_text().strip(),
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "SECURE_SSL_REDIRECT": "0",  # plain HTTP on loopback; TLS would end at a proxy
            "EMAIL_BACKEND": "django.core.mail.backends.console.EmailBackend",
            **({} if self.embedded else {
                "DATABASE_URL": f"{PG_URL}/{self.name}",
                "CELERY_BROKER_URL": f"{REDIS_URL}/{self.broker_db}",
                "CACHE_URL": f"{REDIS_URL}/{self.cache_db}",
            }),
            "LEXBOARD_VAR_DIR": str(self.var_dir),
            "LEXBOARD_QUEUE": f"{self.name}-queue",
            "LEXBOARD_UPLOAD_RATE": "100000/h",  # the bench user uploads 100 runs at once
            "LOG_LEVEL": "WARNING",
            "LEXBOARD_SITE_URL": f"http://127.0.0.1:{self.port}",  # the pages workers render ahead
            "PYTHONUNBUFFERED": "1",
            **self.extra_env,
        }

    def manage(self, *args: str, quiet: bool = True) -> str:
        out = subprocess.run(
            [PYTHON, "manage.py", *args], cwd=BASE_DIR, env=self.env(), check=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE if quiet else None, text=True,
        )
        return out.stdout

    def prepare(self) -> None:
        """A fresh database, migrated and seeded, fresh Redis databases, collected static files."""
        t0 = time.monotonic()
        shutil.rmtree(self.var_dir, ignore_errors=True)
        self.var_dir.mkdir(parents=True)
        if not self.embedded:
            recreate_database(self.name)
            flush_redis_db(self.broker_db)
            flush_redis_db(self.cache_db)
        self.manage("migrate", "--noinput")
        self.manage("collectstatic", "--noinput")
        self.manage("load_cards")
        self.manage("seed_bench", "--entries", str(self.entries), "--token-file", str(self.token_file),
                    "--state-file", str(self.state_file))
        log(f"bench database {self.name} ready in {time.monotonic() - t0:.1f}s ({self.entries} entries)")

    def _spawn(self, command: list[str], log_name: str) -> subprocess.Popen:
        logfile = open(self.var_dir / log_name, "ab")  # noqa: SIM115 (closed with the process)
        proc = subprocess.Popen(command, cwd=BASE_DIR, env=self.env(), stdout=logfile, stderr=subprocess.STDOUT,
                                start_new_session=True)
        proc._bench_log = logfile  # type: ignore[attr-defined]
        self.processes.append(proc)
        return proc

    def start(self) -> None:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                raise RuntimeError(f"port {self.port} is taken (a stack still stopping?); use --port or wait")
        # The code may have changed since the database was seeded.
        self.manage("migrate", "--noinput")
        self.manage("collectstatic", "--noinput")
        gunicorn = [
            PYTHON, "-m", "gunicorn", "lexboard.wsgi:application", "--bind", f"127.0.0.1:{self.port}",
            "--workers", str(self.web_workers), "--threads", str(self.web_threads), *self.gunicorn_args,
        ]
        self._spawn(gunicorn, "gunicorn.log")
        for i in range(self.celery_workers):
            nice = ["nice", "-n", str(self.worker_nice)] if self.worker_nice else []
            self._spawn(
                [*nice, PYTHON, "-m", "celery", "-A", "lexboard", "worker", "--loglevel=INFO", "--pool=prefork",
                 f"--concurrency={self.concurrency}", f"--hostname=bench{i}-{self.name}@%h",
                 "--without-gossip", "--without-mingle", *self.celery_args],
                f"celery-{i}.log",
            )
        self.wait_ready()

    def wait_ready(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for proc in self.processes:
                if proc.poll() is not None:
                    raise RuntimeError(f"a bench process exited early ({proc.args[:4]}); see {self.var_dir}/*.log")
            web_ok = http_status(f"{self.url}/healthz") == 200
            workers_ok = all(
                "ready." in (self.var_dir / f"celery-{i}.log").read_text(errors="replace")
                for i in range(self.celery_workers)
            )
            if web_ok and workers_ok:
                return
            time.sleep(0.3)
        raise RuntimeError(f"the bench stack did not get ready in {timeout:.0f}s; see {self.var_dir}/*.log")

    def stop(self) -> None:
        for proc in self.processes:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for proc in self.processes:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
            proc._bench_log.close()
        self.processes.clear()

    def state(self) -> dict:
        state = json.loads(self.state_file.read_text())
        state["token"] = self.token_file.read_text().strip()
        state["url"] = self.url
        return state

    def __enter__(self) -> Stack:
        if self.fresh or not self.state_file.exists():
            self.prepare()
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def stack_arguments(parser, *, celery_workers: int = 1, concurrency: int = 1) -> None:
    """Options every bench script that needs the stack takes."""
    g = parser.add_argument_group("stack")
    g.add_argument("--url", help="Use a stack already running (bench/serve.py) at this URL instead of starting one.")
    g.add_argument("--state", type=Path, help="Its state file (default: var/<db>/state.json).")
    g.add_argument("--db", default="lexboard_bench", help="Bench database name (default lexboard_bench).")
    g.add_argument("--port", type=int, default=8765)
    g.add_argument("--web-workers", type=int, default=3, help="gunicorn worker processes (default 3).")
    g.add_argument("--web-threads", type=int, default=4,
                   help="gunicorn threads per worker (default 4, the gthread worker; 1 = the sync worker).")
    g.add_argument("--celery-workers", type=int, default=celery_workers, help="Celery worker processes.")
    g.add_argument("--concurrency", type=int, default=concurrency, help="Pool size of each Celery worker.")
    g.add_argument("--worker-nice", type=int, default=0,
                   help="Run the Celery workers at this nice level (default 0): > 0 gives the web the CPU first, "
                        "as when workers run on machines of their own.")
    g.add_argument("--entries", type=int, default=200, help="Leaderboard entries to seed (default 200).")
    g.add_argument("--broker-db", type=int, default=12, help="Redis database of the broker (default 12).")
    g.add_argument("--cache-db", type=int, default=13, help="Redis database of the cache (default 13).")
    g.add_argument("--embedded", action="store_true",
                   help="The embedded default (make run's): SQLite, the filesystem broker, no Redis or PostgreSQL.")


@contextmanager
def stack_from_args(args):
    """The running stack named by ``--url`` (nothing started), or a fresh one started for this script."""
    if args.url:
        state_file = args.state or (BASE_DIR / "var" / args.db / "state.json")
        state = json.loads(Path(state_file).read_text())
        state["token"] = (Path(state_file).parent / "token").read_text().strip()
        state["url"] = args.url.rstrip("/")
        yield state
        return
    stack = Stack(name=args.db, port=args.port, web_workers=args.web_workers, web_threads=args.web_threads,
                  celery_workers=args.celery_workers, concurrency=args.concurrency, worker_nice=args.worker_nice,
                  entries=args.entries, broker_db=args.broker_db, cache_db=args.cache_db,
                  embedded=getattr(args, "embedded", False))
    with stack:
        state = stack.state()
        state["embedded"], state["var_dir"] = stack.embedded, str(stack.var_dir)
        # The Celery worker processes (each the leader of its process group), for scripts that pause them.
        state["celery_pids"] = [proc.pid for proc in stack.processes if "celery" in proc.args]
        yield state


def group_cpu_ticks(leaders: list[int]) -> int:
    """CPU time (user + system, clock ticks) of every live process in the process groups led by ``leaders`` (the
    stack starts each program in a group of its own: a Celery worker's group holds its pool and the processes they
    fork)."""
    groups, total = set(leaders), 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[2]) in groups:  # fields after the name: state, ppid, pgrp, ... utime (12), stime (13)
            total += int(fields[11]) + int(fields[12])
    return total


def wait_until_idle(leaders: list[int], *, window: float = 0.1, timeout: float = 5.0) -> float:
    """Wait until the process groups of ``leaders`` use no more than one clock tick of CPU in ``window`` seconds
    (a worker done with its task and with the pages it renders ahead after it); the seconds waited. Returns at
    ``timeout`` whatever the CPU; at once without leaders (a stack this script did not start)."""
    start = time.monotonic()
    if not leaders:
        return 0.0
    before = group_cpu_ticks(leaders)
    while time.monotonic() - start < timeout:
        time.sleep(window)
        now = group_cpu_ticks(leaders)
        if now - before <= 1:
            break
        before = now
    return time.monotonic() - start


# --- HTTP -----------------------------------------------------------------------------------


def http_status(url: str, timeout: float = 5) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            resp.read()
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return None


def get_json(url: str, *, token: str | None = None, timeout: float = 30) -> dict:
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    if token:
        request.add_header("Authorization", f"Token {token}")
    with urllib.request.urlopen(request, timeout=timeout) as resp:
        return json.loads(resp.read())


def upload_run(state: dict, data: bytes, *, system_name: str, filename: str = "run.txt.gz",
               visibility: str = "private") -> dict:
    """``POST /api/v1/submissions/`` with the bench user's token (multipart, as the documented client does)."""
    fields = {"dataset": state["dataset"], "split": state["split"], "system_name": system_name,
              "visibility": visibility}
    body, content_type = multipart(fields, filename, data)
    request = urllib.request.Request(
        state["url"] + "/api/v1/submissions/", data=body, method="POST",
        headers={"Authorization": f"Token {state['token']}", "Content-Type": content_type,
                 "Accept": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=120) as resp:
        return json.loads(resp.read())


def multipart(fields: dict, filename: str, data: bytes) -> tuple[bytes, str]:
    """A multipart/form-data body with ``fields`` and the run as ``run_file`` (in memory: runs here are small)."""
    boundary = "bench" + secrets.token_hex(12)
    parts = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="run_file"; filename="{filename}"\r\n'
        f"Content-Type: application/octet-stream\r\n\r\n".encode()
    )
    parts.append(data)
    parts.append(f"\r\n--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


# --- runs ------------------------------------------------------------------------------------


def synthetic_run(*, n_queries: int = 222, depth: int = 1000, corpus: int = 22_633, seed: int = 0,
                  qrels: dict | None = None, tag: str = "bench") -> bytes:
    """A TREC run, ``n_queries`` × ``depth`` lines, docids in 1..corpus; some relevant ones placed high."""
    import numpy as np

    rng = np.random.default_rng(seed)
    lines = []
    scores = np.round(np.linspace(100.0, 1.0, depth), 4)
    for q in range(1, n_queries + 1):
        docs = rng.choice(corpus, size=depth, replace=False) + 1
        if qrels is not None:
            for d in qrels.get(str(q), {}):
                if rng.random() < 0.6:
                    pos = int(rng.integers(0, depth))
                    if int(d) not in docs:
                        docs[pos] = int(d)
        qid = str(q)
        lines.extend(f"{qid} Q0 {d} {r} {s} {tag}\n" for r, (d, s) in enumerate(zip(docs.tolist(),
                                                                                   scores.tolist()), 1))
    return "".join(lines).encode()


def gzipped(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=6)


def quantile(values: list[float], q: float) -> float:
    values = sorted(values)
    if not values:
        return float("nan")
    pos = (len(values) - 1) * q
    lo, hi = int(pos), min(int(pos) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def markdown_table(header: list[str], rows: list[list]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)
