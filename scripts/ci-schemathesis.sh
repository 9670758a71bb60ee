#!/usr/bin/env bash
# Schemathesis against a live site: gunicorn and a Celery worker on PostgreSQL + Redis, a fresh database holding
# the demo and every shipped dataset card, one verified user with a token whose upload limits are lifted. All
# checks, all phases (examples, coverage, fuzzing, stateful along the schema's links: an upload → its status →
# final / per-query / update / withdraw; one's list → compare / fusion). Exit 0 only with 0 failures.
#
#   scripts/ci-schemathesis.sh
#   ST_PG=postgres://postgres@127.0.0.1:5432 ST_REDIS=redis://127.0.0.1:6406 ST_MAX_EXAMPLES=10 scripts/ci-schemathesis.sh
#
# Uses Redis databases 12 (broker) and 13 (cache; ST_BROKER_DB, ST_CACHE_DB), a queue and a database of its own (dropped at the end). The
# in-process Schemathesis test (tests/api/test_schemathesis.py) keeps running in the suite as well.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${ST_PYTHON:-.venv/bin/python}
BIN=$(dirname "$PY")
PG=${ST_PG:-postgres://postgres@127.0.0.1:5432}
REDIS=${ST_REDIS:-redis://127.0.0.1:6379}
MAX_EXAMPLES=${ST_MAX_EXAMPLES:-20}
# A new seed each run (Schemathesis' and the upload hook's), printed: ST_SEED=<it> replays a failure.
SEED=${ST_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
. scripts/live-stack.sh
stack_init schemathesis "$PG"

export DJANGO_SETTINGS_MODULE=lexboard.settings
export DEBUG=0
export LEXBOARD_VAR_DIR="$WORK/var"
export DATABASE_URL="$PG/$DB"
export CELERY_BROKER_URL="$REDIS/${ST_BROKER_DB:-12}"
export CACHE_URL="$REDIS/${ST_CACHE_DB:-13}"
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
# A valid run of each retrieval split the demo's baselines were scored on: the upload hook
# (scripts/schemathesis_hooks.py) sends them, so uploads are accepted and the stateful chain after one runs.
export ST_RUNS="$WORK/runs" ST_SEED="$SEED"
mkdir -p "$ST_RUNS"
"$PY" manage.py shell -c "
import os
from submissions.models import Submission
for s in Submission.objects.filter(is_baseline=True, status='scored').select_related('split__dataset').order_by('pk'):
    target = os.path.join(os.environ['ST_RUNS'], f'{s.split.dataset.slug}__{s.split.name}.trec')
    if s.split.dataset.task == 'retrieval' and not os.path.exists(target):
        with s.run_file.open('rb') as f, open(target, 'wb') as out:
            out.write(f.read())
" >/dev/null
say "valid runs for the upload hook: $(ls "$ST_RUNS" | tr '\n' ' ')"
say "datasets: $("$PY" manage.py shell -c "from catalogue.models import Dataset; print(', '.join(Dataset.objects.order_by('slug').values_list('slug', flat=True)))" | tail -n 1)"

"$BIN/celery" -A lexboard worker --loglevel=INFO --concurrency=1 -Q "$LEXBOARD_QUEUE" --hostname="schemathesis-$$@%h" \
  >"$WORK/worker.log" 2>&1 &
stack_track $!
"$BIN/gunicorn" lexboard.wsgi:application --config scripts/gunicorn.conf.py --bind "127.0.0.1:$PORT" >"$WORK/web.log" 2>&1 &
stack_track $!
stack_wait_healthy
say "gunicorn on 127.0.0.1:$PORT and a worker; running Schemathesis (all checks, all phases, $MAX_EXAMPLES examples, seed $SEED: ST_SEED=$SEED replays it)"

PYTHONPATH="$PWD/scripts${PYTHONPATH:+:$PYTHONPATH}" SCHEMATHESIS_HOOKS=schemathesis_hooks \
"$BIN/schemathesis" --config-file scripts/ci-schemathesis.toml run "http://127.0.0.1:$PORT/api/v1/schema/?format=json" \
  --checks all --phases examples,coverage,fuzzing,stateful --max-examples "$MAX_EXAMPLES" \
  --header "Authorization: Token $TOKEN" --header "Accept-Encoding: identity" \
  --workers 1 --suppress-health-check all --seed "$SEED" --generation-database none --no-color
ACCEPTED=$("$PY" manage.py shell -c "
from collections import Counter
from submissions.models import Submission
runs = Submission.objects.filter(user__username='schemathesis')
print(runs.count(), dict(Counter(runs.values_list('status', flat=True))), runs.exclude(withdrawn_at=None).count())
" | tail -n 1)
say "uploads accepted (count, by status, withdrawn): $ACCEPTED"
[ "${ACCEPTED%% *}" -gt 0 ] || { echo "no upload was accepted: the upload hook (scripts/schemathesis_hooks.py) sent no valid run"; exit 1; }
say "0 failures (seed $SEED)"
