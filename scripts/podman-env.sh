# Sourced by the scripts and the deployment test that drive podman: use the
# project's containers.conf (docker/podman/containers.conf: runc, cgroupfs, a
# file events logger, limits the host grants) unless this machine configured
# podman itself (CONTAINERS_CONF set, or /etc/containers/containers.conf or
# ~/.config/containers/containers.conf present): a real podman set-up is
# never overridden.
if [ -z "${CONTAINERS_CONF:-}" ] && [ ! -e /etc/containers/containers.conf ] \
   && [ ! -e "${XDG_CONFIG_HOME:-$HOME/.config}/containers/containers.conf" ]; then
  CONTAINERS_CONF="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")/.." && pwd)/docker/podman/containers.conf"
  export CONTAINERS_CONF
fi
