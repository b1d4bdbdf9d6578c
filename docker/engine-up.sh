#!/usr/bin/env bash
# Start a Docker engine if none is reachable. Idempotent.
#
# - `docker info` already works  -> do nothing (exit 0).
# - otherwise (root required): install docker.io when dockerd is missing,
#   start dockerd in the background (output to $ENVKIT_DOCKERD_LOG, default
#   /var/log/envkit-dockerd.log), record its pid in $ENVKIT_DOCKERD_PIDFILE
#   (default /var/run/envkit-dockerd.pid), wait up to $ENVKIT_DOCKERD_WAIT (60) s.
#
# All progress goes to stderr; nothing is printed on stdout.
# Exit codes: 0 engine reachable, 1 could not start it.
set -euo pipefail

LOG=${ENVKIT_DOCKERD_LOG:-/var/log/envkit-dockerd.log}
PIDFILE=${ENVKIT_DOCKERD_PIDFILE:-/var/run/envkit-dockerd.pid}
WAIT=${ENVKIT_DOCKERD_WAIT:-60}
# Extra dockerd arguments (word-split), e.g. a second daemon for testing these scripts:
# "--host unix:///tmp/d2.sock --data-root /tmp/d2 --exec-root /tmp/d2x --bridge none"
ARGS=${ENVKIT_DOCKERD_ARGS:-}

say() { echo "engine-up: $*" >&2; }

engine_ok() { docker info >/dev/null 2>&1; }

if command -v docker >/dev/null 2>&1 && engine_ok; then
    say "Docker engine already reachable; nothing to do."
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    say "no Docker engine is reachable and this is not root, so dockerd cannot be started here."
    say "Start Docker yourself (Linux: 'sudo systemctl start docker' or 'sudo dockerd &';"
    say "Windows/macOS: start Docker Desktop) or point DOCKER_HOST at a running engine."
    exit 1
fi

if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
    say "installing docker.io (apt-get) ..."
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >&2
fi

# A dockerd we started earlier may still be starting up: do not start a second.
if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
    say "dockerd (pid $(cat "$PIDFILE")) already running; waiting for it."
else
    mkdir -p "$(dirname "$LOG")" "$(dirname "$PIDFILE")"
    say "starting dockerd (log: $LOG) ..."
    # setsid: the daemon must not die with this shell's process group (Ctrl-C
    # in a CI step would otherwise take the engine down mid-run).
    # shellcheck disable=SC2086
    setsid dockerd $ARGS >>"$LOG" 2>&1 </dev/null &
    echo $! >"$PIDFILE"
fi

pid=$(cat "$PIDFILE")
for _ in $(seq 1 "$WAIT"); do
    if engine_ok; then
        say "Docker engine is up (dockerd pid $pid)."
        exit 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
        say "dockerd (pid $pid) exited during startup."
        break
    fi
    sleep 1
done

say "Docker engine did not become reachable within ${WAIT}s. Last lines of $LOG:"
tail -n 40 "$LOG" >&2 || true
exit 1
