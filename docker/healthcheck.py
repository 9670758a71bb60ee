"""Container health checks: `python docker/healthcheck.py web|worker|sweep|sandbox|beat`. Exit 0 when healthy.

- web: GET /healthz on this container (database and broker), as the proxy would send it.
- worker: the Celery worker of this container answers a ping through the broker.
- beat: celery beat (started with --enable-remote-control) answers a ping; it
  stops answering when its scheduler loop is stuck.
"""

from __future__ import annotations

import os
import socket
import sys
import urllib.error
import urllib.request


def _public_host() -> str:
    """A host name the site accepts: the first non-wildcard entry of ALLOWED_HOSTS."""
    for host in os.environ.get("ALLOWED_HOSTS", "").split(","):
        host = host.strip().lstrip(".")
        if host and host != "*":
            return host
    return "localhost"


def check_web() -> bool:
    port = os.environ.get("PORT", "8000")
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/healthz",
        headers={"Host": _public_host(), "X-Forwarded-Proto": "https"},
    )
    try:
        with urllib.request.urlopen(request, timeout=8) as response:
            return response.status == 200
    except urllib.error.HTTPError as err:
        print(f"/healthz answered {err.code}: {err.read(200)!r}", file=sys.stderr)
        return False
    except OSError as exc:
        print(f"/healthz unreachable: {exc}", file=sys.stderr)
        return False


def check_celery(node: str) -> bool:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexboard.settings.production")
    from lexboard.celery import app

    name = f"{node}@{socket.gethostname()}"
    try:
        replies = app.control.ping(destination=[name], timeout=8)
    except Exception as exc:
        print(f"ping {name} failed: {exc}", file=sys.stderr)
        return False
    if not any(name in reply for reply in replies):
        print(f"{name} did not answer a ping", file=sys.stderr)
        return False
    return True


def main(argv: list[str]) -> int:
    role = argv[0] if argv else "web"
    if role == "web":
        return 0 if check_web() else 1
    if role == "worker":
        return 0 if check_celery("worker") else 1
    if role == "sweep":
        return 0 if check_celery("sweep") else 1
    if role == "sandbox":
        return 0 if check_celery("sandbox") else 1
    if role == "beat":
        return 0 if check_celery("celerybeat") else 1
    print(f"unknown role {role!r}: expected web, worker, sweep, sandbox or beat", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
