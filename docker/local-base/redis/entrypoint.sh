#!/bin/sh
# As the official redis entrypoint: without a config file, listen on every
# address with protected mode off (the container network is the boundary),
# and drop to user redis.
set -eu
if [ "${1:-}" = "redis-server" ]; then
  shift
  case "${1:-}" in
    *.conf|-v|--version|-h|--help) ;;
    *) set -- "$@" --protected-mode no --bind 0.0.0.0 ;;
  esac
  set -- redis-server "$@"
  if [ "$(id -u)" = 0 ]; then
    chown -R redis:redis /data
    exec setpriv --reuid=redis --regid=redis --init-groups "$@"
  fi
fi
exec "$@"
