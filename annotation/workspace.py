"""What the annotate and re-judge pages call: open the next screen, submit it, skip it, go back.

No Streamlit here: pages are thin shells over these functions, and so are the tests.
"""
from __future__ import annotations

import io
import random
from dataclasses import dataclass, field

from annotation.item_order import spaced_order
from annotation.narratives.diff import word_diff
from formats.spreadsheet import csv_writer
from annotation.questions.study import PROJECT_GOALS, Question, labeler_instructions, study_questions
from storage import drafts as draft_store
from storage import narratives as narrative_store
from storage import projects, studies
from storage.errors import IFJudgeError, InvalidAnswer, NotFound, PermissionDenied
from storage.db import Database


#: the longest reason kept (characters): InstructIR asks for "a clear and concise reason"; the
#: annotate page counts them as they are typed
REASON_MAX_CHARS = 500


class ScreenRefused(InvalidAnswer):
    """A screen's answers were refused: ``problems`` maps each question id concerned to its
    message, in the screen's order; the message lists them all, one a line."""

    def __init__(self, problems: dict[str, str]):
        self.problems = dict(problems)
        super().__init__("\n".join(self.problems.values()))


@dataclass
class ScreenItem:
    item_id: int
    question: Question
    doc_id: str | None
    passages: list[dict] = field(default_factory=list)  # best_passage: in the order shown to this user
    current: dict | None = None  # the user's newest label, when going back


@dataclass
class Screen:
    study_id: int
    screen: str
    instance_id: str
    instruction: str
    query: str
    items: list[ScreenItem]
    document: dict | None = None  # passage_match / relevance: the one document
    narrative: str | None = None
    guidelines: dict[str, str] = field(default_factory=dict)
    # re-judging: the word diff of the narrative against the query's original one (DiffSpan list)
    narrative_changes: list | None = None

    @property
    def based_on(self) -> dict[int, int | None]:
        return {it.item_id: (it.current or {}).get("id") for it in self.items}


def shown_order(candidates: list[str], *, seed: int, item_id: int, user_id: int) -> list[str]:
    """Passage order for one (item, annotator): a seeded shuffle, the same on every reload."""
    order = list(candidates)
    random.Random(f"{seed}:{item_id}:{user_id}").shuffle(order)
    return order


def _check_member(db: Database, study: dict, user: dict) -> None:
    if user["role"] != "lead" and user["name"] not in study["annotators"]:
        raise PermissionDenied(f"{user['name']} is not an annotator of study {study['id']}")


def open_screen(db: Database, study_id: int, user: dict, screen: str | None = None) -> Screen | None:
    """The screen to show: ``screen`` when given (going back to a submitted one), else the user's
    next screen in their own order (:mod:`annotation.item_order`; claimed in the same transaction
    that hands it out). None when the queue is empty."""
    study = studies.get_study(db, study_id)
    _check_member(db, study, user)
    settings = study["settings"]
    if screen is None:
        # the annotator's own order of the study's items (and of items that reached them since)
        studies.order_own_queue(db, study_id, user["id"],
                                lambda items: spaced_order(items, seed=f"{settings.get('seed', 0)}:{user['id']}"))
        screen = studies.claim_next(db, study_id, user["id"], timeout_s=settings.get("claim_timeout_s", 1800.0))
        if screen is None:
            return None
    rows = studies.screen_items(db, study_id, screen)
    current = studies.newest_labels(db, [r["id"] for r in rows], user["id"])
    pid = study["project_id"]
    inst = projects.get_instance(db, pid, rows[0]["instance_id"])
    if inst is None:
        raise IFJudgeError(f"instance {rows[0]['instance_id']!r} is no longer in the project")
    docs_needed = {d for r in rows for d in r["payload"].get("candidates", [])} | {r["doc_id"] for r in rows if r["doc_id"]}
    docs = _documents(db, pid, docs_needed)
    items, document, narrative, changes = [], None, None, None
    declared = study_questions(study)
    for r in rows:
        q = declared[r["question"]]
        passages = []
        if q.answers_are_passages:
            order = (current.get(r["id"]) or {}).get("shown_order") or shown_order(
                r["payload"]["candidates"], seed=settings.get("seed", 0), item_id=r["id"], user_id=user["id"]
            )
            passages = [{"doc_id": d, **docs[d]} for d in order]
        if r["doc_id"]:
            document = {"doc_id": r["doc_id"], **docs[r["doc_id"]]}
        if r["narrative_version_id"]:
            narrative, changes = narrative_with_changes(db, r["narrative_version_id"])
        items.append(ScreenItem(r["id"], q, r["doc_id"], passages, current.get(r["id"])))
    # under a narrative (re-judging), the narrative is the instruction: the instance's own text
    # (the original narrative) is not shown beside it
    return Screen(
        study_id, screen, inst["instance_id"], "" if narrative is not None else inst["instruction"], inst["query"],
        items, document, narrative,
        {q: settings.get("guidelines", {}).get(q, "") for q in study["questions"]},
        changes,
    )


