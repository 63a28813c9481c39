"""A subset is its own dataset; bare queries are the baseline: the stored shape (migration 8), and
an evaluation per subset on both engines."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from formats.readers import parse
from storage import projects
from storage.db import MIGRATIONS, SCHEMA_VERSION, connect

IFIR = Path(__file__).parent / "fixtures" / "published" / "ifir"
pytestmark = pytest.mark.both_engines


@pytest.mark.sqlite_only
def test_a_database_at_version_6_gains_the_bare_variant_and_the_domain_corpora(tmp_path, run_cli):
    """An IFIR project of two domains stored before migrations 7 and 8 (bare queries as variant og, no
    corpus per domain): the migration marks ``<qid>_0`` bare and gives each domain the documents
    of its prefix; the evaluation then ranks each domain against its own corpus."""
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)")
    for version, name, sql in MIGRATIONS[:6]:
        conn.executescript(sql)
        conn.execute("INSERT INTO schema_migrations VALUES (?, ?, '')", [version, name])
    b = parse("ifir", [IFIR])
    conn.execute("INSERT INTO projects (id, name, kind, created_at) VALUES (1, 'ifir', 'ifir', '')")
    conn.executemany("INSERT INTO documents (project_id, doc_id, title, text) VALUES (1, ?, ?, ?)",
                     [(d.doc_id, d.title, d.text) for d in b.documents])
    conn.executemany("INSERT INTO queries (project_id, query_id, text, subset) VALUES (1, ?, ?, ?)",
                     [(q.query_id, q.text, q.subset) for q in b.queries])
    conn.executemany("INSERT INTO instances (project_id, instance_id, query_id, group_id, instruction, variant)"
                     " VALUES (1, ?, ?, ?, ?, ?)",
                     [(i.instance_id, i.query_id, i.group_id, i.instruction, "og" if i.variant == "bare" else i.variant)
                      for i in b.instances])
    conn.executemany("INSERT INTO qrels (project_id, version, qid, doc_id, relevance) VALUES (1, ?, ?, ?, ?)",
                     [(q.version, q.qid, q.doc_id, q.relevance) for q in b.qrels])
    conn.commit()
    conn.close()
    db = connect(path)
    assert db.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] == SCHEMA_VERSION
    assert projects.project_bundle(db, 1).instances == b.instances  # <qid>_0 is variant bare again
    assert projects.subset_documents(db, 1) == b.subset_documents
    code, out, err = run_cli("eval", "run", "--db", path, "--project", "ifir", "--model", "bm25", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert (result["n_queries"], result["baseline"]["n_queries"]) == (7, 4)
    assert {s: e["corpus"] for s, e in result["subsets"].items()} == {"fiqa": 8, "nfcorpus": 4}


def test_each_domain_is_ranked_against_its_own_corpus(db_path, run_cli):
    """No document of another domain in any ranking; each domain's figure is the one a project of
    that domain alone gives, and the headline is their mean."""
    assert run_cli("import", "--db", db_path, "--project", "both", IFIR)[0] == 0
    for domain in ("fiqa", "nfcorpus"):
        assert run_cli("import", "--db", db_path, "--project", domain, IFIR / domain)[0] == 0
    runs = {}
    for project in ("both", "fiqa", "nfcorpus"):
        code, out, err = run_cli("eval", "run", "--db", db_path, "--project", project, "--model", "bm25", "--json")
        assert code == 0, err
        runs[project] = json.loads(out)
    db = connect(db_path)
    stored = projects.get_project(db, "both")["id"]
    from storage.eval_runs import load_eval_run

    run = load_eval_run(db, runs["both"]["eval_run_id"])["run"]
    assert all(d.split("/")[0] == q.split("/")[0] for q, docs in run.items() for d in docs)
    assert set(run) == {i["instance_id"] for i in projects.instances(db, stored) if i["variant"] != "bare"}
    sub = runs["both"]["subsets"]
    for domain in ("fiqa", "nfcorpus"):
        assert sub[domain]["metrics"]["nDCG@20"] == pytest.approx(runs[domain]["metrics"]["nDCG@20"], abs=1e-12)
    assert runs["both"]["metrics"]["nDCG@20"] == pytest.approx(
        (runs["fiqa"]["metrics"]["nDCG@20"] + runs["nfcorpus"]["metrics"]["nDCG@20"]) / 2, abs=1e-12)
    assert runs["both"]["query_means"]["nDCG@20"] != pytest.approx(runs["both"]["metrics"]["nDCG@20"], abs=1e-6)


def test_a_layout_without_subsets_says_what_it_merged(db_path, run_cli, tmp_path):
    """The BEIR layout is one dataset: a two-domain project's export counts the subsets it merged in
    ``left_out`` (and says so on the terminal); the mteb export keeps each domain apart."""
    assert run_cli("import", "--db", db_path, "--project", "both", IFIR)[0] == 0
    code, _, err = run_cli("export", "--db", db_path, "--project", "both", "--format", "beir", "--out", tmp_path / "beir")
    assert code == 0 and "beir export left out 2 query subsets" in err
    manifest = json.loads((tmp_path / "beir" / "manifest.json").read_text())
    assert [(e["what"], e["count"]) for e in manifest["left_out"]] == [("query subsets", 2)]
    code, _, err = run_cli("export", "--db", db_path, "--project", "both", "--format", "mteb", "--out", tmp_path / "mteb")
    assert code == 0 and "query subsets" not in err
    assert sorted(p.name for p in (tmp_path / "mteb").iterdir() if p.is_dir()) == ["fiqa", "nfcorpus"]
