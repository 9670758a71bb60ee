#!/usr/bin/env bash
# Run a command and start it again whenever it exits (a crash, an OOM kill,
# kill -9), until this script gets TERM or INT: then the command gets TERM and
# its warm shutdown is waited for. `make run` starts its Celery worker, sweep
# worker and beat under it (docs/operations.md, "A worker that heals").
#   scripts/supervise.sh celery -A lexboard worker ...
set -u
delay=${SUPERVISE_DELAY:-2}
child=""
stopping=0
stop() {
  stopping=1
  if [ -n "$child" ]; then kill -TERM "$child" 2>/dev/null || true; fi
}
trap stop TERM INT
while :; do
  "$@" &
  child=$!
  status=0
  # `wait` returns early when a trapped signal arrives: wait until the child is gone.
  while kill -0 "$child" 2>/dev/null; do wait "$child"; status=$?; done
  if [ "$stopping" = 1 ]; then exit "$status"; fi
  echo "supervise: '$*' exited with status $status; starting it again in ${delay}s" >&2
  sleep "$delay" &
  wait $! || true
  if [ "$stopping" = 1 ]; then exit "$status"; fi
done
