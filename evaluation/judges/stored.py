"""A judge run's stored answers in the shapes the rest of IFJudge reads.

- :func:`estimate_answers`: ``{(instance id, question, doc id or ""): value}``, exactly what
  :func:`annotation.estimates.benchmark.read_judge_labels` returns for a ``--judge FILE.csv`` (``best_passage``:
  ``Yes`` / ``No``, is the dataset's target the judge's pick; every other question its answer);
- :func:`instfol_rows`: INSTFOL's judge-score rows ``(instance, mode, rank, score)``
  (:func:`evaluation.instfol.instfol`), one per mode a passage is ranked in.

Items without a readable answer (or, for a local judge, before its threshold) are left out.
"""
from __future__ import annotations

from evaluation.judges.questions import judge_question
from storage import judge_labels as store
from storage.db import Database
from storage.errors import IFJudgeError


def estimate_answers(db: Database, run_ids: list[int]) -> dict[tuple[str, str, str], str]:
    """The answers of one or more runs (of different questions) keyed as a judge's CSV file is.

    >>> from storage.db import connect
    >>> db = connect(":memory:")
    >>> estimate_answers(db, [])
    {}
    """
    out: dict[tuple[str, str, str], str] = {}
    questions: dict[str, int] = {}
    for run_id in run_ids:
        run = store.get_run(db, run_id)
        if run["question"] in questions:
            raise IFJudgeError(f"judge runs {questions[run['question']]} and {run_id} both answer {run['question']}: "
                               "name one run per question")
        questions[run["question"]] = run_id
        q = judge_question(run["question"])
        for lab in store.labels(db, run_id, with_raw=False):
            if lab["value"] is not None:
                out[(lab["instance_id"], lab["question"], lab["doc_id"] or "")] = q.estimand(lab["value"], lab["payload"])
    return out


def project_answers(db: Database, project_id: int, questions: list[str] | None = None) -> dict[tuple[str, str, str], str]:
    """:func:`estimate_answers` of the newest run with answers of each question (of ``questions``,
    or every question a run answers) in the project: what ``--judge FILE.csv`` would hold.

    >>> from storage.db import connect
    >>> from annotation.demo import load_demo
    >>> db = connect(":memory:"); _ = load_demo(db)
    >>> project_answers(db, 1, ["validity"])
    {}
    """
    newest: dict[str, int] = {}
    for run in store.list_runs(db, project_id):  # newest first
        if (questions is None or run["question"] in questions) and run["answers"]:
            newest.setdefault(run["question"], run["id"])
    return estimate_answers(db, list(newest.values()))


def instfol_rows(db: Database, run_id: int) -> list[tuple[str, str, int, float]]:
    """The judge-score rows of an ``instfol_match`` run: each passage's score is the answer's
    probability-weighted score (IFIR A.2) where the server returned log-probabilities, else the
    answer itself."""
    run = store.get_run(db, run_id)
    if run["question"] != "instfol_match":
        raise IFJudgeError(f"judge run {run_id} answers {run['question']}, not instfol_match: it gives no INSTFOL scores")
    rows = []
    for lab in store.labels(db, run_id, with_raw=False):
        if lab["value"] is None:
            continue
        score = lab["score"] if lab["score"] is not None else float(lab["value"])
        rows += [(lab["instance_id"], mode, int(rank), float(score))
                 for mode, rank in sorted(lab["payload"].get("ranks", {}).items())]
    return rows
