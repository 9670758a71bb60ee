#!/usr/bin/env bash
# Does requirements.txt alone run the site on PostgreSQL + Redis? (The README's
# "PostgreSQL and Redis instead" and the image's install step.)
#
# Builds a virtualenv from requirements.txt only (no dev requirements), starts
# web (gunicorn as `make run` does), a Celery worker and Celery beat on the
# Redis broker and a fresh PostgreSQL database, uploads one run with the
# project's client and waits until the worker has scored it. Then stops
# everything and drops the database.
#
#   scripts/smoke-runtime.sh
#   SMOKE_PG=postgres://postgres@127.0.0.1:5432 SMOKE_REDIS=redis://127.0.0.1:6379 scripts/smoke-runtime.sh
#
# Uses Redis databases 10 (broker) and 11 (cache) and a queue of its own.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3.11}
PG=${SMOKE_PG:-postgres://postgres@127.0.0.1:5432}
REDIS=${SMOKE_REDIS:-redis://127.0.0.1:6379}
VENV=${SMOKE_VENV:-var/smoke-venv}
. scripts/live-stack.sh
STACK_LOG_LINES=30
stack_init smoke "$PG"

if [ ! -x "$VENV/bin/python" ] || [ requirements.txt -nt "$VENV/.installed" ]; then
  # Replaced only if this script made it: SMOKE_VENV pointed at a development virtualenv must not wipe it.
  if [ -e "$VENV" ] && [ ! -e "$VENV/.smoke-venv" ]; then
    echo "$VENV was not made by this script (no $VENV/.smoke-venv) and is older than requirements.txt: not replacing it;"
    echo "point SMOKE_VENV at a folder of its own, or remove $VENV yourself"
    exit 2
  fi
  say "virtualenv from requirements.txt only in $VENV"
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet -r requirements.txt
  touch "$VENV/.installed" "$VENV/.smoke-venv"
fi
PY="$VENV/bin/python"

export DJANGO_SETTINGS_MODULE=lexboard.settings
export DEBUG=0
export LEXBOARD_VAR_DIR="$WORK/var"
export DATABASE_URL="$PG/$DB"
export CELERY_BROKER_URL="$REDIS/10"
export CACHE_URL="$REDIS/11"
export LEXBOARD_QUEUE="lexboard-smoke-$$"
export LEXBOARD_RELEASE="smoke-$$"
PORT=$(stack_free_port)

stack_create_db
say "database $DB; migrating, loading the demo dataset"
"$PY" manage.py migrate --noinput >/dev/null
"$PY" manage.py load_demo --no-baselines >/dev/null
"$PY" manage.py load_demo --export "$WORK/demo" >/dev/null
# A participant with a verified address: hidden splits take uploads from verified addresses only.
"$PY" manage.py shell -c "from django.contrib.auth import get_user_model; from allauth.account.models import EmailAddress; u = get_user_model().objects.create_user('smoke', 'smoke@example.org', 'a long smoke password 42'); EmailAddress.objects.create(user=u, email=u.email, primary=True, verified=True)" >/dev/null
TOKEN=$("$PY" manage.py create_api_token smoke 2>/dev/null)

"$VENV/bin/celery" -A lexboard worker --loglevel=INFO --concurrency=1 --hostname="smoke-$$@%h" >"$WORK/worker.log" 2>&1 &
stack_track $!
"$VENV/bin/celery" -A lexboard beat --loglevel=INFO --schedule "$WORK/beat-schedule" >"$WORK/beat.log" 2>&1 &
stack_track $!
"$VENV/bin/gunicorn" lexboard.wsgi:application --config scripts/gunicorn.conf.py --bind "127.0.0.1:$PORT" \
  >"$WORK/web.log" 2>&1 &
stack_track $!

stack_wait_healthy
say "web, worker and beat started; /healthz ok on the Redis broker"

"$PY" -m lexboard_cli.client submit --url "http://127.0.0.1:$PORT" --token "$TOKEN" --dataset demo --split test \
  --run "$WORK/demo/runs/bm25.test.trec" --system-name "smoke BM25" --wait --timeout 300
grep -q "Scheduler: Sending due task\|beat: Starting" "$WORK/beat.log" || { echo "beat did not start"; exit 1; }
for pid in "${STACK_PIDS[@]}"; do kill -0 "$pid" || { echo "a process died"; exit 1; }; done
say "scored by the worker; requirements.txt alone runs web, worker and beat on PostgreSQL + Redis"
