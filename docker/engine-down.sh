#!/usr/bin/env bash
# Stop the dockerd that engine-up.sh started (found via its pidfile).
# No-op when there is no pidfile or the process is gone. Output on stderr only.
set -euo pipefail

PIDFILE=${ENVKIT_DOCKERD_PIDFILE:-/var/run/envkit-dockerd.pid}
WAIT=${ENVKIT_DOCKERD_WAIT:-30}

say() { echo "engine-down: $*" >&2; }

if [ ! -f "$PIDFILE" ]; then
    say "no pidfile ($PIDFILE); nothing to stop."
    exit 0
fi
pid=$(cat "$PIDFILE")
if ! kill -0 "$pid" 2>/dev/null; then
    say "dockerd (pid $pid) is not running; removing stale pidfile."
    rm -f "$PIDFILE"
    exit 0
fi
# Guard against pid reuse: only signal the process if it really is dockerd.
if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" != "dockerd" ]; then
    say "pid $pid is not dockerd any more; removing stale pidfile."
    rm -f "$PIDFILE"
    exit 0
fi

say "stopping dockerd (pid $pid) ..."
kill -TERM "$pid"
for _ in $(seq 1 "$WAIT"); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$PIDFILE"; say "stopped."; exit 0; }
    sleep 1
done
say "dockerd did not exit within ${WAIT}s; sending SIGKILL."
kill -KILL "$pid" 2>/dev/null || true
rm -f "$PIDFILE"
