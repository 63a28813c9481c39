"""The Monitor page's tables as a lead reads them: passages and instructions by their text
(shortened; the full text beside), label counts in words, readable headers, and ``"—"`` with its
reason wherever a value is missing. Formats the outputs of :mod:`annotation.monitoring.monitor`; no
Streamlit here.

>>> from annotation.questions.study import question as q
>>> shorten("a  long\\ninstruction text", 12)
'a long inst…'
>>> heading("ifir", [q("passage_match"), q("naturalness")])
'Agreement (IFIR Table 2 questions)'
>>> heading("infosearch", [q("condition")]), heading("followir", [q("relevance")])
('Condition judgments (InfoSearch §2): agreement', 'Re-judging agreement (FollowIR §3)')
>>> heading("generic", [q("validity"), q("naturalness"), q("best_passage")])
'Human verification (InstructIR Table 7)'
"""
from __future__ import annotations

import math
import re

from annotation.monitoring import monitor
from annotation.glossary import PROVENANCE, STATISTIC_HELP, STATISTICS, UNDEFINED, label, reported, votes
from annotation.agreement.majority import decide
from annotation.questions.question_type import Question
from annotation.questions.study import study_questions
from storage import projects, studies
from storage.db import Database

SHORT = 90
PAGE_ROWS = 100  # rows of the disagreement and reason tables shown at a time
UNRESOLVED_WHY = {"tie": "tie: no majority, for a lead to decide", "awaiting labels": "awaiting more labels",
                  "no labels": "no label yet"}


def shorten(text: str | None, n: int = SHORT) -> str:
    """``text`` on one line, cut to ``n`` characters with an ellipsis."""
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= n else flat[: n - 1].rstrip() + "…"


def _text(doc: dict | None) -> str:
    if not doc:
        return ""
    return f"{doc['title']}: {doc['text']}" if doc.get("title") else doc["text"]


def readable_note(note: str) -> str:
    """A report note with statistic ids in words.

    >>> readable_note("cohen_kappa_mean_pairwise: mean over 2 pairs")
    'Cohen kappa (mean over pairs): mean over 2 pairs'
    """
    return re.sub(r"\b[a-z0-9]+(?:_[a-z0-9]+)+\b", lambda m: STATISTICS.get(m.group(0), m.group(0)), note)


#: the agreement table's heading, by the benchmark whose protocol the study follows
HEADINGS = {"IFIR": "Agreement (IFIR Table 2 questions)", "InfoSearch": "Condition judgments (InfoSearch §2): agreement",
            "FollowIR": "Re-judging agreement (FollowIR §3)", "InstructIR": "Human verification (InstructIR Table 7)"}
KIND_BENCHMARKS = {"ifir": "IFIR", "infosearch": "InfoSearch", "followir": "FollowIR"}


def heading(kind: str, questions: list[Question]) -> str:
    """The heading of the agreement table, named after the benchmark's own table or section: the
    project kind's benchmark, else the one benchmark whose protocol asks every question of the
    study that a benchmark asks (``Question.benchmark``); InstructIR's Table 7 otherwise, and
    "Agreement" for a study of a lead's own questions only."""
    if kind in KIND_BENCHMARKS:
        return HEADINGS[KIND_BENCHMARKS[kind]]
    named = [set(q.benchmark) for q in questions if q.benchmark]
    if not named:
        return "Agreement" if questions else HEADINGS["InstructIR"]
    common = set.intersection(*named)
    return HEADINGS[common.pop()] if len(common) == 1 else HEADINGS["InstructIR"]


def _num(value, digits: int = 3) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def over(key: str, report: dict | None) -> str:
    """What a statistic of a question report is counted over, in words: labelled items, items
    with two labels or more, decided items or labels (Table 7 mixes them: "Proportion of Yes
    response" is over every labelled item, the Cohen kappa against the target over decided ones).

    >>> over("yes_share", {"n_items": 60}), over("randolph_kappa", {"n_items_pairable": 58})
    ('60 labelled', '58 with 2+ labels')
    >>> over("top1_accuracy_excluding_ties", {"n_items_with_gold": 60, "n_majority_ties": 13, "n_items_awaiting_labels": 0})
    '47 decided'
    """
    r = report or {}
    if key in ("yes_share", "positive_share", "top1_accuracy_ties_count_as_wrong", "n_majority_ties"):
        n = r.get("n_items_with_gold", r.get("n_items")) if key not in ("yes_share", "positive_share") else r.get("n_items")
        return "" if n is None else f"{n} labelled"
    if key in ("cohen_kappa_majority_vs_gold_excluding_ties", "top1_accuracy_excluding_ties"):
        if r.get("n_items_with_gold") is None:
            return ""
        return f"{r['n_items_with_gold'] - r.get('n_majority_ties', 0) - r.get('n_items_awaiting_labels', 0)} decided"
    if key == "mean_score":
        return "" if r.get("n_labels") is None else f"{r['n_labels']} labels"
    if key in ("randolph_kappa", "fleiss_kappa", "percent_agreement_pairwise", "krippendorff_alpha_ordinal",
               "krippendorff_alpha_nominal", "gwet_ac1"):
        return "" if r.get("n_items_pairable") is None else f"{r['n_items_pairable']} with 2+ labels"
    return ""


