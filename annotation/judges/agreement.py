"""The judge measured against the humans: on the items of a study that both the humans decided
and a judge run answered, Cohen's kappa of the judge with the human outcome (with a bootstrap
interval that resamples the study's query groups), the confusion table, the judge's share of
each answer against the humans', per question and per domain (query subset), and the items where
they disagree.

The human outcome of an item is the study's decision (:func:`annotation.outcomes.table.outcome_table`:
the majority of its annotators, or the lead's adjudication); undecided items (no majority yet,
a tie) are left out. ``best_passage`` compares whether the dataset's target is picked (Yes / No),
since a judge of the whole benchmark may see other distractors than the study did. The judge's
labels come from their own table (:mod:`storage.judge_labels`) and never enter the human figures.

Interval: the items of one query group share a query and were sampled together (the study
samples groups, then instances), so replicates resample **groups** with replacement, within each
domain when the study sampled per domain (a cluster bootstrap; Davison & Hinkley, 1997, §3.8),
seeded; the 95% percentile interval of the defined replicates.

>>> from storage.db import connect
>>> from annotation.demo import load_demo
>>> db = connect(":memory:"); sid = load_demo(db)["study"]["study_id"]
>>> runs_for_study(db, sid)
[]
"""
from __future__ import annotations

import numpy as np

from annotation.agreement.bootstrap import percentile_interval
from annotation.agreement.kernels import cohen_from_tables
from annotation.agreement.stats import cohen_kappa_table, landis_koch_band
from annotation.outcomes.table import outcome_table
from annotation.questions.study import study_questions
from evaluation.judges.questions import judge_question
from evaluation.undefined import Undefined, defined_or_none
from storage import judge_labels as store
from storage import projects, studies
from storage.db import Database
from storage.errors import IFJudgeError

ALL = "(all)"
YES_NO = ("Yes", "No")


def runs_for_study(db: Database, study_id: int) -> list[dict]:
    """The judge runs of the study's project that answer one of its questions, newest first."""
    study = studies.get_study(db, study_id)
    return [r for r in store.list_runs(db, study["project_id"]) if r["question"] in study["questions"]]


def categories(study: dict, question: str) -> tuple[str, ...]:
    """The declared answers compared: the study's categories of the question (Yes / No for a
    question whose answer is the target or not, the best passage: is the target picked)."""
    q = study_questions(study)[question]
    return YES_NO if q.positive_rule == "target" else q.categories


def paired_items(db: Database, study_id: int, run: dict) -> dict:
    """The items of the run's question in the study: per item key its human outcome (None when
    undecided) and the judge's answer (None when it has none), in the comparison's terms; with
    the item's group, domain, judge score and raw answer. Returns ``{"rows": [...], "notes": [...]}``."""
    study = studies.get_study(db, study_id)
    t = outcome_table(db, study_id)
    q = judge_question(run["question"])
    asked = study_questions(study).get(run["question"])
    target_rule = asked is not None and asked.positive_rule == "target"
    judge = {(lab["instance_id"], lab["doc_id"] or ""): lab for lab in store.labels(db, run["id"])
             if lab["question"] == run["question"]}
    insts = {i["instance_id"]: i for i in projects.instances(db, study["project_id"])}
    subsets = projects.query_subsets(db, study["project_id"])
    rows: dict[tuple[str, str], dict] = {}
    for item, inst, question, doc, value, gold in zip(t.item.tolist(), t.instance.tolist(), t.question.tolist(),
                                                      t.doc_id.tolist(), t.value.tolist(), t.gold.tolist()):
        if question != run["question"]:
            continue
        human = value if not target_rule else (None if value is None or not gold else
                                               ("Yes" if value == gold else "No"))
        lab = judge.get((inst, doc or ""))
        answer = None if lab is None or lab["value"] is None else q.estimand(lab["value"], lab["payload"])
        meta = insts.get(inst, {})
        rows[(inst, doc or "")] = {
            "item": item, "instance_id": inst, "doc_id": doc or "", "human": human, "judge": answer,
            "judge_value": None if lab is None else lab["value"], "score": None if lab is None else lab["score"],
            "raw": "" if lab is None else lab["raw"], "group": meta.get("group_id", inst),
            "domain": subsets.get(meta.get("query_id", ""), "")}
    return {"rows": list(rows.values()), "judge_items": judge, "insts": insts, "subsets": subsets}


def confusion(rows: list[dict], cats: tuple[str, ...]) -> np.ndarray:
    """Human (rows) x judge (columns) counts over ``cats``."""
    at = {c: i for i, c in enumerate(cats)}
    t = np.zeros((len(cats), len(cats)), dtype=np.int64)
    for r in rows:
        t[at[r["human"]], at[r["judge"]]] += 1
    return t


