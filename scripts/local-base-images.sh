#!/usr/bin/env bash
# Build local stand-ins for the official images docker/Dockerfile and
# docker/compose.yml use, on a machine that cannot pull from a registry:
#
#   1. debootstrap a minimal Debian bookworm from the mirror apt already uses
#      (read from the machine's apt sources; nothing about it is written into
#      the repository) and `podman import` it as localhost/lexboard-debian:bookworm;
#   2. build docker/local-base/*/Containerfile on it, each tagged as what it is
#      (localhost/lexboard-python:3.11, localhost/lexboard-postgres:15,
#      localhost/lexboard-redis:7.0, localhost/lexboard-nginx:1.22,
#      localhost/lexboard-moto:5.2.5), never under an official name: the
#      deployment test passes them through the compose file's LEXBOARD_*_IMAGE
#      variables. The machine's CA certificates
#      (/usr/local/share/ca-certificates/) go into the Python image, so pip
#      inside builds trusts what the host trusts.
#
#   scripts/local-base-images.sh            # build what is missing or out of date
#   scripts/local-base-images.sh --force    # build everything again
#   scripts/local-base-images.sh python     # only these folders (and the Debian base)
#
# Out of date: each image carries a label with a checksum of its folder
# (org.lexboard.local-base.source); an image whose folder changed since it was
# built, or that has no such label (built before it existed), is built again.
#
# Needs root, podman and debootstrap (apt-get install podman runc debootstrap).
# Mirror override: LEXBOARD_DEBIAN_MIRROR=http://... . See docker/local-base/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/podman-env.sh
. scripts/podman-env.sh

force=0
[ "${1:-}" = "--force" ] && { force=1; shift; }
only=" $* "   # folder names to build; all of them when empty

# name (what it really is: Debian's packages, not the official images) : folder
STAND_INS=(
  "localhost/lexboard-python:3.11:python"
  "localhost/lexboard-postgres:15:postgres"
  "localhost/lexboard-redis:7.0:redis"
  "localhost/lexboard-nginx:1.22:nginx"
  "localhost/lexboard-moto:5.2.5:moto"
)
BASE=localhost/lexboard-debian:bookworm

have() { podman image exists "$1"; }
LABEL=org.lexboard.local-base.source
source_sum() { (cd "docker/local-base/$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-16; }
current() {  # current <name> <folder>: the image exists and was built from the folder as it is now
  have "$1" && [ "$(podman image inspect --format "{{index .Labels \"$LABEL\"}}" "$1")" = "$(source_sum "$2")" ]
}
stamp() { date +%H:%M:%S; }
t0=$(date +%s)

for tool in podman debootstrap; do
  command -v "$tool" >/dev/null || { echo "$tool is missing: apt-get install podman runc debootstrap" >&2; exit 1; }
done

if [ $force = 1 ] || ! have "$BASE"; then
  mirror="${LEXBOARD_DEBIAN_MIRROR:-$(apt-get indextargets --format '$(REPO_URI)' \
    'Codename: bookworm' 'Label: Debian' 'Created-By: Packages' 2>/dev/null | head -n1)}"
  if [ -z "$mirror" ]; then
    echo "no Debian bookworm mirror in the apt sources; set LEXBOARD_DEBIAN_MIRROR" >&2
    exit 1
  fi
  rootfs="$(mktemp -d /var/tmp/lexboard-rootfs.XXXXXX)"
  trap 'rm -rf "$rootfs"' EXIT
  echo "[$(stamp)] debootstrap minbase bookworm from the apt mirror into $rootfs"
  debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$rootfs.log" 2>&1 \
    || { tail -n 30 "$rootfs.log" >&2; rm -f "$rootfs.log"; exit 1; }
  rm -f "$rootfs.log"
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  echo "[$(stamp)] podman import -> $BASE"
  tar -C "$rootfs" -c . | podman import --quiet - "$BASE" >/dev/null
  rm -rf "$rootfs"
  trap - EXIT
  force=1   # everything below stands on the new base
fi

context="$(mktemp -d /var/tmp/lexboard-base-context.XXXXXX)"
trap 'rm -rf "$context"' EXIT

build() {  # build <name> <folder>: quiet unless it fails
  local name="$1" folder="$2"
  cp -r "docker/local-base/$folder" "$context/$folder"
  mkdir -p "$context/$folder/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$context/$folder/ca-certificates/" 2>/dev/null || true
  if ! podman build --pull=never --tag "$name" --label "$LABEL=$(source_sum "$folder")" \
      --file "$context/$folder/Containerfile" "$context/$folder" \
      >"$context/$folder.log" 2>&1; then
    echo "building $name failed:" >&2
    tail -n 40 "$context/$folder.log" >&2
    return 1
  fi
  echo "[$(stamp)] built $name"
}

# The images on Debian's packages download in parallel; moto's stands on the Python one.
pids=()
for entry in "${STAND_INS[@]}"; do
  folder="${entry##*:}"
  name="${entry%:*}"
  if [ "$only" != "  " ] && [[ "$only" != *" $folder "* ]]; then
    continue
  fi
  if [ $force = 0 ] && current "$name" "$folder"; then
    echo "[$(stamp)] $name exists (--force builds it again)"
    continue
  fi
  if [ "$folder" = moto ]; then
    for pid in "${pids[@]}"; do wait "$pid" || exit 1; done
    pids=()
    build "$name" "$folder" || exit 1
  else
    echo "[$(stamp)] building $name"
    build "$name" "$folder" &
    pids+=($!)
  fi
done
for pid in "${pids[@]}"; do wait "$pid" || exit 1; done
echo "[$(stamp)] local base images ready in $(( $(date +%s) - t0 ))s"
