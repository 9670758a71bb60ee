#!/usr/bin/env bash
# Install, migrate, load the demo, create a local admin, then run gunicorn, the
# Celery workers (scoring, sweep and, where podman runs as root, the sandbox's)
# and Celery beat in the foreground. Ctrl-C stops them all.
# Safe to run again: every step is idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3.11}
VENV=${VENV:-.venv}
# Exported: the settings build the site's address (LEXBOARD_SITE_URL, the links in the workers' e-mails) from it.
export PORT=${PORT:-8000}
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
# Ctrl-C (or a TERM) is how this is meant to stop: every process is stopped warmly and the script exits 0, so
# make prints no "Error 130/143". Any other end (a process that could not be started again) keeps its status.
trap 'cleanup; echo "==> stopped"; exit 0' INT TERM
trap cleanup EXIT

# The workers and beat each run under scripts/supervise.sh, which starts them
# again when they die (kill -9, out of memory): docs/operations.md, "A worker
# that heals". Scoring: LEXBOARD_WORKER_CONCURRENCY solo workers (default 2); a
# solo worker is its own pool, so there is no pool process to lose (prefork's
# replacements wedged on the filesystem broker after kill -9 of its pool). One
# that grew past LEXBOARD_WORKER_MAX_MEMORY_KB (a 7M-line run needs ~0.7 GB) exits
# after its task and is started again: see docs/performance.md.
for i in $(seq 1 "${LEXBOARD_WORKER_CONCURRENCY:-2}"); do
  scripts/supervise.sh "$VENV/bin/celery" -A lexboard worker --loglevel=INFO --pool=solo \
    -Q "${LEXBOARD_QUEUE:-lexboard}" --hostname="worker$i@%h" &
  pids+=($!)
done
# The sweep has a queue and a small worker of its own: it repairs the scoring
# workers, so it must not wait behind them.
scripts/supervise.sh "$VENV/bin/celery" -A lexboard worker --loglevel=INFO --pool=solo \
  -Q "${LEXBOARD_SWEEP_QUEUE:-${LEXBOARD_QUEUE:-lexboard}-sweep}" --hostname="sweep@%h" &
pids+=($!)
scripts/supervise.sh "$VENV/bin/celery" -A lexboard beat --loglevel=INFO &
pids+=($!)
# The sandbox worker runs participants' container images (docs/sandbox.md): only where podman is installed and
# this runs as root. scripts/sandbox-worker.sh does what docker/entrypoint.sh's sandbox role does (a SECRET_KEY of
# its own, the leftovers of a killed worker removed first). Elsewhere the site refuses images before the upload.
sandbox=0
if [ "${LEXBOARD_SANDBOX_WORKER:-1}" = 0 ]; then
  echo "==> no sandbox worker: LEXBOARD_SANDBOX_WORKER=0 (the image form and the API refuse images)"
elif sandbox_reason="$("$PY" manage.py sandbox_ready --check 2>&1)"; then
  VENV="$VENV" scripts/supervise.sh scripts/sandbox-worker.sh &
  pids+=($!)
  sandbox=1
else
  echo "==> no sandbox worker: ${sandbox_reason:-the sandbox cannot run here} (the image form and the API refuse images)"
fi
# Threads give keep-alive, overlap database waits and outlast slow clients
# (scripts/gunicorn.conf.py, docs/performance.md).
"$VENV/bin/gunicorn" lexboard.wsgi:application --config scripts/gunicorn.conf.py --bind "127.0.0.1:$PORT" &
pids+=($!)

# Announced only once it can score: a worker on the scoring queue answers and the web answers /healthz.
echo "==> waiting for the workers and the web server to answer"
"$PY" manage.py workers_ready --timeout "${LEXBOARD_READY_TIMEOUT:-300}" --web "http://127.0.0.1:$PORT/healthz"
if [ "$sandbox" = 1 ]; then
  # Its first heartbeat: from then on the image form takes images (not fatal: the site scores runs without it).
  "$PY" manage.py sandbox_ready --timeout "${LEXBOARD_READY_TIMEOUT:-300}" \
    || echo "==> the sandbox worker has not answered: images are refused until it does (see its lines above)"
fi
echo "==> Lexboard is at http://127.0.0.1:$PORT  (Ctrl-C stops web, workers and beat)"
wait -n "${pids[@]}"
