"""Builders the test modules share: bundles, projects, labelled studies and page runners.

Not a test module (pytest collects ``test_*.py`` only): test modules import from here, never
from each other (tests/test_house_rules.py checks it), as datasette's tests share
``make_app_client``. Fixtures built from these live in tests/conftest.py.
"""
from __future__ import annotations

import io
import json
import os
import time
import zipfile
from pathlib import Path

from streamlit.testing.v1 import AppTest

from accounts import auth
from annotation import workspace
from annotation.narratives import versions as narrative_versions
from annotation.studies import StudySettings, create_study
from formats.bundle import Bundle, Document, Instance, Qrel, Query
from storage import projects, studies, users
from storage.db import write
from storage.projects import get_project

ROOT = Path(__file__).resolve().parents[1]


# ---- pages ----------------------------------------------------------------------------------
def app(path: str, *, timeout: float = 30) -> AppTest:
    """The page at ``path`` (relative to the repository root) in Streamlit's AppTest, not yet run."""
    return AppTest.from_file(str(ROOT / path), default_timeout=timeout)


def user_row(db, name: str) -> dict:
    """The signed-in user as the pages keep it in session state: id, name, role."""
    row = db.execute("SELECT id, name, role FROM users WHERE name = ?", [name]).fetchone()
    return dict(zip(("id", "name", "role"), row))


def signed_in_page(db, path: str, name: str, *, timeout: float = 30) -> AppTest:
    """The page at ``path`` run once with ``name`` signed in."""
    at = app(path, timeout=timeout)
    at.session_state["user"] = user_row(db, name)
    return at.run()


MONITOR_TABS = ("Agreement", "Benchmark estimate", "Annotators", "Disagreements", "Reasons", "Judge")


def open_tab(at: AppTest, tab: str) -> AppTest:
    """Open the Monitor page's tab ``tab`` and run the page: its sections are lazy tabs (only the
    open one is computed and drawn), the open one kept in ``st.session_state["mon_tab"]`` and in the
    address (``?mon_tab=...``, absent for the first tab), which wins over the session state, as a
    browser's address does."""
    assert tab in MONITOR_TABS, tab
    at.session_state["mon_tab"] = tab
    if tab == MONITOR_TABS[0]:
        at.query_params.pop("mon_tab", None)
    else:
        at.query_params["mon_tab"] = tab
    return at.run()


# ---- the annotate page's item component (ui/annotate_screen.py) ------------------------------
def item_shown(at: AppTest) -> dict:
    """What the annotate page gave its item component in its last run (the component's data)."""
    element = at.get("bidi_component")[-1]
    return json.loads(element.proto.json or element.proto.mixed.json)


def passage_id(at: AppTest, n: int) -> str:
    """The document id of the ``n``-th passage (1-based) of the best-passage question shown."""
    q = next(q for q in item_shown(at)["item"]["questions"] if q["id"] == "best_passage")
    return q["options"][n - 1]["value"]


def send(at: AppTest, kind: str, answers: dict | None = None, **fields) -> AppTest:
    """The item component's next message, kept as its callback keeps it, then a run of the page.
    ``answers``: question id -> value, or (value, reason)."""
    shown = item_shown(at)
    msg = {"seq": shown["ack"] + 1, "kind": kind, "study": shown["study"], "token": shown["token"],
           "screen": (shown["item"] or {}).get("screen")}
    if answers is not None:
        msg["answers"] = {q: {"value": v[0], "reason": v[1]} if isinstance(v, tuple) else {"value": v, "reason": ""}
                          for q, v in answers.items()}
    msg.update(fields)
    at.session_state["ann_inbox"] = [msg]
    return at.run()


# ---- the demo project (annotation.demo) -------------------------------------------------------
def label_demo(db, study_id):
    """ann1 and ann2 agree on validity Yes; ann3 says No (with a reason), on every screen."""
    for name, v in (("ann1", "Yes"), ("ann2", "Yes"), ("ann3", "No")):
        u = user_row(db, name)
        while (s := workspace.open_screen(db, study_id, u)) is not None:
            workspace.submit_screen(db, s, u, {
                "validity": {"value": v, "reason": "<b>not</b> a *user*"}, "naturalness": {"value": "Yes"},
                "best_passage": {"value": s.items[2].passages[0]["doc_id"]},
            }, started_at=time.time() - 1)


