#!/usr/bin/env bash
# Start a Docker engine for the sandbox's Docker backend where none answers: install docker.io
# from the configured apt mirror (root only), then run dockerd in the background. The backend's
# containers have no network, so the engine needs no bridge and no iptables rules; vfs storage
# works on any filesystem, and the sandbox image is one 10 KB layer, so its copies cost nothing.
# Exit 0 once `docker info` answers, 1 (with the engine's last log lines) when it cannot start.
set -uo pipefail
LOG=${DOCKERD_LOG:-/tmp/harness-dockerd.log}
answers() { timeout 10 docker info >/dev/null 2>&1; }

answers && exit 0
if ! command -v dockerd >/dev/null; then
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null || {
    echo "no Docker engine: dockerd is not installed and apt-get cannot install it here"; exit 1; }
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends docker.io >/dev/null || {
    echo "no Docker engine: apt-get install docker.io failed"; exit 1; }
fi
[ "$(id -u)" = 0 ] || { echo "no Docker engine: starting dockerd needs root"; exit 1; }
nohup dockerd --iptables=false --ip6tables=false --bridge=none --storage-driver=vfs \
  >"$LOG" 2>&1 </dev/null &
for _ in $(seq 30); do
  answers && { echo "Docker engine started (log: $LOG)"; exit 0; }
  sleep 1
done
echo "no Docker engine: dockerd did not answer within 30 s; its log ($LOG) ends:"
tail -n 5 "$LOG"
exit 1