def table7_rows(rows: list[dict], reports: dict | None = None) -> list[dict]:
    """:func:`annotation.monitoring.monitor.table7` rows with readable columns: the value and its 95% interval
    as text (``"—"`` when undefined, the reason in "Why undefined"), the agreement band, what the
    figure is counted over (:func:`over`; ``reports``: question id -> its question report) and
    what the statistic means.

    >>> table7_rows([{"question": "Q1", "statistic": "Proportion of Yes response", "key": "yes_share", "value": None,
    ...               "low": None, "high": None, "band": None, "undefined_reason": "no labels yet"}])[0]["Value"]
    '—'
    """
    out = []
    for r in rows:
        value = _num(r["value"])
        low, high = _num(r.get("low")), _num(r.get("high"))
        key = r.get("key", "")
        out.append({  # the short name; the full wording is the column's help
            "Question": r.get("name") or r["question"], "Statistic": r["statistic"], "Value": value or UNDEFINED,
            "95% interval": f"{low} to {high}" if low is not None and high is not None else UNDEFINED,
            "Band": r.get("band") or "",
            "Over": over(key, (reports or {}).get(r.get("question_id", ""))),
            "Why undefined": "" if value is not None else (r.get("undefined_reason") or "undefined"),
            "What it means": STATISTIC_HELP.get(key, ""),
        })
    return out


def interval_help(rows: list[dict]) -> str:
    """The hover of Table 7's interval column: how its bootstrap resampled (query groups within
    domains, or items) -- from :func:`annotation.monitoring.monitor.table7` rows.

    >>> interval_help([{"resampled": "items resampled"}])
    'bootstrap percentile interval, items resampled'
    """
    how = next((r["resampled"] for r in rows if r.get("resampled")), None)
    return "bootstrap percentile interval" + (f", {how}" if how else "")


def question_rows(question: Question, report: dict) -> list[dict]:
    """A question's agreement report as table rows (:func:`annotation.monitoring.monitor.report_rows`) with
    "Report": whether the figure is the one the benchmark's paper reports or a comparison
    (:func:`annotation.glossary.reported`); counts carry no such mark.

    >>> from annotation.questions.study import question
    >>> rows = question_rows(question("validity"), {"n_items": 8, "randolph_kappa": 0.5, "fleiss_kappa": 0.1})
    >>> [(r["Statistic"], r["Report"]) for r in rows]
    [('Items', ''), ('Randolph free-marginal kappa', 'Report (InstructIR Table 7)'), ('Fleiss kappa', 'comparison')]
    """
    keys = {label(k): k for k in STATISTICS}
    out = []
    for r in monitor.report_rows(report):
        key = keys.get(r["Statistic"], "")
        counted = key.startswith("n_")
        out.append({"Statistic": r["Statistic"], "Value": r["Value"], "Band": r["Band"],
                    "Report": "" if counted else reported(question, key), "Why undefined": r["Why undefined"]})
    return out


def answer_columns(questions: list[Question], answers: dict[str, dict], positions: dict[int, float]) -> dict[str, str]:
    """An annotator's answers as one short column per question (``Question.short``): per Yes/No
    question the share of Yes, per other question its most given answer and share; for a
    question whose answers are passages (the best passage) the position on screen they pick most.

    >>> from annotation.questions.study import question
    >>> answer_columns([question("validity"), question("naturalness"), question("best_passage")],
    ...                {"validity": {"Yes": 1.0}, "naturalness": {"Yes": 0.75, "No": 0.25}}, {1: 0.5, 2: 0.3, 3: 0.2})
    {'Valid': 'Yes 100%', 'Natural': 'Yes 75%', 'Passage': '1st 50%'}
    """
    out = {}
    for q in questions:
        name = q.short or q.title
        shares = answers.get(q.id) or {}
        if q.answers_are_passages:
            if positions:
                p, share = max(positions.items(), key=lambda kv: kv[1])
                out[name] = f"{ {1: '1st', 2: '2nd', 3: '3rd'}.get(p, f'{p}th')} {share:.0%}"
            else:
                out[name] = UNDEFINED
        elif "Yes" in shares or "No" in shares:
            out[name] = f"Yes {shares.get('Yes', 0.0):.0%}"
        elif shares:
            top, share = max(shares.items(), key=lambda kv: kv[1])
            out[name] = f"{top} {share:.0%}"
        else:
            out[name] = UNDEFINED
    return out