def group_bootstrap(rows: list[dict], cats: tuple[str, ...], *, strata: bool, n_boot: int, seed: int) -> dict:
    """Percentile interval of Cohen's kappa over replicates that resample the rows' query groups
    with replacement (within each domain when ``strata``)."""
    if n_boot <= 0 or not rows:
        return {"low": None, "high": None, "n_boot": 0}
    groups = sorted({(r["domain"] if strata else "", r["group"]) for r in rows})
    index = {g: i for i, g in enumerate(groups)}
    at = {c: i for i, c in enumerate(cats)}
    q = len(cats)
    per_group = np.zeros((len(groups), q, q))
    for r in rows:
        per_group[index[(r["domain"] if strata else "", r["group"])], at[r["human"]], at[r["judge"]]] += 1
    rng = np.random.default_rng(seed)
    weights = np.zeros((n_boot, len(groups)))
    by_stratum: dict[str, list[int]] = {}
    for g, i in index.items():
        by_stratum.setdefault(g[0], []).append(i)
    for members in by_stratum.values():
        draws = rng.choice(members, size=(n_boot, len(members)), replace=True)
        np.add.at(weights, (np.repeat(np.arange(n_boot), len(members)), draws.ravel()), 1.0)
    tables = np.einsum("bg,gij->bij", weights, per_group)
    return percentile_interval(cohen_from_tables(tables))


def agreement_row(rows: list[dict], cats: tuple[str, ...], *, domain: str, judge_all: list[str], n_boot: int,
                  seed: int, strata: bool) -> dict:
    """One line of the judge's measure: items both judged, Cohen's kappa (and its interval and
    Landis-Koch band), raw agreement, the humans' and the judge's share of each answer on those
    items, and the judge's share over all its items of the domain."""
    both = [r for r in rows if r["human"] in cats and r["judge"] in cats]
    table = confusion(both, cats)
    kappa = cohen_kappa_table(table, cats, who="the judge and the humans")
    ci = group_bootstrap(both, cats, strata=strata, n_boot=n_boot, seed=seed) if not isinstance(kappa, Undefined) \
        else {"low": None, "high": None, "n_boot": 0}
    n = len(both)
    shares = lambda col: {c: (sum(r[col] == c for r in both) / n if n else None) for c in cats}  # noqa: E731
    all_n = len([v for v in judge_all if v in cats])
    return {"domain": domain, "n_items": n, "kappa": defined_or_none(kappa),
            "undefined": kappa.reason if isinstance(kappa, Undefined) else None,
            "kappa_low": ci["low"], "kappa_high": ci["high"], "band": landis_koch_band(kappa),
            "agreement": float(np.trace(table) / n) if n else None, "human_share": shares("human"),
            "judge_share": shares("judge"), "judge_items": all_n,
            "judge_share_all": {c: (sum(v == c for v in judge_all) / all_n if all_n else None) for c in cats},
            "confusion": table.tolist()}


def judge_report(db: Database, study_id: int, run_id: int, *, n_boot: int = 200, seed: int = 0) -> dict:
    """The judge run measured on the study: ``{"study_id", "run" (its provenance), "question",
    "categories", "overall" and "domains" (:func:`agreement_row` each), "disagreements" (items
    decided by the humans where the judge answered otherwise, with the texts to read them),
    "undecided" (items of the question without a human decision), "unjudged" (decided items the
    judge has no answer for), "notes"}``.

    Examples
    --------
    >>> from storage.db import connect
    >>> from annotation.demo import load_demo
    >>> db = connect(":memory:"); sid = load_demo(db)["study"]["study_id"]
    >>> run = store.find_or_create_run(db, project_id=1, question="validity", judge="chat", model="m", base_url="",
    ...     prompt_version="", prompt_hash="", prompt={}, parameters={}, config_key="k", created_by="doc")[0]
    >>> judge_report(db, sid, run["id"])["overall"]["undefined"]
    'the judge and the humans share 0 item(s); at least 1 are needed'
    """
    study = studies.get_study(db, study_id)
    run = store.get_run(db, run_id)
    if run["project_id"] != study["project_id"] or run["question"] not in study["questions"]:
        raise IFJudgeError(f"judge run {run_id} ({run['question']}) does not answer a question of study {study_id}")
    cats = categories(study, run["question"])
    paired = paired_items(db, study_id, run)
    rows = paired["rows"]
    notes = []
    outside = sorted({r["judge"] for r in rows if r["judge"] is not None and r["judge"] not in cats})
    if outside:
        notes.append(f"the judge answered {', '.join(outside)}, which the study does not ask "
                     f"({', '.join(cats)}): another scale; those items are not compared")
    if run["judge"] != "chat" and run["parameters"].get("threshold_study") == study_id:
        notes.append(f"the judge's threshold was chosen on this study's items: its agreement here is in-sample")
    strata = study["settings"].get("subset_fraction") is not None
    judge_all = _judge_values_by_domain(paired, run)
    overall = agreement_row(rows, cats, domain=ALL, judge_all=[v for vs in judge_all.values() for v in vs],
                            n_boot=n_boot, seed=seed, strata=strata)
    domains = sorted({r["domain"] for r in rows} - {""})
    per_domain = [agreement_row([r for r in rows if r["domain"] == d], cats, domain=d, judge_all=judge_all.get(d, []),
                                n_boot=n_boot, seed=seed, strata=False) for d in domains]
    return {"study_id": study_id, "question": run["question"], "categories": list(cats), "run": provenance(run),
            "overall": overall, "domains": per_domain, "disagreements": disagreements(rows, paired["insts"], cats),
            "undecided": sum(r["human"] is None for r in rows),
            "unjudged": sum(r["human"] is not None and r["judge"] is None for r in rows), "notes": notes}


