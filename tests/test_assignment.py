"""The assignment engine: claims, expiry and hand-over, caps, and 8 concurrent workers."""
import pytest
import multiprocessing as mp
from concurrent.futures import ProcessPoolExecutor
import csv
import io
import time
from collections import Counter

from accounts import auth
from annotation import workspace
from annotation.studies import StudySettings, create_study
from annotation.item_order import spaced_order
from storage import projects, studies
from storage.db import connect
from storage.errors import PermissionDenied
from tests.builders import make_project

pytestmark = pytest.mark.both_engines  # each test runs on SQLite and on PostgreSQL


def setup_study(db_path, n_ann=4, overlap=3, fraction=0.4, timeout=1800.0):
    db = connect(db_path)
    make_project(db)
    for n in range(5, 5 + max(0, n_ann - 5)):
        auth.add_user(db, f"a{n}", "annotator", "pw")
    r = create_study(
        db, project=projects.get_project(db, "p"), questions=["validity", "best_passage"], annotators=[f"a{i}" for i in range(n_ann)],
        settings=StudySettings(group_fraction=fraction, overlap=overlap, claim_timeout_s=timeout),
    )
    return db, r["study_id"]


def user(db, name):
    row = db.execute("SELECT id, name, role FROM users WHERE name = ?", [name]).fetchone()
    return dict(zip(("id", "name", "role"), row))


def answer_all(screen):
    out = {}
    for it in screen.items:
        out[it.question.id] = {"value": it.passages[0]["doc_id"] if it.passages else "Yes"}
    return out


def test_claim_returns_the_same_screen_until_submitted(db_path):
    db, sid = setup_study(db_path)
    u = user(db, "a0")
    first = studies.claim_next(db, sid, u["id"])
    assert studies.claim_next(db, sid, u["id"]) == first
    s = workspace.open_screen(db, sid, u, first)
    workspace.submit_screen(db, s, u, answer_all(s), started_at=time.time())
    assert studies.claim_next(db, sid, u["id"]) != first


def test_expired_claim_is_handed_to_someone_who_never_had_it(db_path):
    db, sid = setup_study(db_path, n_ann=4, overlap=1, timeout=60)
    a0, a1 = user(db, "a0"), user(db, "a1")
    held = studies.claim_next(db, sid, a0["id"], timeout_s=60, now=1000.0)
    # a1 works through its own queue; then the stale claim of a0 becomes a1's
    while True:
        nxt = studies.claim_next(db, sid, a1["id"], timeout_s=60, now=1010.0)
        if nxt is None:
            break
        s = workspace.open_screen(db, sid, a1, nxt)
        workspace.submit_screen(db, s, a1, answer_all(s), started_at=None, now=1010.0)
    assert studies.claim_next(db, sid, a1["id"], timeout_s=60, now=1030.0) is None  # not expired yet
    assert studies.claim_next(db, sid, a1["id"], timeout_s=60, now=1100.0) == held  # expired: handed over
    owners = {r["annotator"] for r in studies.assignment_rows(db, sid) if r["screen"] == held}
    assert owners == {"a1"}


def test_skip_moves_screen_to_end_of_queue(db_path):
    db, sid = setup_study(db_path)
    u = user(db, "a0")
    first = studies.claim_next(db, sid, u["id"])
    s = workspace.open_screen(db, sid, u, first)
    workspace.skip(db, s, u)
    second = studies.claim_next(db, sid, u["id"])
    assert second != first
    order = []
    while (nxt := studies.claim_next(db, sid, u["id"])) is not None:
        order.append(nxt)
        sc = workspace.open_screen(db, sid, u, nxt)
        workspace.submit_screen(db, sc, u, answer_all(sc), started_at=None)
    assert order[-1] == first


def _worker(db_path, study_id, name, ghost):
    db = connect(db_path)
    u = user(db, name)
    submitted = 0
    while True:
        screen = workspace.open_screen(db, study_id, u)
        if screen is None:
            return submitted
        if ghost:  # claims and walks away: its claims expire and are handed out again
            return submitted
        for _ in range(2):  # a double submit: only one label may result
            try:
                workspace.submit_screen(db, screen, u, answer_all(screen), started_at=time.time())
                submitted += 1
            except studies.StaleSubmission:
                pass
            except PermissionDenied:  # its claim expired and was handed to someone else meanwhile
                break


