#!/bin/sh
# The proxy container's command (docker/compose.yml): write the resolver line
# that docker/nginx/lexboard.conf includes, from the container's own DNS
# server (Docker's 127.0.0.11, podman's network gateway, a cluster's DNS),
# then run nginx in the foreground. nginx re-resolves `web` with it at request
# time, so web containers can be replaced one at a time without a reload.
set -eu
# Only the first: the runtime's own server comes first, and the ones after it
# (the host's, which podman appends) do not know the container names; nginx
# asks its resolvers in turn, so one of those would fail every other lookup.
server="$(awk '$1 == "nameserver" { s = $2; if (s ~ /:/) s = "[" s "]"; print s; exit }' /etc/resolv.conf)"
if [ -z "$server" ]; then
  echo "start.sh: no nameserver in /etc/resolv.conf; nginx cannot find the web containers" >&2
  exit 1
fi
echo "resolver ${server} valid=2s ipv6=off; resolver_timeout 3s;" > /etc/nginx/lexboard-resolver.conf
exec nginx -g "daemon off;"