def answer_help(question: Question) -> str:
    """The hover text of an annotator table's answer column."""
    if question.answers_are_passages:
        return ("The position on screen of the passage the annotator picks most, and how often (passages are shuffled "
                "for each annotator: about 1 in 3 for each position is expected).")
    return f"{question.title}: the share of Yes in the annotator's labels (else their most given answer)."


def question_help(questions: list[Question]) -> str:
    """The hover of the Table 7 view's Question column: each question's short name and wording."""
    return "\n".join(f"- **{q.title}**: {q.monitor_prompt or q.prompt}" for q in questions)


def habit_rows(table: list[dict], habits: dict, questions: list[Question], checks: dict | None = None) -> list[dict]:
    """The Monitor's annotator table: per annotator of the study (:func:`annotation.monitoring.monitor.annotator_table`
    rows) their screens, median time, answers per question (:func:`answer_columns`), agreement with
    the others (:func:`annotation.monitoring.habits.annotator_habits`), check items right (``checks``:
    annotator -> {"right", "answered"}) and a short flag; ``"—"`` with why where there is nothing yet."""
    by_name = {h["annotator"]: h for h in habits.get("annotators", [])}
    out = []
    for r in table:
        h = by_name.get(r["annotator"], {})
        med = r.get("median_seconds_per_screen")
        agree = h.get("others_agree")
        c = (checks or {}).get(r["annotator"])
        flags = h.get("flags") or []
        kinds = sorted({f.split(" on ")[0].split(":")[0] for f in flags}, key=lambda k: k != "Straight-lining")
        out.append({
            "Annotator": r["annotator"], "Done": f"{r['done']} of {r['total']}",
            "Median s": f"{med:.1f}" if med is not None else f"{UNDEFINED} none yet",
            **answer_columns(questions, h.get("answers") or {}, h.get("positions") or {}),
            "Agreement": f"{agree:.0%} of {h['others_n']}" if agree is not None else f"{UNDEFINED} none yet",
            "Checks right": (f"{c['right']} of {c['answered']}" if c and c["answered"]
                             else f"{UNDEFINED} none yet" if c else f"{UNDEFINED} no check items"),
            "Flag": f"⚑ {kinds[0].lower()}" if kinds else "",
        })
    return out


def disagreement_rows(db: Database, study_id: int) -> list[dict]:
    """:func:`annotation.monitoring.monitor.disagreements` with the texts: the question's short name, the
    votes in words, the disagreement, the decision with how it was decided (``"—"`` and why when
    undecided), the instruction (shortened), and the full texts of the instruction, query and
    passages (``full``, read in full below the table).
    Every row; a screen shows one page of them (:func:`disagreement_page`)."""
    return _with_texts(db, study_id, monitor.disagreements(db, study_id))


def disagreement_questions(db: Database, study_id: int) -> list[str]:
    """The short names of the questions that have a disagreement (the page's filter), sorted."""
    names = _names(db, study_id)
    return sorted({names[r["question"]] for r in monitor.disagreements(db, study_id)})


def _declared(db: Database, study_id: int) -> dict[str, Question]:
    return study_questions(studies.get_study(db, study_id))


def _names(db: Database, study_id: int) -> dict[str, str]:
    """Question id -> its short name (``Question.title``), for the study's questions."""
    return {q: d.title for q, d in _declared(db, study_id).items()}


