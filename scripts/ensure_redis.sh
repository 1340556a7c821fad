#!/usr/bin/env bash
# Make sure redis-server and haproxy exist for the lecture-hall tests (#42): every class-store test runs on SQLite and
# on a real Redis (the tests start their own on a free loopback port, keeping nothing on disk), and the
# deploy/lecture_hall.sh test starts Redis, two replicas and HAProxy. Debian's packages; no service is started here.
set -euo pipefail
missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || missing+=(haproxy)
if [ ${#missing[@]} -eq 0 ]; then echo "redis: $(command -v redis-server)"; exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
  echo "Installing Debian's ${missing[*]} for the lecture-hall tests..."
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  exit 0
fi
cat >&2 <<MSG
Not found: ${missing[*]}. The class-store tests run on Redis too, and fail without it; the lecture-hall test needs
HAProxy.
  sudo apt-get install ${missing[*]}       (Debian/Ubuntu; the tests start their own, on free loopback ports)
  brew install redis haproxy               (macOS)
MSG
exit 1
