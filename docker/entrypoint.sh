#!/bin/sh
# Container entry point: wait for the database, then start one role.
#   web     migrate (under a lock, so several web replicas may start at once), then gunicorn
#   worker  celery worker (scores submissions)
#   sweep   a small celery worker that runs only the sweep (its own queue)
#   beat    celery beat (sends the periodic sweep); run exactly ONE beat per deployment
#   sandbox celery worker on the sandbox queue only: runs participants' images with podman
#           (docker/sandbox/Containerfile, privileged; docs/sandbox.md)
#   manage  any manage.py command, e.g. `manage createsuperuser`
# Anything else is run as given (e.g. `sh`).
set -eu

here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/.."

role="${1:-web}"
if [ "$#" -gt 0 ]; then shift; fi

wait_for_db() {
  python "$here/wait_for_db.py" "$@"
}

case "$role" in
  web)
    # The control socket's default lives in the home folder (/app), which the
    # app user may not write: it goes to the container's /tmp instead.
    wait_for_db --migrate
    exec gunicorn lexboard.wsgi:application \
      --bind "0.0.0.0:${PORT:-8000}" \
      --workers "${WEB_CONCURRENCY:-3}" \
      --threads "${GUNICORN_THREADS:-4}" \
      --timeout "${GUNICORN_TIMEOUT:-60}" \
      --forwarded-allow-ips "${FORWARDED_ALLOW_IPS:-*}" \
      --control-socket "${GUNICORN_CONTROL_SOCKET:-/tmp/gunicorn.ctl}" \
      --access-logfile - \
      "$@"
    ;;
  worker)
    wait_for_db
    exec celery -A lexboard worker \
      --loglevel "${LOG_LEVEL:-INFO}" \
      --concurrency "${LEXBOARD_WORKER_CONCURRENCY:-2}" \
      --max-memory-per-child "${LEXBOARD_WORKER_MAX_MEMORY_KB:-1500000}" \
      -Q "${LEXBOARD_QUEUE:-lexboard}" \
      --hostname "worker@%h" \
      "$@"
    ;;
  sweep)
    # The sweep's own small worker (docs/operations.md): it repairs the scoring
    # workers, so it consumes only the sweep queue and never waits behind them.
    wait_for_db
    exec celery -A lexboard worker \
      --loglevel "${LOG_LEVEL:-INFO}" \
      --pool solo \
      -Q "${LEXBOARD_SWEEP_QUEUE:-${LEXBOARD_QUEUE:-lexboard}-sweep}" \
      --hostname "sweep@%h" \
      "$@"
    ;;
  sandbox)
    # It signs nothing (no session, no reset link, no judging token): the site's SECRET_KEY is replaced by a key
    # of its own for this process, so a host that runs strangers' images never holds the site's (docs/sandbox.md,
    # "What the sandbox worker holds").
    SECRET_KEY="$(python -c 'import secrets; print(secrets.token_urlsafe(64))')"
    export SECRET_KEY
    unset SECRET_KEY_FALLBACKS
    # One sandbox worker per host (its own podman store): what a killed one left is removed first.
    wait_for_db
    python manage.py sandbox_leftovers
    exec celery -A lexboard worker \
      --loglevel "${LOG_LEVEL:-INFO}" \
      --concurrency "${LEXBOARD_SANDBOX_CONCURRENCY:-1}" \
      -Q "${LEXBOARD_SANDBOX_QUEUE:-${LEXBOARD_QUEUE:-lexboard}-sandbox}" \
      --hostname "sandbox@%h" \
      "$@"
    ;;
  beat)
    wait_for_db
    exec celery -A lexboard beat \
      --loglevel "${LOG_LEVEL:-INFO}" \
      --enable-remote-control \
      --hostname "celerybeat@%h" \
      "$@"
    ;;
  manage)
    wait_for_db
    exec python manage.py "$@"
    ;;
  *)
    exec "$role" "$@"
    ;;
esac