@dataclass
class Guidelines:
    """What an annotator reads before the first item and can reopen at any time (InstructIR,
    Fig. 9a): the project goal, the instructions for the data labeler, and per question (in the
    screen's order Q1, Q2, ...) its prompt and its guideline with the definitions of its answers."""

    goal: str
    instructions: str
    questions: list[tuple[str, str, str]]  # (question id, "Q1. prompt", guideline text)
    acknowledged_at: str | None = None


def guidelines(db: Database, study_id: int, user: dict) -> Guidelines:
    """The study's goal and guidelines, and when ``user`` acknowledged them (None: never, so the
    annotate page shows them before the first item)."""
    study = studies.get_study(db, study_id)
    _check_member(db, study, user)
    s = study["settings"]
    kind = projects.get_project_by_id(db, study["project_id"])["kind"]
    qs = list(study_questions(study).values())
    stored = s.get("guidelines", {})
    return Guidelines(
        goal=s.get("goal") or PROJECT_GOALS.get(kind, PROJECT_GOALS["generic"]),
        instructions=labeler_instructions(qs),
        questions=[(q.id, f"Q{n}. {q.prompt}", stored.get(q.id) or q.guidelines)
                   for n, q in enumerate(qs, start=1)],
        acknowledged_at=studies.guidelines_acknowledged(db, study_id, user["id"]),
    )


def acknowledge_guidelines(db: Database, study_id: int, user: dict) -> None:
    """Store that ``user`` has read the study's guidelines (kept once, with its time)."""
    _check_member(db, studies.get_study(db, study_id), user)
    studies.acknowledge_guidelines(db, study_id, user["id"])


def narrative_with_changes(db: Database, version_id: int) -> tuple[str, list]:
    """The text of a narrative version and its word diff against the query's original (first)
    narrative, as shown to a re-judging annotator."""
    version = narrative_store.get_version(db, version_id)
    if version is None:
        raise NotFound(f"narrative version {version_id} does not exist")
    root = narrative_store.versions(db, version["project_id"], version["query_id"])[0]
    return version["text"], word_diff(root["text"], version["text"])


def _documents(db: Database, project_id: int, doc_ids: set[str]) -> dict[str, dict]:
    if not doc_ids:
        return {}
    found = projects.documents_by_id(db, project_id, doc_ids)
    missing = doc_ids - set(found)
    if missing:
        raise IFJudgeError(f"documents missing from the project: {', '.join(sorted(missing))}")
    return found


