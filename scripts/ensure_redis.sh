#!/usr/bin/env bash
# Make sure redis-server and haproxy exist for the lecture-hall tests (#42): every class-store test runs on SQLite and
# on a real Redis (the tests start their own on a free loopback port, keeping nothing on disk), and the
# deploy/lecture_hall.sh test starts Redis, two replicas and HAProxy. Debian's packages; no service is started here.
# `ensure_redis.sh haproxy` checks (and installs) only what it names: `make hall` needs HAProxy, not Redis.
set -euo pipefail
wanted=("$@")
[ ${#wanted[@]} -gt 0 ] || wanted=(redis-server haproxy)
missing=()
for cmd in "${wanted[@]}"; do
  command -v "$cmd" >/dev/null || [ -x "/usr/sbin/$cmd" ] || missing+=("$cmd")
done
if [ ${#missing[@]} -eq 0 ]; then
  for cmd in "${wanted[@]}"; do echo "$cmd: $(command -v "$cmd" || echo "/usr/sbin/$cmd")"; done
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
  echo "Installing Debian's ${missing[*]} for the lecture hall and its tests..."
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  exit 0
fi
cat >&2 <<MSG
Not found: ${missing[*]}. The class-store tests run on Redis too, and fail without it; the lecture hall (make hall and
its test) needs HAProxy.
  sudo apt-get install ${missing[*]}       (Debian/Ubuntu; the tests start their own, on free loopback ports)
  brew install ${missing[*]}               (macOS)
MSG
exit 1
