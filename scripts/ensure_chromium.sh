#!/usr/bin/env bash
# Make sure a Chromium for the Playwright browser tests exists.
# Debian's `chromium` is used (Playwright's own download needs internet access we may not have).
set -euo pipefail
# The English model's tests refit its bigram baseline on WordNet (Debian's wordnet-base, as the build does).
if [ ! -f /usr/share/wordnet/data.noun ] && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
  echo "Installing Debian's wordnet-base for the English model's tests..."
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wordnet-base >/dev/null
fi
for b in "${CHROMIUM_PATH:-}" /usr/bin/chromium /usr/bin/chromium-browser; do
  if [ -n "$b" ] && [ -x "$b" ]; then echo "browser: $b"; exit 0; fi
done
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
  echo "Installing Debian's chromium for the browser tests..."
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  exit 0
fi
cat >&2 <<'MSG'
No Chromium found for the browser tests. Either
  sudo apt-get install chromium            (Debian/Ubuntu), or
  .venv/bin/playwright install chromium    (Playwright's own build, needs internet), then
  export CHROMIUM_PATH=/path/to/chrome     if it is not at /usr/bin/chromium.
MSG
exit 1
