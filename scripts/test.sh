#!/usr/bin/env bash
# Runs the whole test suite: sets up the venv, installs Debian's chromium for the browser tests
# if it is missing, starts a throwaway PostgreSQL cluster (Debian's postgresql, installed if
# missing; temporary directory, free loopback port; stopped at the end) for the PostgreSQL half,
# then pytest (unit, CLI, page and browser tests; storage-level tests on both engines) in two
# pytest-xdist workers: the browser tests and the ones that time or kill processes one after
# another in one worker, the rest beside them (IFJUDGE_TEST_WORKERS=0 runs everything in one process).
# IFJUDGE_TEST_PG=postgresql://... uses an existing server instead; IFJUDGE_TEST_PG=none skips
# the PostgreSQL half (the summary says so).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/axe.sh  # axe-core into .cache/axe for the accessibility browser test
bash scripts/nginx.sh  # Debian's nginx binary into .cache/nginx for `nginx -t` of the documented proxy config
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  fi
fi
export HF_HUB_OFFLINE=1
if [ -z "${IFJUDGE_TEST_PG:-}" ]; then
  pgdir=$(mktemp -d "${TMPDIR:-/tmp}/ifjudge-pg.XXXXXX")
  trap 'bash scripts/pg_cluster.sh stop "$pgdir"; rm -rf "$pgdir"' EXIT
  if url=$(bash scripts/pg_cluster.sh start "$pgdir"); then
    export IFJUDGE_TEST_PG="$url"
  else
    echo "could not start PostgreSQL (see $pgdir/*.log): the PostgreSQL half will not run" >&2
    cat "$pgdir"/*.log >&2 2>/dev/null || true
  fi
elif [ "$IFJUDGE_TEST_PG" = none ]; then
  unset IFJUDGE_TEST_PG
fi
workers=${IFJUDGE_TEST_WORKERS:-2}
if [ "$workers" = 0 ]; then
  .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
else
  .venv/bin/python -m pytest -q -p no:cacheprovider -n "$workers" --dist loadgroup "$@"
fi
