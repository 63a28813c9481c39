"""``ifjudge import --add``: a further file of a layout (corpus, qrels, candidate lists) added to a
stored project, all-or-nothing, refused unless every judged document is then in the corpus."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from storage import projects
from storage.db import connect

RELEASE = Path(__file__).parent.parent / "datasets" / "instructir"


def seed_corpus(path: Path, *, drop: int = 0) -> Path:
    """The shipped release's 9,906 target passages ``<msmarco_pid>_<j>``, each with the text of the
    seed MS MARCO passage it revises (``msmarco-seed/corpus.jsonl``); the first ``drop`` left out."""
    seed = {}
    for line in (RELEASE / "msmarco-seed" / "corpus.jsonl").read_text().splitlines():
        record = json.loads(line)
        seed[record["_id"]] = record["text"]
    targets = [row.split("\t")[1] for row in (RELEASE / "qrels" / "test.tsv").read_text().splitlines()[1:]]
    path.write_text("".join(json.dumps({"_id": t, "title": "", "text": seed[t.rsplit("_", 1)[0]]}) + "\n"
                            for t in targets[drop:]))
    return path


def test_a_corpus_added_to_the_shipped_instructir_release_is_evaluated(run_cli, db_path, tmp_path):
    code, _, err = run_cli("import", "--db", db_path, "--project", "ir", RELEASE)
    assert code == 0 and "INSTRUCTIR/corpus.jsonl of github.com/kaistAI/InstructIR" in err
    assert "ifjudge import --project ir --add corpus corpus.jsonl" in err
    code, _, err = run_cli("eval", "run", "--db", db_path, "--project", "ir", "--model", "bm25")
    assert code != 0 and "--add corpus" in err  # the refusal says how to add the corpus
    code, out, err = run_cli("import", "--db", db_path, "--project", "ir", "--add", "corpus",
                             seed_corpus(tmp_path / "corpus.jsonl"), "--json")
    assert code == 0, err
    assert json.loads(out) == {"documents": 9906}
    code, out, err = run_cli("eval", "run", "--db", db_path, "--project", "ir", "--model", "bm25", "--k", "10", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["n_queries"] == 9906 and result["missing_queries"] == []
    assert 0 < result["metrics"]["Robustness@10"] < result["metrics"]["nDCG@10"] < 1


@pytest.mark.both_engines
def test_a_corpus_without_every_judged_document_is_refused_whole(run_cli, db_path, tmp_path):
    assert run_cli("import", "--db", db_path, "--project", "ir", RELEASE)[0] == 0
    code, _, err = run_cli("import", "--db", db_path, "--project", "ir", "--add", "corpus",
                           seed_corpus(tmp_path / "corpus.jsonl", drop=2))
    assert code != 0
    assert "would still lack 2 document(s) judged by its qrels (e.g. '7865137_1', '7865137_2'): nothing was added" in err
    conn = connect(db_path)
    assert projects.project_counts(conn, projects.get_project(conn, "ir")["id"])["documents"] == 0


def followir_project(run_cli, db_path, tmp_path) -> Path:
    src = tmp_path / "src"
    (src / "qrels_og").mkdir(parents=True)
    (src / "qrels_changed").mkdir()
    (src / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "bank loans", "instruction_og": "money",
                                                   "instruction_changed": "money, not rivers"}) + "\n")
    (src / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "text": t}) + "\n"
                                              for d, t in (("d1", "bank loan rates"), ("d2", "river bank"))))
    (src / "qrels_og" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t1\n")
    (src / "qrels_changed" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t0\n")
    assert run_cli("import", "--db", db_path, "--project", "f", "--format", "followir", src)[0] == 0
    return src


@pytest.mark.both_engines
def test_candidate_lists_and_documents_are_added_and_checked(run_cli, db_path, tmp_path):
    followir_project(run_cli, db_path, tmp_path)
    bad = tmp_path / "top_bad.jsonl"
    bad.write_text(json.dumps({"qid": "q1", "pid": "d1"}) + "\n" + json.dumps({"qid": "q1", "pid": "d9"}) + "\n")
    code, _, err = run_cli("import", "--db", db_path, "--project", "f", "--add", "top_ranked", bad)
    assert code != 0 and "top_bad.jsonl, line 2" in err and "unknown document id 'd9'" in err
    more = tmp_path / "more.jsonl"
    more.write_text(json.dumps({"_id": "d9", "text": "bank holiday"}) + "\n")
    assert run_cli("import", "--db", db_path, "--project", "f", "--add", "corpus", more)[0] == 0
    code, out, err = run_cli("import", "--db", db_path, "--project", "f", "--add", "top_ranked", bad)
    assert code == 0 and out.startswith("added to f: 1 top_ranked"), err
    conn = connect(db_path)
    assert projects.top_ranked(conn, projects.get_project(conn, "f")["id"]) == {"q1": ["d1", "d9"]}
    code, _, err = run_cli("import", "--db", db_path, "--project", "f", "--add", "corpus", more)
    assert code != 0 and "document 'd9' is already in the project" in err


@pytest.mark.both_engines
def test_qrels_are_added_as_the_version_given(run_cli, db_path, tmp_path):
    followir_project(run_cli, db_path, tmp_path)
    trec = tmp_path / "reversed.txt"
    trec.write_text("q1 0 d1 0\nq1 0 d2 1\n")
    code, _, err = run_cli("import", "--db", db_path, "--project", "f", "--add", "qrels", "--qrels-version", "reversed",
                           trec)
    assert code == 0, err
    conn = connect(db_path)
    assert projects.qrels(conn, projects.get_project(conn, "f")["id"], "reversed") == {"q1": {"d1": 0, "d2": 1}}
    unknown = tmp_path / "unknown.tsv"
    unknown.write_text("query-id\tcorpus-id\tscore\nq7\td1\t1\n")
    code, _, err = run_cli("import", "--db", db_path, "--project", "f", "--add", "qrels", unknown)
    assert code != 0 and "unknown.tsv, line 2" in err and "unknown query id 'q7'" in err
