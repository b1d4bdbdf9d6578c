#!/usr/bin/env bash
# Run a command with a Docker engine and the local base image available.
#
#   docker/with-engine.sh CMD [ARGS...]
#   e.g. ENVKIT_REQUIRE_DOCKER=1 docker/with-engine.sh .venv/bin/pytest -m docker
#
# 1. engine-up.sh (starts dockerd when none is reachable; we remember whether WE started it)
# 2. base-image.sh (cached by tag) and export ENVKIT_BASE_IMAGE=<tag>
# 3. run CMD; on exit (also INT/TERM) stop the dockerd this script started, so nothing holds
#    a CI job open. CMD's exit code is this script's exit code.
# Without root and without a reachable engine CMD still runs (docker tests then skip, or fail
# under ENVKIT_REQUIRE_DOCKER=1), after a one-line notice on stderr.
set -uo pipefail

if [ "$#" -eq 0 ]; then
    echo "usage: $0 CMD [ARGS...]" >&2
    exit 2
fi

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export ENVKIT_DOCKERD_PIDFILE=${ENVKIT_DOCKERD_PIDFILE:-/var/run/envkit-dockerd.pid}
started=0

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [ "$started" -eq 1 ]; then
        bash "$HERE/engine-down.sh" || true
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if docker info >/dev/null 2>&1; then
    :  # an engine is already up (CI service, Docker Desktop, another session): not ours
elif [ "$(id -u)" -ne 0 ]; then
    echo "with-engine: no Docker engine reachable and not root; running without one" >&2
else
    if bash "$HERE/engine-up.sh"; then
        started=1
    else
        echo "with-engine: could not start dockerd; running without an engine" >&2
    fi
fi

if docker info >/dev/null 2>&1; then
    if tag=$(bash "$HERE/base-image.sh" "${ENVKIT_BASE_IMAGE:-envkit/bookworm-python:local}"); then
        export ENVKIT_BASE_IMAGE="$tag"
    else
        echo "with-engine: building the base image failed; running anyway" >&2
    fi
fi

# Not `exec`: the EXIT trap must run after CMD to stop the engine we started. CMD runs in
# the foreground, in our process group, so Ctrl-C / a CI cancel signals it directly (and
# pytest gets its KeyboardInterrupt and removes its containers); bash runs the INT/TERM
# trap once CMD has exited.
"$@"
exit $?