def _judge_values_by_domain(paired: dict, run: dict) -> dict[str, list[str]]:
    """The judge's answers (comparison terms) over all its items, per domain of their query."""
    q = judge_question(run["question"])
    out: dict[str, list[str]] = {}
    for (inst, _), lab in paired["judge_items"].items():
        if lab["value"] is None:
            continue
        domain = paired["subsets"].get(paired["insts"].get(inst, {}).get("query_id", ""), "")
        out.setdefault(domain, []).append(q.estimand(lab["value"], lab["payload"]))
    return out


def provenance(run: dict) -> dict:
    """What a reader needs to know of a judge run: id, judge, model, endpoint, prompt version and
    hash, scale, threshold (a local judge), who started it and when."""
    p = run["parameters"]
    return {"id": run["id"], "judge": run["judge"], "model": run["model"], "base_url": run["base_url"],
            "prompt_version": run["prompt_version"], "prompt_hash": run["prompt_hash"], "scale": p.get("scale"),
            "threshold": p.get("threshold"), "created_by": run["created_by"], "created_at": run["created_at"]}


def measured_runs(db: Database, run_ids: list[int], study_ids: list[int], *, n_boot: int = 200,
                  seed: int = 0) -> list[dict]:
    """Each judge run as a report names it: its :func:`provenance` and, on every study of
    ``study_ids`` that asks its question, its measured agreement with the humans (the overall line
    of :func:`judge_report`: ``{"study", "n_items", "kappa", "kappa_low", "kappa_high", "band",
    "agreement", "undefined"}``) under ``"agreement"``.

    >>> from storage.db import connect
    >>> from annotation.demo import load_demo
    >>> db = connect(":memory:"); sid = load_demo(db)["study"]["study_id"]
    >>> run = store.find_or_create_run(db, project_id=1, question="validity", judge="chat", model="m", base_url="",
    ...     prompt_version="v1", prompt_hash="", prompt={}, parameters={}, config_key="k", created_by="doc")[0]
    >>> r = measured_runs(db, [run["id"]], [sid])[0]
    >>> r["model"], r["prompt_version"], r["agreement"][0]["n_items"]
    ('m', 'v1', 0)
    """
    out = []
    for run_id in run_ids:
        run = store.get_run(db, run_id)
        agreement = []
        for sid in study_ids:
            study = studies.get_study(db, sid)
            if study["project_id"] != run["project_id"] or run["question"] not in study["questions"]:
                continue
            o = judge_report(db, sid, run_id, n_boot=n_boot, seed=seed)["overall"]
            agreement.append({"study": sid, **{k: o[k] for k in ("n_items", "kappa", "kappa_low", "kappa_high", "band",
                                                                  "agreement", "undefined")}})
        out.append({**provenance(run), "question": run["question"], "agreement": agreement})
    return out


def disagreements(rows: list[dict], insts: dict, cats: tuple[str, ...]) -> list[dict]:
    """The decided items the judge answered otherwise, with the instruction and query to read."""
    out = []
    for r in rows:
        if r["human"] in cats and r["judge"] in cats and r["human"] != r["judge"]:
            inst = insts.get(r["instance_id"], {})
            out.append({"item": r["item"], "instance_id": r["instance_id"], "doc_id": r["doc_id"], "human": r["human"],
                        "judge": r["judge"], "judge_value": r["judge_value"], "score": r["score"], "raw": r["raw"],
                        "domain": r["domain"], "query": inst.get("query", ""), "instruction": inst.get("instruction", "")})
    return out