def label_all(db, sid, validity, naturalness):
    """Every screen: validity and naturalness per annotator; best passage = the target."""
    for name in ("ann1", "ann2", "ann3"):
        u = user_row(db, name)
        while (s := workspace.open_screen(db, sid, u)) is not None:
            gold = studies.screen_items(db, sid, s.screen)[2]["payload"]["gold"]
            workspace.submit_screen(db, s, u, {
                "validity": {"value": validity[name], "reason": "" if validity[name] == "Yes" else f"{name}: too vague"},
                "naturalness": {"value": naturalness[name], "reason": "" if naturalness[name] == "Yes" else "odd"},
                "best_passage": {"value": gold},
            }, started_at=time.time() - 1)


# per annotator, per screen position: (validity, naturalness, best passage = gold?)
PLAN = {
    "ann1": [("Yes", "Yes", True)] * 8,
    "ann2": [("Yes", "Yes", True), ("No", "No", False)] + [("Yes", "Yes", True)] * 6,
    "ann3": [("Yes", "No", False), ("No", "No", False)] + [("Yes", "Yes", False)] * 6,
}


def label_by_plan(db, sid) -> list[int]:
    """The demo study with every screen answered by the three annotators as PLAN says; returns
    the screen order."""
    order = [it["screen"] for it in studies.items_of_study(db, sid, "validity")]
    for name, answers in PLAN.items():
        u = user_row(db, name)
        for screen_id, (v, n, gold) in zip(order, answers):
            s = workspace.open_screen(db, sid, u, screen_id)
            bp = s.items[2]
            item = studies.screen_items(db, sid, screen_id)[2]
            target = item["payload"]["gold"]
            pick = target if gold else next(p["doc_id"] for p in bp.passages if p["doc_id"] != target)
            workspace.submit_screen(db, s, u, {"validity": {"value": v, "reason": "r"}, "naturalness": {"value": n, "reason": "r"},
                                               "best_passage": {"value": pick}}, started_at=time.time() - 1)
    return order


def relabel(db, sid, annotator: str, question: str, value: str) -> None:
    """A new label of ``annotator`` on the first item of ``question``, superseding theirs (what a
    changed answer stores)."""
    item = studies.items_of_study(db, sid, question)[0]["id"]
    uid = user_row(db, annotator)["id"]
    with write(db):
        old = db.execute("SELECT MAX(id) FROM labels WHERE item_id = ? AND user_id = ?", [item, uid]).fetchone()[0]
        db.execute("INSERT INTO labels (item_id, user_id, value, reason, submitted_at, duration_ms, supersedes)"
                   " VALUES (?, ?, ?, 'changed my mind', 2.0, 1500, ?)", [item, uid, value, old])


def second_study(db):
    """A second validity/naturalness study of the demo project over every multi-instance group."""
    groups = sorted({i["group_id"] for i in projects.instances(db, 1) if "_" in i["instance_id"]})
    return create_study(db, project=get_project(db, "demo"), questions=["validity", "naturalness"], annotators=["ann1", "ann2", "ann3"],
                        name="second", settings=StudySettings(group_fraction=1.0, per_group=2, overlap=3, seed=1),
                        groups=groups)["study_id"]


# ---- narratives and re-judging (the demo's FollowIR project) ----------------------------------
ANNOTATORS = ["ann1", "ann2", "ann3"]
ADDED = " Documents about knee surgery are not relevant."
# the published changed instruction of f-robot: each annotator's non-default answers
REJUDGE_ANSWERS = {
    "ann1": {"f-doc-2": "not relevant", "f-doc-4": "not relevant", "f-doc-5": "not relevant"},
    "ann2": {"f-doc-2": "not relevant", "f-doc-4": "not relevant"},
    "ann3": {"f-doc-4": "not relevant"},
}


