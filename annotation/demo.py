"""The bundled demo project ``demo``: hand-written query groups, a FollowIR-style query with an
original and a modified narrative, demo users, and a ready study for the three demo annotators."""
from __future__ import annotations

import json
from importlib import resources

from accounts import auth
from annotation.studies import StudySettings, create_study
from storage import projects, settings, users
from storage.errors import IFJudgeError
from formats.bundle import Bundle, Document, Instance, Narrative, Qrel, Query
from storage.db import Database

DEMO_PROJECT = "demo"
DEMO_QUESTIONS = ["validity", "naturalness", "best_passage"]
#: the ``settings`` row that marks a database the demo was loaded into while it was empty
DEMO_MARK = "demo_database"


def demo_data() -> dict:
    return json.loads(resources.files("storage").joinpath("demo/demo.json").read_text(encoding="utf-8"))


def demo_bundle(data: dict | None = None) -> Bundle:
    data = data or demo_data()
    b = Bundle()
    b.documents = [Document(d["_id"], d["text"], d.get("title", "")) for d in data["documents"]]
    b.queries = [Query(q["_id"], q["text"]) for q in data["queries"]]
    for inst in data["instances"]:
        b.instances.append(Instance(inst["_id"], inst["query"], inst["_id"].split("_")[0], inst["instruction"], "og"))
        b.qrels.append(Qrel(inst["_id"], inst["target"], 1, "original"))
    f = data["followir"]
    qid = f["query"]
    b.instances.append(Instance(f"{qid}-og", qid, qid, f["narrative_og"], "og"))
    b.instances.append(Instance(f"{qid}-changed", qid, qid, f["narrative_changed"], "changed"))
    b.narratives += [Narrative(qid, f["narrative_og"], "og"), Narrative(qid, f["narrative_changed"], "changed")]
    b.qrels += [Qrel(qid, d, r, "original") for d, r in f["qrels_og"].items()]
    b.qrels += [Qrel(qid, d, r, "changed") for d, r in f["qrels_changed"].items()]
    return b


def demo_refusal(db: Database) -> str | None:
    """Why the demo may not be loaded into ``db`` (None when it may): its users have public
    passwords, so it goes only into an empty database or one that is the demo's own (marked when
    the demo was loaded into it, or holding nothing but the demo project and the demo's users).

    >>> from storage.db import connect
    >>> from accounts import auth
    >>> db = connect(":memory:")
    >>> demo_refusal(db) is None
    True
    >>> _ = auth.add_user(db, "real-lead", "lead", "a long password")
    >>> print(demo_refusal(db))
    this database already has 1 user(s) and is not the demo's own: the demo (whose sign-ins are public) loads only into a new, empty database, e.g. `ifjudge demo --db data/demo.db`
    """
    if settings.get_setting(db, DEMO_MARK):
        return None
    names = {u["name"] for u in users.list_users(db)}
    kept = {p["name"] for p in projects.list_projects(db)}
    demo_names = {u["name"] for u in demo_data()["users"]}
    if not names and not kept:
        return None
    if kept == {DEMO_PROJECT} and names <= demo_names:
        return None
    return (f"this database already has {len(names)} user(s) and is not the demo's own: the demo (whose "
            "sign-ins are public) loads only into a new, empty database, e.g. `ifjudge demo --db data/demo.db`")


def load_demo(db: Database) -> dict:
    """Create the demo project, users and study if the database has no ``demo`` project yet; only
    in an empty database or the demo's own (:func:`demo_refusal`, raised as an error).

    Returns {"created": bool, "users": [(name, role, password)], "study_id": int | None}.
    """
    refusal = demo_refusal(db)
    if refusal:
        raise IFJudgeError(refusal)
    data = demo_data()
    creds = [(u["name"], u["role"], u["password"]) for u in data["users"]]
    if any(p["name"] == DEMO_PROJECT for p in projects.list_projects(db)):
        settings.set_setting(db, DEMO_MARK, "1")
        return {"created": False, "users": creds, "study_id": None}
    settings.set_setting(db, DEMO_MARK, "1")
    projects.import_bundle(db, DEMO_PROJECT, demo_bundle(data), fmt="demo", kind="generic")
    for name, role, password in creds:
        if users.get_user(db, name) is None:
            auth.add_user(db, name, role, password)
    annotators = [n for n, r, _ in creds if r == "annotator"]
    study = create_study(
        db, project=projects.get_project(db, DEMO_PROJECT), questions=DEMO_QUESTIONS, annotators=annotators, created_by="demo",
        name="demo: InstructIR validation",
        settings=StudySettings(group_fraction=1.0, per_group=2, overlap=3, passages=3, seed=0),
        groups=sorted({i["query"] for i in data["instances"]}),
    )
    return {"created": True, "users": creds, "study_id": study["study_id"], "study": study}
