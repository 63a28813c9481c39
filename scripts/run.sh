#!/usr/bin/env bash
# Runs IFJudge on its embedded default: a local SQLite file (data/ifjudge.db) with the demo
# project loaded on first start, served on http://localhost:8501. The demo (public passwords) goes
# only into a new, empty database: IFJUDGE_DB naming a database with users serves it without.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1
exec .venv/bin/ifjudge serve --db "${IFJUDGE_DB:-data/ifjudge.db}" --demo --port "${PORT:-8501}"
