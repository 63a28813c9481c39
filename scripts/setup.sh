#!/usr/bin/env bash
# Creates .venv if missing and installs the pinned requirements and the `ifjudge` command into it.
# Re-running is cheap: the install is skipped while requirements.txt and pyproject.toml are unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.ifjudge-installed
want=$(cat requirements.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/pip install --disable-pip-version-check -q -r requirements.txt 2>&1 | grep -v "^WARNING: Location" || true
  .venv/bin/pip install --disable-pip-version-check -q --no-deps -e . 2>&1 | grep -v "^WARNING: Location" || true
  .venv/bin/python -c "import streamlit, sqlite_utils, psycopg, psycopg_pool, torch, sentence_transformers, pytrec_eval, cli.main" 
  echo "$want" > "$stamp"
fi
