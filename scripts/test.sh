#!/usr/bin/env bash
# Runs the whole test suite: sets up the venv, installs Debian's chromium for the browser tests
# if it is missing, then pytest (unit, CLI, page and browser tests).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  fi
fi
export HF_HUB_OFFLINE=1
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