def judge(db, study_id, name, answers, default="relevant"):
    """``name`` answers every screen of theirs: answers[doc_id], else ``default``."""
    user = users.get_user(db, name)
    while (screen := workspace.open_screen(db, study_id, user)) is not None:
        workspace.submit_screen(db, screen, user, {"relevance": {"value": answers.get(screen.document["doc_id"], default)}},
                                started_at=None)


def save_narrative(db, text, **kw):
    """Save ``text`` as a new narrative version of f-robot (author expert, ANNOTATORS re-judge)."""
    kw.setdefault("annotators", ANNOTATORS)
    return narrative_versions.save_narrative(db, project=get_project(db, "demo"), query_id="f-robot", text=text, author=kw.pop("author", "expert"), **kw)


def narratives_page(db, name) -> AppTest:
    """The narratives page run once with ``name`` signed in."""
    return signed_in_page(db, "pages/narratives.py", name)


def published_rejudged_demo(db) -> dict:
    """The published changed instruction of f-robot re-judged by ann1..3 with one control; the lead
    adjudicates f-doc-5. Returns the result of rejudge_published."""
    r = narrative_versions.rejudge_published(db, project=get_project(db, "demo"), author="lead", annotators=ANNOTATORS, controls=1)
    for name, answers in REJUDGE_ANSWERS.items():
        judge(db, r["study_id"], name, answers)
    item = next(it for it in studies.items_of_study(db, r["study_id"]) if it["doc_id"] == "f-doc-5")
    studies.add_adjudication(db, item["id"], "not relevant", "lead")
    return r


# ---- small synthetic projects ---------------------------------------------------------------
def make_project(db, n_groups=25, per_group=4):
    """Project "p": ``n_groups`` groups of ``per_group`` instances, one passage each; users a0..a4."""
    b = Bundle()
    for g in range(n_groups):
        b.queries.append(Query(f"g{g}", f"query {g}"))
        for j in range(per_group):
            iid = f"g{g}_{j}"
            b.instances.append(Instance(iid, f"g{g}", f"g{g}", f"instruction {g}.{j}"))
            b.documents.append(Document(f"p{g}_{j}", f"passage {g}.{j}"))
            b.qrels.append(Qrel(iid, f"p{g}_{j}", 1))
    projects.import_bundle(db, "p", b, fmt="instructir")
    for n in range(5):
        auth.add_user(db, f"a{n}", "annotator", "pw")


DOCS = {
    "d1": "Neapolitan pizza dough is made with flour, water, salt and yeast and baked in a wood-fired oven.",
    "d2": "Gluten-free pizza crust uses rice flour and tapioca starch instead of wheat, safe for celiac disease.",
    "d3": "The Roman Colosseum was completed in 80 AD under the emperor Titus after eight years of construction.",
    "d4": "A story for young children about gladiators and lions in the big round arena of ancient Rome.",
    "d5": "Python lists are mutable sequences while tuples are immutable.",
    "d6": "Marathon training plans gradually increase weekly running distance.",
}
# a derived version is stored through storage (imports hold only the published versions)
VALIDATED = {"q1_1": {"d2": 1}, "q1_2": {"d1": 1}, "q2_1": {"d3": 1}, "q2_2": {"d3": 1}}


def instructir_bundle() -> Bundle:
    """Two groups of two instances; ``validated`` moves q2_1's target from d4 to d3."""
    return Bundle(
        documents=[Document(k, v) for k, v in DOCS.items()],
        queries=[Query("q1", "how to make pizza dough"), Query("q2", "history of the Colosseum")],
        instances=[
            Instance("q1_1", "q1", "q1", "I have celiac disease and cannot eat wheat."),
            Instance("q1_2", "q1", "q1", "I am an Italian chef who wants a traditional wood-fired recipe."),
            Instance("q2_1", "q2", "q2", "I am a teacher preparing a story for young children."),
            Instance("q2_2", "q2", "q2", "I am an archaeologist who needs the precise construction dates."),
        ],
        qrels=[Qrel("q1_1", "d2", 1), Qrel("q1_2", "d1", 1), Qrel("q2_1", "d4", 1), Qrel("q2_2", "d3", 1)],
    )


