#!/usr/bin/env bash
# make run's sandbox worker (scripts/run.sh starts it under scripts/supervise.sh, which runs this again when it
# dies): what docker/entrypoint.sh's sandbox role does. It signs nothing, so the site's SECRET_KEY is replaced by a
# random key of this start's own and SECRET_KEY_FALLBACKS dropped (docs/sandbox.md, "What the sandbox worker
# holds"); what a killed worker left (containers, /output mounts) is removed first; then a Celery worker on the
# sandbox queue only. Needs podman and root (run.sh checks: `manage.py sandbox_ready --check`).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
SECRET_KEY="$("$VENV/bin/python" -c 'import secrets; print(secrets.token_urlsafe(64))')"
export SECRET_KEY
unset SECRET_KEY_FALLBACKS
"$VENV/bin/python" manage.py sandbox_leftovers
# A solo worker as make run's others (scripts/run.sh says why); its heartbeat thread beats while it runs an image.
exec "$VENV/bin/celery" -A lexboard worker --loglevel=INFO --pool=solo \
  -Q "${LEXBOARD_SANDBOX_QUEUE:-${LEXBOARD_QUEUE:-lexboard}-sandbox}" --hostname="sandbox@%h"
