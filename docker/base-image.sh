#!/usr/bin/env bash
# Build the local base image envkit tests build FROM (no registry needed).
#
#   docker/base-image.sh [NAME:TAG]      default: envkit/bookworm-python:local
#
# Debian bookworm minbase + python3, python3-venv, python3-pip, ca-certificates,
# made with debootstrap from the mirror apt already uses and `docker import`ed.
# Cached by tag: skipped when the image already exists.
# Progress goes to stderr; the tag is printed on stdout at the end.
set -euo pipefail

TAG=${1:-envkit/bookworm-python:local}
SUITE=${ENVKIT_BASE_SUITE:-bookworm}
INCLUDE=python3,python3-venv,python3-pip,ca-certificates

say() { echo "base-image: $*" >&2; }

if docker image inspect "$TAG" >/dev/null 2>&1; then
    say "$TAG already present; skipping build."
    echo "$TAG"
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    say "building $TAG needs root (debootstrap); run as root or build it elsewhere."
    exit 1
fi

if ! command -v debootstrap >/dev/null 2>&1; then
    say "installing debootstrap (apt-get) ..."
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >&2
fi

# The mirror apt already uses: deb822 "URIs:" lines first, then the classic
# sources.list. The first Debian (non-security) URI wins; no registry or
# other network is assumed.
mirror() {
    local m=""
    if [ -n "${ENVKIT_DEBIAN_MIRROR:-}" ]; then echo "$ENVKIT_DEBIAN_MIRROR"; return; fi
    shopt -s nullglob
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        m=$(awk 'tolower($1)=="uris:" {for (i=2;i<=NF;i++) print $i}' "$f" \
            | grep -v -- '-security' | head -n1 || true)
        [ -n "$m" ] && { echo "$m"; return; }
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        m=$(awk '$1=="deb" { for (i=2;i<=NF;i++) if ($i ~ /^[a-z]+:\/\//) { print $i; break } }' "$f" \
            | grep -v -- '-security' | head -n1 || true)
        [ -n "$m" ] && { echo "$m"; return; }
    done
    echo "http://deb.debian.org/debian"
}
MIRROR=$(mirror)

WORK=$(mktemp -d /tmp/envkit-base.XXXXXX)
cleanup() {
    # debootstrap may leave proc/sys mounted inside the rootfs on failure;
    # unmount before rm so rm -rf never walks into the host's /proc.
    local mnt
    for mnt in $(awk -v w="$WORK" 'index($2, w)==1 {print $2}' /proc/mounts | sort -r); do
        umount -l "$mnt" 2>/dev/null || true
    done
    rm -rf "$WORK"
}
trap cleanup EXIT

say "debootstrap $SUITE from $MIRROR (takes a minute or two) ..."
if ! debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$WORK/rootfs" "$MIRROR" \
        >"$WORK/debootstrap.log" 2>&1; then
    say "debootstrap failed; last lines of its log:"
    tail -n 30 "$WORK/debootstrap.log" >&2
    [ -f "$WORK/rootfs/debootstrap/debootstrap.log" ] && tail -n 30 "$WORK/rootfs/debootstrap/debootstrap.log" >&2
    exit 1
fi
# Keep the image small: the apt lists and .deb cache are not needed at runtime.
rm -rf "$WORK"/rootfs/var/cache/apt/archives/*.deb "$WORK"/rootfs/var/lib/apt/lists/*

say "importing rootfs as $TAG ..."
tar -C "$WORK/rootfs" -c . | docker import \
    -c 'ENV LANG=C.UTF-8' \
    -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    -c 'CMD ["/bin/bash"]' \
    -m "envkit local base image ($SUITE minbase + python3)" - "$TAG" >/dev/null
say "built $TAG."
echo "$TAG"
