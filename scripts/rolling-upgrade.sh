#!/usr/bin/env bash
# Upgrade a running docker/compose.yml deployment with no failed request:
# replace the web containers one at a time (the proxy sends every request to
# the one still serving), then the worker, sweep and beat.
#
#   docker compose --env-file .env -f docker/compose.yml build      # the new image first
#   scripts/rolling-upgrade.sh                                       # then this
#
# COMPOSE is the compose command with its files (default: `docker compose
# --env-file .env -f docker/compose.yml`, or podman-compose where docker is
# missing); LEXBOARD_WEB_SERVICES the web services in order (default "web web-2");
# LEXBOARD_UPGRADE_WAIT how long a new web container may take to pass its
# health check (default 300 s). docs/deploy.md, section 3.
#
# Why it works: nginx finds the web containers by name at request time
# (docker/nginx/lexboard.conf), and a connection refused by a stopping or
# starting container is retried on the other one; gunicorn finishes the
# requests it has before it exits. The worker stops after its current task
# (late acknowledgement: a task cut short is delivered again).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${COMPOSE:-}" ]; then
  if command -v docker >/dev/null 2>&1; then
    COMPOSE="docker compose --env-file .env -f docker/compose.yml"
  else
    COMPOSE="podman-compose --env-file .env -f docker/compose.yml"
  fi
fi
read -r -a compose <<<"$COMPOSE"
read -r -a web_services <<<"${LEXBOARD_WEB_SERVICES:-web web-2}"
wait_s="${LEXBOARD_UPGRADE_WAIT:-300}"
stamp() { date +%H:%M:%S; }

healthy() {  # healthy <service>: its own health check passes inside the container
  "${compose[@]}" exec -T "$1" python /app/docker/healthcheck.py web >/dev/null 2>&1
}

for service in "${web_services[@]}"; do
  if ! healthy "$service"; then
    echo "[$(stamp)] $service is not healthy before the upgrade: replacing it now would leave no web container;" \
         "fix it first (logs: ${COMPOSE} logs $service)" >&2
    exit 1
  fi
done

for service in "${web_services[@]}"; do
  echo "[$(stamp)] replacing $service"
  "${compose[@]}" up -d --no-deps --no-build --force-recreate "$service" >/dev/null
  deadline=$(( $(date +%s) + wait_s ))
  until healthy "$service"; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "[$(stamp)] the new $service did not pass its health check within ${wait_s}s; the other web" \
           "containers still serve. Look at: ${COMPOSE} logs $service" >&2
      exit 1
    fi
    sleep 2
  done
  echo "[$(stamp)] $service serves the new image"
done

echo "[$(stamp)] replacing worker, sweep and beat (the worker finishes its current task first)"
"${compose[@]}" up -d --no-deps --no-build --force-recreate worker sweep beat >/dev/null
echo "[$(stamp)] upgrade done"
