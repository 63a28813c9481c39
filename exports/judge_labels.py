"""A judge run's answers written out with their provenance.

- CSV: ``instance_id,question,doc_id,value`` (the shape ``ifjudge report --judge FILE.csv`` reads:
  ``best_passage`` as Yes / No, is the dataset's target the judge's pick), then the judge's own
  answer (``answer``), ``score``, ``error`` and the provenance of the run on every row (``judge``,
  ``model``, ``base_url``, ``prompt_version``, ``prompt_hash``, ``run_id``) and of the answer
  (``created_at``, ``retries``, ``prompt_tokens``, ``completion_tokens``, ``counted_tokens``);
- JSONL: one object per answer with the same fields, its payload and the raw reply, after a first
  line ``{"judge_run": {...}}`` holding the run's whole configuration (prompt text included).

Judge labels are never part of the human label exports (``ifjudge labels``, the validated
exports); this is their only way out.
"""
from __future__ import annotations

import csv
import json
from datetime import datetime, timezone
from pathlib import Path

from evaluation.judges.questions import judge_question
from storage import judge_labels as store
from storage.db import Database
from storage.errors import IFJudgeError

RUN_FIELDS = ("run_id", "judge", "model", "base_url", "prompt_version", "prompt_hash")
LABEL_FIELDS = ("answer", "score", "error", "created_at", "retries", "prompt_tokens", "completion_tokens",
                "counted_tokens")
CSV_FIELDS = ("instance_id", "question", "doc_id", "value", *LABEL_FIELDS, *RUN_FIELDS)


def export_rows(db: Database, run_id: int) -> tuple[dict, list[dict]]:
    """``(run, rows)``: the run as stored and one row per answer (:data:`CSV_FIELDS`, plus
    ``payload`` and ``raw``)."""
    run = store.get_run(db, run_id)
    q = judge_question(run["question"])
    prov = {"run_id": run["id"], **{k: run[k] for k in RUN_FIELDS[1:]}}
    rows = []
    for lab in store.labels(db, run_id):
        value = None if lab["value"] is None else q.estimand(lab["value"], lab["payload"])
        rows.append({"instance_id": lab["instance_id"], "question": lab["question"], "doc_id": lab["doc_id"],
                     "value": value, "answer": lab["value"], "score": lab["score"], "error": lab["error"],
                     "created_at": datetime.fromtimestamp(lab["created_at"], timezone.utc).isoformat(timespec="seconds"),
                     **{k: lab[k] for k in ("retries", "prompt_tokens", "completion_tokens", "counted_tokens")},
                     **prov, "payload": lab["payload"], "raw": lab["raw"]})
    return run, rows


def write_judge_labels(db: Database, run_id: int, path: str | Path) -> dict:
    """Write the run's answers to ``path`` (``.csv`` or ``.jsonl``); returns ``{"path", "rows"}``."""
    path = Path(path)
    if path.suffix not in (".csv", ".jsonl"):
        raise IFJudgeError(f"{path}: write judge labels to a .csv or a .jsonl file")
    run, rows = export_rows(db, run_id)
    if path.suffix == ".csv":
        rows = [r for r in rows if r["value"] is not None]  # the estimates' file: answers only
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as f:
        if path.suffix == ".csv":
            w = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
            w.writeheader()
            w.writerows([{k: ("" if v is None else v) for k, v in r.items()} for r in rows])
        else:
            f.write(json.dumps({"judge_run": run}, ensure_ascii=False) + "\n")
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return {"path": str(path), "rows": len(rows)}