def queue(db, sid, name) -> list[str]:
    """The screens ``name`` is handed, in order, answering each (and where each was answered)."""
    u, out = user(db, name), []
    while (s := workspace.open_screen(db, sid, u)) is not None:
        workspace.submit_screen(db, s, u, answer_all(s), started_at=None)
        out.append(s.screen)
    return out


def test_each_annotator_has_an_order_of_their_own_with_queries_apart(db_path):
    """Issue 28, item 5: seeded per annotator (the same order again from the same seed), one query
    never twice in a row, and the place an item was answered at stored with its label."""
    db, sid = setup_study(db_path, n_ann=3, overlap=3, fraction=1.0)
    orders = {name: queue(db, sid, name) for name in ("a0", "a1", "a2")}
    assert len({tuple(o) for o in orders.values()}) == 3  # three different orders of the same screens
    assert all(sorted(o) == sorted(orders["a0"]) for o in orders.values())
    study = studies.get_study(db, sid)
    query_of = {i["instance_id"]: i["query_id"] for i in projects.instances(db, study["project_id"])}
    items = sorted(studies.items_of_study(db, sid), key=lambda i: (i["position"], i["id"]))
    pairs = list(dict.fromkeys((i["screen"], query_of[i["instance_id"]]) for i in items))
    query = dict(pairs)
    for name, order in orders.items():
        assert all(query[x] != query[y] for x, y in zip(order, order[1:]))
        # exactly the seeded order: the same study built again gives the same orders
        assert order == spaced_order(pairs, seed=f"{study['settings']['seed']}:{user(db, name)['id']}")
    places = {(r["item"], r["annotator"]): r for r in csv.DictReader(io.StringIO(workspace.labels_csv(db, sid)))}
    screen_of = {i["id"]: i["screen"] for i in studies.items_of_study(db, sid)}
    for (item, name), row in places.items():
        assert int(row["shown_position"]) == orders[name].index(screen_of[int(item)]) + 1


def test_a_changed_answer_keeps_its_place_and_a_new_round_comes_after(db_path):
    db, sid = setup_study(db_path, n_ann=3, overlap=3, fraction=0.4)
    u = user(db, "a0")
    first = workspace.open_screen(db, sid, u)
    workspace.submit_screen(db, first, u, answer_all(first), started_at=None)
    second = workspace.open_screen(db, sid, u)
    workspace.submit_screen(db, second, u, answer_all(second), started_at=None)
    again = workspace.open_screen(db, sid, u, first.screen)  # back to the first, to change it
    workspace.submit_screen(db, again, u, answer_all(again), started_at=None)
    positions = studies.shown_positions(db, sid)
    assert {positions[(it.item_id, "a0")] for it in again.items} == {1}
    assert {positions[(it.item_id, "a0")] for it in second.items} == {2}


def test_eight_concurrent_workers_respect_caps_and_lose_nothing(db_path):
    db, sid = setup_study(db_path, n_ann=8, overlap=3, fraction=1.0, timeout=0.0)
    names = [f"a{i}" for i in range(8)]
    ctx = mp.get_context("spawn")
    # an executor, not a Pool: a worker that dies fails the test instead of being respawned forever
    with ProcessPoolExecutor(8, mp_context=ctx) as pool:
        futures = [pool.submit(_worker, str(db_path), sid, n, n == "a7") for n in names]
        counts = [f.result(timeout=300) for f in futures]
    rows = studies.assignment_rows(db, sid)
    per_item = Counter(r["item"] for r in rows)
    caps = {i["id"]: i["cap"] for i in studies.items_of_study(db, sid)}
    assert all(per_item[i] <= caps[i] for i in caps)
    labels = studies.label_history(db, sid)
    pairs = Counter((l["item"], l["annotator"]) for l in labels)
    assert max(pairs.values()) == 1  # nobody labelled an item twice
    n_items_per_screen = 2
    assert sum(counts) * n_items_per_screen == len(labels)  # every accepted submission is stored
    done = [r for r in rows if r["state"] == "done"]
    assert len(done) == len(labels)
