# Sourced by the scripts that start a live site of their own on PostgreSQL + Redis (scripts/smoke-runtime.sh,
# scripts/ci-schemathesis.sh): a scratch folder and database, a free port, the processes stopped, the database
# dropped and the logs shown on failure at exit, and the wait until /healthz answers. One home for the start-up
# both scripts need; each keeps what it checks.
#
#   . scripts/live-stack.sh
#   stack_init smoke "$PG"          # WORK, DB, PORT, say(); the exit trap
#   PY=...; stack_create_db         # after PY is known: the database $DB under $STACK_PG
#   some-process & stack_track $!   # stopped at exit
#   stack_wait_healthy              # /healthz says database and broker ok, or exit 1 after 120 s

# stack_init NAME PG_URL: the scratch folder, the database's name, a free port, say() with seconds since start.
stack_init() {
  STACK_NAME=$1
  STACK_PG=$2
  DB="lexboard_${STACK_NAME}_$$"
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/lexboard-${STACK_NAME}.XXXXXX")"
  STACK_T0=$(date +%s)
  STACK_PIDS=()
  STACK_LOG_LINES=${STACK_LOG_LINES:-40}
  trap stack_cleanup EXIT INT TERM
}

say() { echo "[${STACK_NAME} $(( $(date +%s) - STACK_T0 ))s] $*"; }

# stack_free_port: a port nothing listens on now (asked of the kernel).
stack_free_port() {
  "$PY" -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"
}

stack_track() { STACK_PIDS+=("$1"); }

stack_create_db() {
  "$PY" -c "import psycopg,sys; c=psycopg.connect(sys.argv[1], autocommit=True); c.execute(f'CREATE DATABASE \"{sys.argv[2]}\"')" \
    "$STACK_PG/postgres" "$DB"
}

stack_cleanup() {
  local code=$?
  trap - EXIT INT TERM
  local pid log
  for pid in "${STACK_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "$code" -ne 0 ]; then
    for log in "$WORK"/*.log; do [ -e "$log" ] && { echo "--- $log"; tail -n "$STACK_LOG_LINES" "$log"; }; done
  fi
  if [ -n "${PY:-}" ]; then
    "$PY" -c "import psycopg,sys; c=psycopg.connect(sys.argv[1], autocommit=True); c.execute(f'DROP DATABASE IF EXISTS \"{sys.argv[2]}\" WITH (FORCE)')" \
      "$STACK_PG/postgres" "$DB" 2>/dev/null || true
  fi
  rm -rf "$WORK"
  exit "$code"
}

# stack_wait_healthy: until http://127.0.0.1:$PORT/healthz answers {"database": "ok", "broker": "ok"}; a process
# that died meanwhile, or 120 s without an answer, fails the script.
stack_wait_healthy() {
  local pid
  for _ in $(seq 120); do
    if "$PY" -c "import json,sys,urllib.request; b=json.load(urllib.request.urlopen(sys.argv[1], timeout=5)); sys.exit(b != {'database': 'ok', 'broker': 'ok'})" \
        "http://127.0.0.1:$PORT/healthz" 2>/dev/null; then return 0; fi
    for pid in "${STACK_PIDS[@]}"; do
      kill -0 "$pid" 2>/dev/null || { echo "a process of the stack exited before /healthz answered"; exit 1; }
    done
    sleep 1
  done
  echo "/healthz on 127.0.0.1:$PORT did not answer ok in 120 s"
  exit 1
}
