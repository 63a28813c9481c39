#!/usr/bin/env bash
# Installs axe-core 4.14.1 (Deque's accessibility checker, from the npm registry) into .cache/axe, where
# the accessibility browser test (tests/e2e/test_axe_browser.py) reads
# .cache/axe/node_modules/axe-core/axe.min.js. Does nothing when it is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f .cache/axe/node_modules/axe-core/axe.min.js ]; then
  command -v npm >/dev/null || { echo "scripts/axe.sh: npm is needed to install axe-core (apt-get install npm)" >&2; exit 1; }
  mkdir -p .cache/axe
  npm install --silent --no-audit --no-fund --prefix .cache/axe axe-core@4.14.1 >/dev/null
fi