def submit_screen(
    db: Database,
    screen: Screen,
    user: dict,
    answers: dict[str, dict],
    *,
    started_at: float | None,
    now: float | None = None,
    replace: bool = False,
) -> list[int]:
    """Validate and store the answers of one screen (question id -> {"value", "reason"}).

    Refused with :class:`ScreenRefused` (an :class:`storage.errors.InvalidAnswer`) naming *every*
    question that is unanswered, has a value outside its categories, a "No" without a reason, or a
    reason longer than :data:`REASON_MAX_CHARS`,
    each as the annotator reads it ("Q2 “Is the instruction natural ...”: ..."). One current answer
    per item and annotator: ``screen`` carries the answers that were current when it was opened
    (:attr:`Screen.based_on`); when the user has answered it since (another tab or window, a double
    press), :class:`storage.studies.AlreadyAnswered` (a ``StaleSubmission``) is raised, checked in
    the same transaction as the write, and the stored answer stays current. ``replace=True`` is the
    user's explicit "replace my answer" (the new labels supersede the current ones; the history
    keeps both). Nothing is written unless everything is accepted.
    """
    study = studies.get_study(db, screen.study_id)
    _check_member(db, study, user)
    payload: dict[int, dict] = {}
    problems: dict[str, str] = {}
    for number, it in enumerate(screen.items, start=1):
        a = answers.get(it.question.id) or {}
        value = a.get("value")
        name = f"Q{number} “{it.question.prompt}”"
        if value is None or value == "":
            problems[it.question.id] = f"{name}: please answer this question"
            continue
        categories = tuple(p["doc_id"] for p in it.passages) if it.question.answers_are_passages else None
        reason = (a.get("reason") or "").strip()
        if len(reason) > REASON_MAX_CHARS:
            problems[it.question.id] = (f"{name}: the reason is {len(reason):,} characters long; at most "
                                        f"{REASON_MAX_CHARS} are accepted: please shorten it")
            continue
        try:
            it.question.check(str(value), reason, categories=categories)
        except InvalidAnswer as exc:  # "validity: a reason ..." -> "Q1 “Is the instruction ...”: a reason ..."
            problems[it.question.id] = f"{name}: {str(exc).split(': ', 1)[-1]}"
            continue
        payload[it.item_id] = {
            "value": str(value),
            "reason": reason,
            "shown_order": [p["doc_id"] for p in it.passages] if it.passages else None,
        }
    if problems:
        raise ScreenRefused(problems)
    try:
        ids = studies.submit(
            db, study_id=screen.study_id, user_id=user["id"], screen=screen.screen, answers=payload,
            based_on=screen.based_on, started_at=started_at, now=now, replace=replace,
        )
    except (studies.StaleSubmission, PermissionDenied):
        # answered already (another tab), or the claim expired and the screen went to someone else:
        # either way this user's draft of it is done with (the page keeps the answers it shows, for
        # an explicit "replace my answer")
        discard_draft(db, screen, user)
        raise
    discard_draft(db, screen, user)
    return ids


def progress(db: Database, study_id: int, user: dict) -> tuple[int, int]:
    return studies.progress(db, study_id, user["id"])


@dataclass
class StudyWork:
    """One study of an annotator, with the screens done and in total (what the study selector shows)."""

    study: dict
    done: int
    total: int

    @property
    def left(self) -> int:
        return self.total - self.done

    def label(self) -> str:
        """``"3: demo study · 5 of 8 left"``: the id and name first (typing either finds it)."""
        rest = "all done" if self.left == 0 else f"{self.left} of {self.total} left"
        return f"{self.study['id']}: {self.study['name']} · {rest}"


def my_studies(db: Database, user: dict) -> list[StudyWork]:
    """The studies ``user`` annotates, in creation order, with their progress."""
    out = []
    for s in studies.studies_for_user(db, user["id"]):
        done, total = studies.progress(db, s["id"], user["id"])
        out.append(StudyWork(s, done, total))
    return out


def most_work_left(work: list[StudyWork]) -> int | None:
    """The position of the study with the most screens left (the first on a tie), where an
    annotator lands; None for no study.

    >>> most_work_left([StudyWork({"id": 1}, 8, 8), StudyWork({"id": 2}, 1, 5), StudyWork({"id": 3}, 0, 4)])
    1
    """
    if not work:
        return None
    return max(range(len(work)), key=lambda i: (work[i].left, -i))


def history(db: Database, study_id: int, user: dict) -> list[str]:
    return studies.done_screens(db, study_id, user["id"])


def recent_history(db: Database, study_id: int, user: dict, *, limit: int = 20) -> list[tuple[str, str]]:
    """The user's last ``limit`` submitted screens, newest first, each with what the annotator
    recognises it by: its query (and the instruction's start), not its instance id."""
    study = studies.get_study(db, study_id)
    out = []
    for screen in reversed(history(db, study_id, user)[-limit:]):
        rows = studies.screen_items(db, study_id, screen)
        inst = projects.get_instance(db, study["project_id"], rows[0]["instance_id"]) if rows else None
        if inst is None:
            out.append((screen, screen))
            continue
        words = inst["instruction"].split()
        hint = " ".join(words[:8]) + (" …" if len(words) > 8 else "")
        out.append((screen, f"{inst['query']} — {hint}" if hint else inst["query"]))
    return out


