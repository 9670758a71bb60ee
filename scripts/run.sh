#!/usr/bin/env bash
# Install, migrate, load the demo, create a local admin, then run gunicorn, a
# Celery worker and Celery beat in the foreground. Ctrl-C stops all three.
# Safe to run again: every step is idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3.11}
VENV=${VENV:-.venv}
PORT=${PORT:-8000}
PY="$VENV/bin/python"

if [ ! -x "$PY" ]; then
  echo "==> creating virtualenv in $VENV"
  "$PYTHON" -m venv "$VENV"
fi
stamp="$VENV/.installed-runtime"
if [ ! -f "$stamp" ] || [ requirements.txt -nt "$stamp" ]; then
  echo "==> installing requirements"
  "$PY" -m pip install --quiet --upgrade pip
  "$PY" -m pip install --quiet -r requirements.txt
  touch "$stamp"
fi

echo "==> migrating the database"
"$PY" manage.py migrate --noinput
"$PY" manage.py collectstatic --noinput >/dev/null
echo "==> loading the dataset cards and the demo benchmark"
"$PY" manage.py load_cards
"$PY" manage.py load_demo
"$PY" manage.py ensure_local_admin

if ! "$PY" -c "import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1', int(sys.argv[1])))" "$PORT" 2>/dev/null; then
  echo "Port $PORT on 127.0.0.1 is taken by another program. Start on another one, e.g.: PORT=8001 make run" >&2
  exit 1
fi

pids=()
cleanup() {
  trap - INT TERM EXIT
  echo; echo "==> stopping"
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup INT TERM EXIT

# A scoring process that grew past 1.5 GB (a 7M-line run needs ~0.7 GB) is
# replaced after its task: see docs/performance.md.
"$VENV/bin/celery" -A lexboard worker --loglevel=INFO --concurrency=2 --hostname="worker@%h" \
  --max-memory-per-child=1500000 &
pids+=($!)
"$VENV/bin/celery" -A lexboard beat --loglevel=INFO &
pids+=($!)
# Threads give keep-alive, overlap database waits and outlast slow clients
# (scripts/gunicorn.conf.py, docs/performance.md).
"$VENV/bin/gunicorn" lexboard.wsgi:application --config scripts/gunicorn.conf.py --bind "127.0.0.1:$PORT" &
pids+=($!)

echo "==> Lexboard is at http://127.0.0.1:$PORT  (Ctrl-C stops web, worker and beat)"
wait -n "${pids[@]}"
