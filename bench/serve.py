"""Start the bench stack and keep it running: gunicorn + N Celery workers on PostgreSQL and Redis, DEBUG off.

    .venv/bin/python bench/serve.py                      # fresh lexboard_bench, 200 entries, port 8765
    .venv/bin/python bench/serve.py --celery-workers 2   # two worker processes
    .venv/bin/python bench/serve.py --keep               # reuse the database seeded last time

Then, from another shell, point a bench at it with ``--url http://127.0.0.1:8765``.
Ctrl-C stops every process it started. Logs: var/<db>/*.log.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Stack, log, stack_arguments  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    stack_arguments(parser)
    parser.add_argument("--keep", action="store_true", help="Reuse the seeded database (no fresh seed).")
    parser.add_argument("--prepare-only", action="store_true", help="Create and seed the database, start nothing.")
    args = parser.parse_args(argv)
    stack = Stack(name=args.db, port=args.port, web_workers=args.web_workers, web_threads=args.web_threads,
                  celery_workers=args.celery_workers, concurrency=args.concurrency, entries=args.entries,
                  broker_db=args.broker_db, cache_db=args.cache_db, fresh=not args.keep)
    if args.prepare_only:
        stack.prepare()
        return 0
    stopping = False

    def on_signal(*_):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with stack:
        log(f"bench stack at {stack.url} (db {args.db}, {args.celery_workers} worker(s) x {args.concurrency}); "
            f"state in {stack.state_file}; Ctrl-C stops it")
        while not stopping and all(p.poll() is None for p in stack.processes):
            time.sleep(0.5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