DOMAINS = {"fiqa": 20, "aila": 10, "pm": 3}  # queries per domain


def ifir_bundle() -> Bundle:
    """Queries <d><n> with subset d; instances <qid>_level1/_level2 and the bare <qid>_0; the bare
    qrels hold the candidate set c0..c3, level1 gold {c0, c1}, level2 gold {c0}."""
    b = Bundle()
    for dom, n in DOMAINS.items():
        for k in range(n):
            qid = f"{dom}{k}"
            b.queries.append(Query(qid, f"query {qid}", subset=dom))
            b.instances.append(Instance(f"{qid}_0", qid, qid, "", "og"))
            b.instances.append(Instance(f"{qid}_1", qid, qid, f"instruction 1 of {qid}", "level1"))
            b.instances.append(Instance(f"{qid}_2", qid, qid, f"instruction 2 of {qid}", "level2"))
            for c in range(4):
                b.documents.append(Document(f"{qid}c{c}", f"passage {c} of {qid}"))
                b.qrels.append(Qrel(f"{qid}_0", f"{qid}c{c}", 1))
            b.qrels += [Qrel(f"{qid}_1", f"{qid}c0", 1), Qrel(f"{qid}_1", f"{qid}c1", 1), Qrel(f"{qid}_2", f"{qid}c0", 1)]
    return b


def label_ifir(db, study_id, values: dict[tuple[str, str | None, str], list[str]]):
    """Store labels: (instance, doc or None, question) -> one value per annotator a0, a1, a2."""
    ids = {n: db.execute("SELECT id FROM users WHERE name = ?", [n]).fetchone()[0] for n in ("a0", "a1", "a2")}
    for it in studies.items_of_study(db, study_id):
        vals = values.get((it["instance_id"], it["doc_id"], it["question"]))
        if vals is None:
            continue
        for name, v in zip(("a0", "a1", "a2"), vals):
            db.execute("INSERT INTO labels (item_id, user_id, value, submitted_at) VALUES (?, ?, ?, 0)",
                       [it["id"], ids[name], v])


def labelled_ifir_study(db) -> int:
    """Project ``ifir`` (:func:`ifir_bundle`), annotators a0..a2 and a passage-match study of a
    fifth of its groups, every item labelled 5 / 4 / 1 (split votes); returns the study id."""
    projects.import_bundle(db, "ifir", ifir_bundle(), fmt="ifir")
    for n in range(3):
        auth.add_user(db, f"a{n}", "annotator", "pw")
    sid = create_study(db, project=get_project(db, "ifir"), questions=["passage_match"], annotators=["a0", "a1", "a2"],
                       settings=StudySettings(group_fraction=0.2, per_group=1, seed=1))["study_id"]
    label_ifir(db, sid, {(it["instance_id"], it["doc_id"], "passage_match"): ["5", "4", "1"]
                         for it in studies.items_of_study(db, sid)})
    return sid


def label_items(db, study_id, answer) -> None:
    """Store a label for every item of a study: ``answer(item, annotator name)`` -> value (None:
    no label); written as the item's annotators' labels, straight into storage."""
    people = db.execute("SELECT u.id, u.name FROM study_annotators sa JOIN users u ON u.id = sa.user_id "
                        "WHERE sa.study_id = ? ORDER BY u.name", [study_id]).fetchall()
    for it in studies.items_of_study(db, study_id):
        for uid, name in people:
            value = answer(it, name)
            if value is not None:
                db.execute("INSERT INTO labels (item_id, user_id, value, submitted_at) VALUES (?, ?, ?, 0)",
                           [it["id"], uid, value])


# ---- uploads (tests/fixtures/importers) --------------------------------------------------------
IMPORTER_FIXTURES = ROOT / "tests" / "fixtures" / "importers"