def page_slice(total: int, page: int, size: int = PAGE_ROWS) -> tuple[int, int, int, int]:
    """``(page, pages, start, stop)`` of page ``page`` (1-based, clamped to 1..pages) of ``total``
    rows shown ``size`` at a time: rows ``start`` to ``stop - 1``; an empty table has one page.

    >>> page_slice(250, 2, 100), page_slice(250, 9, 100), page_slice(0, 1, 100)
    ((2, 3, 100, 200), (3, 3, 200, 250), (1, 1, 0, 0))
    """
    pages = max(1, -(-total // size))
    page = min(max(1, int(page)), pages)
    start = (page - 1) * size
    return page, pages, start, min(start + size, total)


def disagreement_page(db: Database, study_id: int, *, questions=(), page: int = 1, size: int | None = None) -> dict:
    """One page of :func:`disagreement_rows`, optionally only the questions named (short names,
    :func:`disagreement_questions`): ``{"rows", "total", "page", "pages", "start"}`` where
    ``total`` counts the rows the filter keeps and ``start`` is the index of the first row
    shown; ``size`` rows a page (default :data:`PAGE_ROWS`). Only the rows of the page are given their texts: a study of 100,000 labels has tens
    of thousands of disagreements, and a lead reads them a page at a time."""
    names = _names(db, study_id)
    rows = [r for r in monitor.disagreements(db, study_id) if not questions or names[r["question"]] in questions]
    page, pages, start, stop = page_slice(len(rows), page, size or PAGE_ROWS)
    return {"rows": _with_texts(db, study_id, rows[start:stop]), "total": len(rows), "page": page, "pages": pages,
            "start": start}


def _instance_reader(db: Database, project_id: int):
    """A function giving an instance of the project by id (``{}`` when it has none), each read once:
    a page of rows names few instances, often one several times."""
    seen: dict[str, dict] = {}

    def instance(instance_id: str) -> dict:
        if instance_id not in seen:
            seen[instance_id] = projects.get_instance(db, project_id, instance_id) or {}
        return seen[instance_id]
    return instance


def _with_texts(db: Database, study_id: int, rows: list[dict]) -> list[dict]:
    study = studies.get_study(db, study_id)
    pid, declared = study["project_id"], study_questions(study)
    # answers that are passages (the best passage): doc ids; their texts are shown with the item
    chosen = {r["item"]: list(r["labels"]) for r in rows if declared[r["question"]].answers_are_passages}
    docs = projects.documents_by_id(db, pid, {r["doc_id"] for r in rows if r.get("doc_id")}
                                    | {d for ids in chosen.values() for d in ids})
    voted = {i: [(d, _text(docs.get(d))) for d in ids] for i, ids in chosen.items()}
    instance = _instance_reader(db, pid)
    out = []
    for r in rows:
        inst = instance(r["instance"])
        doc = docs.get(r.get("doc_id") or "")
        passage = _text(doc)
        decision = r.get("decision")
        why = UNRESOLVED_WHY.get(decide(r["labels"]).reason or "", "undecided")
        how = PROVENANCE.get(r["provenance"], label(r["provenance"])).lower()
        out.append({  # what to decide first, then the instruction: every column in view at 1280 px
            "item": r["item"],
            "Question": declared[r["question"]].title,
            "Votes": votes(r["labels"]),
            "Disagreement": round(float(r["disagreement"]), 2),
            "Decision": f"{decision} ({how})" if decision is not None else f"{UNDEFINED} {why}",
            "Instruction": shorten(inst.get("instruction")) or f"{UNDEFINED} no instruction",
            "full": {"instance": r["instance"], "instruction": inst.get("instruction") or "",
                     "query": inst.get("query") or "", "document": r.get("doc_id") or "", "passage": passage,
                     "voted": voted.get(r["item"], [])},
        })
    return out


def reason_rows(db: Database, study_id: int) -> list[dict]:
    """:func:`annotation.monitoring.monitor.reasons` with the question's name and the instruction's text."""
    return _reasons_with_texts(db, study_id, monitor.reasons(db, study_id))


def reason_page(db: Database, study_id: int, *, contains: str = "", page: int = 1, size: int | None = None) -> dict:
    """One page of :func:`reason_rows`, optionally only the reasons containing ``contains``
    (any case): ``{"rows", "total", "page", "pages", "start"}`` as :func:`disagreement_page`."""
    needle = contains.lower()
    rows = [r for r in monitor.reasons(db, study_id) if not needle or needle in r["reason"].lower()]
    page, pages, start, stop = page_slice(len(rows), page, size or PAGE_ROWS)
    return {"rows": _reasons_with_texts(db, study_id, rows[start:stop]), "total": len(rows), "page": page,
            "pages": pages, "start": start}


def _reasons_with_texts(db: Database, study_id: int, rows: list[dict]) -> list[dict]:
    study = studies.get_study(db, study_id)
    pid, declared = study["project_id"], study_questions(study)
    instance = _instance_reader(db, pid)
    out = []
    for r in rows:
        inst = instance(r["instance"])
        out.append({"Question": declared[r["question"]].title, "Annotator": r["annotator"], "Answer": r["value"],
                    "Reason": r["reason"], "Instruction": shorten(inst.get("instruction"))})
    return out
