#!/usr/bin/env bash
# Schemathesis against a live site: gunicorn and a Celery worker on PostgreSQL + Redis, a fresh database holding
# the demo and every shipped dataset card, one verified user with a token whose upload limits are lifted. All
# checks, all phases (examples, coverage, fuzzing, stateful along the schema's links: an upload → its status →
# final / per-query / update / withdraw; one's list → compare / fusion). Exit 0 only with 0 failures.
#
#   scripts/ci-schemathesis.sh
#   ST_PG=postgres://postgres@127.0.0.1:5432 ST_REDIS=redis://127.0.0.1:6406 ST_MAX_EXAMPLES=10 scripts/ci-schemathesis.sh
#
# Uses Redis databases 12 (broker) and 13 (cache), a queue and a database of its own (dropped at the end). The
# in-process Schemathesis test (tests/api/test_schemathesis.py) keeps running in the suite as well.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${ST_PYTHON:-.venv/bin/python}
BIN=$(dirname "$PY")
PG=${ST_PG:-postgres://postgres@127.0.0.1:5432}
REDIS=${ST_REDIS:-redis://127.0.0.1:6379}
MAX_EXAMPLES=${ST_MAX_EXAMPLES:-20}
. scripts/live-stack.sh
stack_init schemathesis "$PG"

export DJANGO_SETTINGS_MODULE=lexboard.settings
export DEBUG=0
export LEXBOARD_VAR_DIR="$WORK/var"
export DATABASE_URL="$PG/$DB"
export CELERY_BROKER_URL="$REDIS/12"
export CACHE_URL="$REDIS/13"
export LEXBOARD_QUEUE="lexboard-schemathesis-$$"
export LEXBOARD_RELEASE="schemathesis-$$"
# Its user's upload limits lifted: the rates here, the splits' quotas in its own database below. Otherwise most
# uploads and fusions answer 429 and their logic is barely exercised.
export LEXBOARD_UPLOAD_RATE=100000/h LEXBOARD_UPLOAD_NETWORK_RATE=100000/h
PORT=$(stack_free_port)

stack_create_db
say "database $DB: migrating, loading the dataset cards and the demo with its baselines"
"$PY" manage.py migrate --noinput >/dev/null
"$PY" manage.py load_cards >/dev/null
"$PY" manage.py load_demo --depth 100 >/dev/null  # baselines 100 deep: the reads have entries, the setup stays short
TOKEN=$("$PY" manage.py shell -c "
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from catalogue.models import Split
from accounts.models import ApiToken
user = get_user_model().objects.create_user('schemathesis', 'schemathesis@example.org', 'a long fuzzing password 42')
EmailAddress.objects.create(user=user, email=user.email, primary=True, verified=True)
Split.objects.update(daily_limit=0, total_limit=0)
print(ApiToken.issue(user=user, name='schemathesis')[1])
" | tail -n 1)
say "datasets: $("$PY" manage.py shell -c "from catalogue.models import Dataset; print(', '.join(Dataset.objects.order_by('slug').values_list('slug', flat=True)))" | tail -n 1)"

"$BIN/celery" -A lexboard worker --loglevel=INFO --concurrency=1 -Q "$LEXBOARD_QUEUE" --hostname="schemathesis-$$@%h" \
  >"$WORK/worker.log" 2>&1 &
stack_track $!
"$BIN/gunicorn" lexboard.wsgi:application --config scripts/gunicorn.conf.py --bind "127.0.0.1:$PORT" >"$WORK/web.log" 2>&1 &
stack_track $!
stack_wait_healthy
say "gunicorn on 127.0.0.1:$PORT and a worker; running Schemathesis (all checks, all phases, $MAX_EXAMPLES examples)"

"$BIN/schemathesis" --config-file scripts/ci-schemathesis.toml run "http://127.0.0.1:$PORT/api/v1/schema/?format=json" \
  --checks all --phases examples,coverage,fuzzing,stateful --max-examples "$MAX_EXAMPLES" \
  --header "Authorization: Token $TOKEN" --header "Accept-Encoding: identity" \
  --workers 1 --suppress-health-check all --seed 0 --generation-database none --no-color
say "0 failures"