def zipped(folder: Path, prefix: str = "") -> bytes:
    """The files under ``folder`` as the bytes of a .zip, paths relative to ``folder`` after ``prefix``."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for p in sorted(folder.rglob("*")):
            if p.is_file():
                z.write(p, prefix + str(p.relative_to(folder)))
    return buf.getvalue()


# ---- InfoSearch (tests/fixtures/importers/infosearch) -------------------------------------------
INFOSEARCH_FIXTURE = IMPORTER_FIXTURES / "infosearch"
DIMENSIONS = {"aud-1": "Audience", "lang-1": "Language"}
# (mode, query, doc) -> the answer of ann1 and ann2; ann3 differs only where a dissent says
CONDITION_ANSWERS = {
    ("changed", "aud-1", "is-d1"): "Yes", ("changed", "aud-1", "is-d2"): "No", ("changed", "aud-1", "is-d3"): "No",
    ("changed", "lang-1", "is-d3"): "Yes", ("changed", "lang-1", "is-d1"): "No", ("changed", "lang-1", "is-d2"): "Yes",
    ("reversed", "aud-1", "is-d1"): "No", ("reversed", "aud-1", "is-d2"): "Yes", ("reversed", "aud-1", "is-d3"): "No",
    ("reversed", "lang-1", "is-d3"): "No", ("reversed", "lang-1", "is-d1"): "Yes", ("reversed", "lang-1", "is-d2"): "No",
}


def answer_all(db, sid, names, dissent=None):
    """``names`` answer every condition screen of theirs as CONDITION_ANSWERS (ann3: ``dissent`` first)."""
    payload = {it["screen"]: it["payload"] for it in studies.items_of_study(db, sid)}
    for name in names:
        user = users.get_user(db, name)
        while (screen := workspace.open_screen(db, sid, user)) is not None:
            p = payload[screen.screen]
            key = (p["mode"], p["qid"], screen.document["doc_id"])
            value = (dissent or {}).get(key, CONDITION_ANSWERS[key]) if name == "ann3" else CONDITION_ANSWERS[key]
            workspace.submit_screen(db, screen, user, {"condition": {"value": value}}, started_at=None)


# ---- the reverse proxy of docs/deployment.md ---------------------------------------------------
def proxy_config() -> str:
    """The nginx configuration under "### The reverse proxy" of docs/deployment.md."""
    doc = (ROOT / "docs" / "deployment.md").read_text(encoding="utf-8")
    section = doc[doc.index("### The reverse proxy"):]
    return section[section.index("```nginx\n") + len("```nginx\n"):section.index("\n```", section.index("```nginx"))]


def nginx_binary() -> str | None:
    """nginx on the PATH, or Debian's unpacked by scripts/nginx.sh into .cache/nginx."""
    import shutil

    unpacked = ROOT / ".cache" / "nginx" / "usr" / "sbin" / "nginx"
    return shutil.which("nginx") or (str(unpacked) if unpacked.is_file() else None)


def nginx_files(folder: Path, *, app_port: int = 8501, http_port: int = 80, https_port: int = 443) -> Path:
    """The documented configuration made runnable in ``folder``: a self-signed certificate for its
    certificate paths, the given ports, temporary paths inside ``folder``; returns the main file."""
    import getpass
    import subprocess

    folder.mkdir(parents=True, exist_ok=True)
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=ifjudge.example.org"], check=True, capture_output=True)
    site = (proxy_config().replace("/etc/ssl/certs/ifjudge.example.org.pem", str(cert))
            .replace("/etc/ssl/private/ifjudge.example.org.key", str(key))
            .replace("server 127.0.0.1:8501;", f"server 127.0.0.1:{app_port};")
            .replace("listen 80;", f"listen 127.0.0.1:{http_port};").replace("listen 443 ssl;", f"listen 127.0.0.1:{https_port} ssl;"))
    (folder / "site.conf").write_text(site)
    temp = folder / "temp"
    temp.mkdir(exist_ok=True)
    main = folder / "nginx.conf"
    main.write_text(
        (f"user {getpass.getuser()};\n" if os.geteuid() == 0 else "")  # workers as root too: they read temp/
        + f"pid {folder / 'nginx.pid'};\nerror_log stderr;\nevents {{}}\nhttp {{\n"
        + "".join(f"    {kind}_temp_path {temp / kind};\n" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        + f"    access_log off;\n    include {folder / 'site.conf'};\n}}\n")
    return main
