"""gunicorn settings for `make run` (scripts/run.sh), where nothing stands in front of gunicorn.

gthread workers hand each connection to a thread once its first bytes
arrive, and that thread reads the request head to the end. A client that
trickles its headers one line a second therefore holds a thread for as long
as it keeps trickling. With 3 processes x 4 threads, 16 such connections took
every thread and /healthz went unanswered (tests/ops/test_slow_clients.py).

Threads waiting on a socket cost no CPU and little memory, so each process
gets 32: 16 trickling connections cannot fill even one process, and every
process keeps threads for real requests. Behind the compose file's nginx,
which hands gunicorn only complete requests, 4 threads are enough
(docker/entrypoint.sh). A larger attack on a bare gunicorn is what the
buffering proxy is for (docs/deploy.md).
"""

import os

workers = int(os.environ.get("WEB_CONCURRENCY", "3"))
worker_class = "gthread"
threads = int(os.environ.get("GUNICORN_THREADS", "32"))
# A worker process silent this long is replaced (a stuck request, not a slow client).
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "60"))
# Idle keep-alive connections are parked in the poller, not in a thread; closed after this.
keepalive = 5
accesslog = "-"
# The control socket's default is in the home folder; keep it with the rest of var/.
control_socket = os.path.join(os.environ.get("LEXBOARD_VAR_DIR", "var"), "gunicorn.ctl")