def skip(db: Database, screen: Screen, user: dict) -> None:
    """Move the screen to the end of the user's queue; its draft is forgotten (it comes back empty)."""
    studies.skip(db, screen.study_id, user["id"], screen.screen)
    discard_draft(db, screen, user)


def save_draft(db: Database, screen: Screen, user: dict, question_id: str, *,
               value: str | None = None, reason: str | None = None) -> None:
    """Keep an answer (``value``) or a reason chosen on ``screen`` but not submitted yet, so that a
    reload or a browser restart shows it again (:func:`draft`). Called on each change of a
    widget: one small upsert. ``None`` leaves that part of the draft as stored.

    >>> from annotation.demo import load_demo
    >>> from storage.db import connect
    >>> from storage import users
    >>> db = connect(":memory:"); _ = load_demo(db)
    >>> ann = users.get_user(db, "ann1")
    >>> screen = open_screen(db, 1, ann)
    >>> save_draft(db, screen, ann, "validity", value="No")
    >>> save_draft(db, screen, ann, "validity", reason="it repeats the query")
    >>> draft(db, screen, ann)
    {'validity': {'value': 'No', 'reason': 'it repeats the query'}}
    >>> skip(db, screen, ann); draft(db, screen, ann)
    {}
    """
    if question_id not in {it.question.id for it in screen.items}:
        raise InvalidAnswer(f"question {question_id!r} is not on screen {screen.screen!r}; "
                            f"its questions: {', '.join(it.question.id for it in screen.items)}")
    parts = {k: v for k, v in (("value", value), ("reason", reason)) if v is not None}
    draft_store.save(db, screen.study_id, user["id"], screen.screen, question_id, **parts)


def draft(db: Database, screen: Screen, user: dict) -> dict[str, dict]:
    """question id -> {"value", "reason"}: what ``user`` chose on ``screen`` without submitting it
    ({} when nothing). A draft answer outside the question's choices (the study changed) is dropped."""
    allowed = {it.question.id: ({p["doc_id"] for p in it.passages} if it.question.answers_are_passages
                                else set(it.question.categories)) for it in screen.items}
    out = {}
    for qid, d in draft_store.load(db, screen.study_id, user["id"], screen.screen).items():
        if qid not in allowed:
            continue
        out[qid] = {"value": d["value"] if d["value"] in allowed[qid] else None, "reason": d["reason"]}
    return out


def discard_draft(db: Database, screen: Screen, user: dict) -> None:
    """Forget ``user``'s draft on ``screen`` (done after a submit or a skip)."""
    draft_store.clear(db, screen.study_id, user["id"], screen.screen)


LABELS_CSV_COLUMNS = ("item", "instance", "question", "annotator", "value", "reason", "shown_order", "shown_position",
                      "submitted_at")


def labels_csv(db: Database, study_id: int, *, raw: bool = False) -> str:
    """The current labels of a study as CSV (``ifjudge labels``): a reason or a name that a
    spreadsheet would run as a formula is prefixed with an apostrophe, unless ``raw``
    (:mod:`formats.spreadsheet`); ``shown_position`` is the place in the annotator's own sequence
    at which the item was answered (empty for older labels)."""
    studies.get_study(db, study_id)
    buf = io.StringIO()
    w = csv_writer(buf, raw=raw, lineterminator="\n")
    w.writerow(LABELS_CSV_COLUMNS)
    positions = studies.shown_positions(db, study_id)
    for r in studies.current_labels(db, study_id):
        position = positions.get((r["item"], r["annotator"]))
        w.writerow([
            r["item"], r["instance"], r["question"], r["annotator"], r["value"], r["reason"],
            r["shown_order"] or "", "" if position is None else position,
            f"{r['submitted_at']:.3f}",
        ])
    return buf.getvalue()
