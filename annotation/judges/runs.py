"""Starting a judge and finishing a local one: the sequences ``ifjudge judge`` runs, one library
function each.

- :func:`prepare_run`: the items of the question (:mod:`annotation.judges.items`), the run of the
  configuration (created, or found again to resume) and the estimate of what it will send
  (:func:`evaluation.judges.runs.estimate`), before anything is sent;
- :func:`fit_threshold`: a local judge's threshold chosen on a study's human outcomes
  (:func:`evaluation.judges.local.choose_threshold`) and applied to every item of the run.
"""
from __future__ import annotations

from dataclasses import replace

from annotation.judges.agreement import categories, paired_items
from annotation.judges.items import judge_items
from annotation.questions.study import question
from evaluation.judges.local import choose_threshold
from evaluation.judges.runs import JudgeSpec, estimate, open_run
from storage import judge_labels as store
from storage import projects, studies
from storage.db import Database
from storage.errors import IFJudgeError

#: the setting keys (table ``settings``) a chat judge's endpoint and model default to
SETTING_BASE_URL, SETTING_MODEL = "judge.base_url", "judge.model"


def prepare_run(db: Database, project: dict, spec: JudgeSpec, *, created_by: str, passages: int = 3, seed: int = 0,
                runs: tuple[dict, dict] | None = None, top_k: int = 10, from_study: int | None = None,
                retry_errors: bool = False, price_in: float | None = None, price_out: float | None = None) -> dict:
    """The run of ``spec`` on ``project`` (its row, :func:`storage.projects.get_project`) with its items planned, and its estimate: ``{"run",
    "created", "items_added", "notes", "estimate"}``. ``retry_errors`` forgets the run's items
    without a readable answer, so that they are judged again."""
    items, notes = judge_items(db, project, spec.question, passages=passages, seed=seed, runs=runs, top_k=top_k,
                               from_study=from_study)
    extra = dict(spec.extra)
    asked_per = question(spec.question).asked_per  # what the items are drawn from: recorded with the run
    if asked_per == "candidates" and from_study is None:
        extra.update(passages=passages, item_seed=seed)
    if asked_per == "ranked-passages" and from_study is None:
        extra["top_k"] = top_k
    if from_study is not None:
        extra["from_study"] = from_study
    opened = open_run(db, project, replace(spec, extra=extra), items, created_by=created_by)
    if retry_errors:
        opened["errors_forgotten"] = store.delete_errors(db, opened["run"]["id"])
    return {**opened, "notes": notes, "estimate": estimate(db, opened["run"], price_in=price_in, price_out=price_out)}


def fit_threshold(db: Database, run_id: int, study_id: int) -> dict:
    """Choose a local judge's threshold on the study's decided items of its question (the cut that
    maximises Cohen's kappa with the human outcomes) and give every item of the run its value:
    the question's first answer (Yes, relevant) when the score reaches the threshold, else the
    second. Records the threshold, the study and the kappa at the fit in the run's parameters.
    Returns ``{"threshold", "kappa", "n", "values"}``."""
    run = store.get_run(db, run_id)
    if run["judge"] == "chat":
        raise IFJudgeError(f"judge run {run_id} is a chat judge: its answers need no threshold")
    if question(run["question"]).answers_are_passages:
        raise IFJudgeError(f"a local {run['question']} judge picks the best-scoring candidate: no threshold")
    study = studies.get_study(db, study_id)
    cats = categories(study, run["question"])
    if len(cats) != 2:
        raise IFJudgeError(f"a threshold splits two answers; study {study_id} asks {run['question']} on "
                           f"{len(cats)} ({', '.join(cats)})")
    rows = [r for r in paired_items(db, study_id, run)["rows"] if r["human"] in cats and r["score"] is not None]
    if not rows:
        raise IFJudgeError(f"study {study_id} has no decided {run['question']} item that the judge scored")
    fit = choose_threshold([r["score"] for r in rows], [int(r["human"] == cats[0]) for r in rows])
    if fit["threshold"] is None:
        raise IFJudgeError(f"no threshold from study {study_id}: {fit['reason']}")
    labels = store.labels(db, run_id, with_raw=False)
    values = [(lab["instance_id"], lab["question"], lab["doc_id"], cats[0] if lab["score"] >= fit["threshold"] else cats[1])
              for lab in labels if lab["score"] is not None]
    store.set_values(db, run_id, values)
    store.update_parameters(db, run_id, {"threshold": fit["threshold"], "threshold_study": study_id,
                                         "threshold_kappa": fit["kappa"], "threshold_items": fit["n"]})
    return {**fit, "values": len(values), "categories": list(cats)}


def judge_settings(db: Database) -> dict:
    """The chat judge's endpoint and model kept in the database (``None`` when not set)."""
    values = store.settings(db, [SETTING_BASE_URL, SETTING_MODEL])
    return {"base_url": values.get(SETTING_BASE_URL), "model": values.get(SETTING_MODEL)}


def save_judge_settings(db: Database, *, base_url: str | None = None, model: str | None = None) -> dict:
    """Keep the chat judge's endpoint and / or model as the defaults of ``ifjudge judge run``."""
    store.save_settings(db, {SETTING_BASE_URL: base_url, SETTING_MODEL: model})
    return judge_settings(db)
