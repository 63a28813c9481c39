"""IFJudge's ``--format mteb`` exports load and evaluate in MTEB 2.26 with MTEB's own task classes.

Each test exports a project with ``ifjudge export --format mteb``, points the ``metadata.dataset`` of
an MTEB task class at the export folder (revision ``"main"``: a local folder has no revisions),
and runs ``mteb.evaluate`` with a tiny deterministic encoder (hashed bag of words). The numbers
MTEB reports are compared with ``ifjudge eval`` on MTEB's own run (its saved predictions) and on
the project's qrels exported as TREC, or with values computed by hand. Nothing is fetched from
the hub (HF_HUB_OFFLINE); the datasets and MTEB caches are the test's tmp folder.
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import datasets
import huggingface_hub.constants
import mteb
import numpy as np
import pytest
from mteb.models.model_meta import ModelMeta
from mteb.tasks.instruction_reranking.eng.robust04_instruction_retrieval import Robust04InstructionRetrieval
from mteb.tasks.instruction_retrieval.eng.ifir_fi_qa_retrieval import IFIRFiQA
from mteb.tasks.instruction_retrieval.eng.ifirnf_corpus_retrieval import IFIRNFCorpus
from mteb.tasks.instruction_retrieval.eng.instruct_ir import InstructIR

from formats.trec_io import read_qrels

FIXTURES = Path(__file__).parent / "fixtures" / "published"
DIM = 4096


class HashingBagOfWords:
    """An MTEB encoder: each lower-cased word adds a weight in (1, 2) to one of 4,096 hashed
    dimensions; similarity is the dot product (the weights make ties between documents unlikely)."""

    mteb_model_meta = ModelMeta.create_empty()

    @staticmethod
    def vector(text: str) -> np.ndarray:
        v = np.zeros(DIM)
        for word in re.findall(r"\w+", text.lower()):
            h = int(hashlib.md5(word.encode()).hexdigest(), 16)
            v[h % DIM] += 1 + (h // DIM) % 997 / 997
        return v

    def encode(self, inputs, *, task_metadata, hf_split, hf_subset, prompt_type=None, **kwargs):
        return np.array([self.vector(t) for batch in inputs for t in batch["text"]]).reshape(-1, DIM)

    def similarity(self, a, b):
        return np.asarray(a) @ np.asarray(b).T

    def similarity_pairwise(self, a, b):
        return (np.asarray(a) * np.asarray(b)).sum(-1)


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """No hub access; the datasets cache and MTEB's cache in the test's tmp folder."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("MTEB_CACHE", str(tmp_path / "mteb-cache"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-datasets")
    return tmp_path


def mteb_task(task_class, folder: Path):
    """MTEB's task class reading ``folder`` (its metadata copied, so the class itself is untouched)."""
    task = task_class()
    task.metadata = task.metadata.model_copy(update={"dataset": {"path": str(folder), "revision": "main"}})
    return task


def run_mteb(task, tmp: Path) -> tuple[dict, dict]:
    """(MTEB's scores of the test split, MTEB's run: query id -> {doc id: score})."""
    predictions = tmp / "predictions"
    result = mteb.evaluate(HashingBagOfWords(), task, cache=None, show_progress_bar=False,
                           prediction_folder=predictions)
    (scores,) = result.task_results[0].scores["test"]
    saved = json.loads((predictions / f"{task.metadata.name}_predictions.json").read_text())
    return scores, saved["default"]["test"]


def write_run(run: dict, path: Path, rename=lambda q: q) -> Path:
    with path.open("w") as out:
        for qid, docs in run.items():
            for rank, (doc, score) in enumerate(sorted(docs.items(), key=lambda x: (-x[1], x[0])), 1):
                out.write(f"{rename(qid)} Q0 {doc} {rank} {score!r} mteb\n")
    return path


def write_qrels(qrels: dict, path: Path) -> Path:
    path.write_text("".join(f"{q} 0 {d} {r}\n" for q, docs in qrels.items() for d, r in docs.items()))
    return path


def ifjudge_eval(run_cli, *argv) -> dict:
    code, out, err = run_cli("eval", *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def loaded_counts(task) -> tuple[int, int, int]:
    """(queries, documents, judged queries) as MTEB's loader hands them to the evaluation."""
    task.load_data()
    split = task.dataset["default"]["test"]
    return len(split["queries"]), len(split["corpus"]), len(split["relevant_docs"])


def test_a_generic_project_with_a_query_without_instruction(run_cli, db_path, offline):
    """MTEB's ``InstructIR`` class (a retrieval task with instructions) on a BEIR project whose q2
    has no instruction: the export writes ``""`` (a null stops MTEB: "Found None in batch")."""
    src = offline / "beir"
    (src / "qrels").mkdir(parents=True)
    docs = {"d1": "alpha beta", "d2": "alpha", "d3": "gamma", "d4": "gamma delta"}
    (src / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, "title": "", "text": v}) + "\n" for k, v in docs.items()))
    (src / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "gamma", "instruction": "delta"}) + "\n"
        + json.dumps({"_id": "q2", "text": "alpha beta"}) + "\n")
    (src / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td4\t1\nq2\td2\t1\n")
    assert run_cli("import", "--db", db_path, "--project", "g", "--format", "beir", src)[0] == 0
    out = offline / "export"
    code, _, err = run_cli("export", "--db", db_path, "--project", "g", "--format", "mteb", "--out", out)
    assert code == 0 and "warning" not in err
    task = mteb_task(InstructIR, out)
    assert loaded_counts(task) == (2, 4, 2)
    scores, run = run_mteb(task, offline)
    # q1 = "gamma delta" ranks d4 (gamma + delta) above d3 (gamma): nDCG@10 = 1; q2 = "alpha beta" ranks
    # d1 (both words) above its relevant d2: nDCG@10 = 1 / log2(3). Robustness@10 groups q1 and q2 apart.
    assert [max(run["q1"], key=run["q1"].get), max(run["q2"], key=run["q2"].get)] == ["d4", "d1"]
    expected = (1 + 1 / np.log2(3)) / 2
    assert scores["ndcg_at_10"] == pytest.approx(expected, abs=1e-5)
    assert scores["robustness_at_10"] == pytest.approx(expected, abs=1e-9)


def test_the_demo_project_loads_whole(run_cli, db_path, offline):
    """The demo (4 InstructIR groups of 3 instances, one FollowIR query with 6 original and 6 changed
    judgments, 18 documents): MTEB's ``InstructIR`` class gets 14 judged queries and 18 documents,
    and its nDCG@10 and Robustness@10 are ``ifjudge eval``'s on the same run."""
    assert run_cli("demo", "--db", db_path)[0] == 0
    out = offline / "export"
    code, _, err = run_cli("export", "--db", db_path, "--project", "demo", "--format", "mteb", "--out", out)
    assert code == 0 and "warning" not in err
    task = mteb_task(InstructIR, out)
    assert loaded_counts(task) == (14, 18, 14)
    scores, run = run_mteb(task, offline)
    # the project's own judgments, exported as TREC: instances keyed by instance id, the FollowIR query by query id
    assert run_cli("export", "--db", db_path, "--project", "demo", "--format", "trec", "--out", offline / "trec")[0] == 0
    original = read_qrels(offline / "trec" / "qrels.original.txt")
    changed = read_qrels(offline / "trec" / "qrels.changed.txt")
    qrels = {q: d for q, d in original.items() if q != "f-robot"}
    qrels.update({"f-robot-og": original["f-robot"], "f-robot-changed": changed["f-robot"]})
    assert set(run) == set(qrels) and len(qrels) == 14
    qrels_file, run_file = write_qrels(qrels, offline / "qrels.txt"), write_run(run, offline / "run.txt")
    standard = ifjudge_eval(run_cli, "metrics", "--qrels", qrels_file, "--run", run_file, "--measures", "nDCG@10")
    assert scores["ndcg_at_10"] == pytest.approx(standard["measures"]["nDCG@10"], abs=1e-5)
    robust = ifjudge_eval(run_cli, "robustness", "--qrels", qrels_file, "--run", run_file, "--k", "10")
    assert scores["robustness_at_10"] == pytest.approx(robust["Robustness@10"], abs=1e-9)


def _ifir_levels(run_cli, offline, domain: str):
    """Import an IFIR domain, export it for MTEB; returns (export folder, the ifir project's qrels)."""
    db = offline / f"{domain}.db"
    assert run_cli("import", "--db", db, "--project", domain, "--format", "ifir", FIXTURES / "ifir" / domain)[0] == 0
    out = offline / f"{domain}-mteb"
    code, _, err = run_cli("export", "--db", db, "--project", domain, "--format", "mteb", "--out", out)
    assert code == 0
    assert run_cli("export", "--db", db, "--project", domain, "--format", "trec", "--out", offline / f"{domain}-trec")[0] == 0
    return out, err, read_qrels(offline / f"{domain}-trec" / "qrels.original.txt")


def test_an_ifir_domain_loads_with_its_levels(run_cli, offline):
    """fiqa (query 12 with levels 1-3, query 47 with levels 1-2): MTEB's ``IFIRFiQA`` groups the
    queries by ``v1`` / ``v2`` / ``v3`` in their ids; each level score is the mean nDCG@20 that
    ``ifjudge eval`` gives the same run for that level's queries. The 2 bare queries are left out,
    with a warning on the terminal."""
    out, err, qrels = _ifir_levels(run_cli, offline, "fiqa")
    assert "warning: mteb export left out 2 bare queries (8 judgments)" in err
    task = mteb_task(IFIRFiQA, out)
    assert loaded_counts(task) == (5, 8, 5)
    scores, run = run_mteb(task, offline)
    assert sorted(run) == ["12_v1", "12_v2", "12_v3", "47_v1", "47_v2"]
    instance = {f"{q}_v{k}": f"{q}_{k}" for q in ("12", "47") for k in (1, 2, 3)}
    run_file = write_run(run, offline / "run.txt", rename=instance.get)
    qrels_file = write_qrels({q: d for q, d in qrels.items() if not q.endswith("_0")}, offline / "qrels.txt")
    per_query = ifjudge_eval(run_cli, "metrics", "--qrels", qrels_file, "--run", run_file, "--measures", "nDCG@20",
                             "--per-query")["per_query"]
    ndcg = {q: v["nDCG@20"] for q, v in per_query.items()}
    for level in (1, 2, 3):
        values = [v for q, v in ndcg.items() if q.endswith(f"_{level}")]
        assert scores["level_scores"][f"level_{level}"] == pytest.approx(sum(values) / len(values), abs=1e-9)
    assert scores["ndcg_at_20"] == pytest.approx(sum(ndcg.values()) / 5, abs=1e-5)


def test_an_ifir_mteb_release_imports_back_with_its_levels(run_cli, offline):
    """``--format auto`` reads the MTEB export of an IFIR domain back as IFIR: the same queries,
    instructions, levels and judgments (without the bare queries the export left out); a domain
    without levels (nfcorpus, level 0) too, and MTEB's ``IFIRNFCorpus`` loads its export."""
    for domain, kind in (("fiqa", "ifir"), ("nfcorpus", "ifir")):
        out, _, _ = _ifir_levels(run_cli, offline, domain)
        db = offline / f"{domain}.db"
        code, _, err = run_cli("import", "--db", db, "--project", f"{domain}-back", out)
        assert code == 0, err
        from storage import projects
        from storage.db import connect

        conn = connect(db)
        first = projects.project_bundle(conn, projects.get_project(conn, domain)["id"])
        back = projects.project_bundle(conn, projects.get_project(conn, f"{domain}-back")["id"])
        assert projects.get_project(conn, f"{domain}-back")["kind"] == kind
        assert back.queries == first.queries  # the domain comes back from the dataset card
        assert back.instances == [i for i in first.instances if not i.instance_id.endswith("_0")]
        assert back.qrels == [q for q in first.qrels if not q.qid.endswith("_0")]
    nf = offline / "nfcorpus-mteb"
    task = mteb_task(IFIRNFCorpus, nf)
    assert loaded_counts(task) == (2, 4, 2)
    scores, _ = run_mteb(task, offline)
    assert 0 < scores["ndcg_at_20"] <= 1


def test_a_followir_project_loads_with_p_mrr(run_cli, db_path, offline):
    """The FollowIR fixture (3 queries of Robust04), exported for MTEB: MTEB's
    ``Robust04InstructionRetrieval`` reranks the candidates and its p-MRR is ``ifjudge eval pmrr``'s
    on the same run (the -og and -changed halves of MTEB's predictions)."""
    assert run_cli("import", "--db", db_path, "--project", "r", "--format", "mteb", FIXTURES / "followir_mteb")[0] == 0
    out = offline / "export"
    code, _, err = run_cli("export", "--db", db_path, "--project", "r", "--format", "mteb", "--out", out)
    assert code == 0 and "warning" not in err
    task = mteb_task(Robust04InstructionRetrieval, out)
    queries, _, judged = loaded_counts(task)
    assert queries == judged == 6
    scores, run = run_mteb(task, offline)
    assert run_cli("export", "--db", db_path, "--project", "r", "--format", "trec", "--out", offline / "trec")[0] == 0
    half = {v: {q[: -len(f"-{v}")]: d for q, d in run.items() if q.endswith(f"-{v}")} for v in ("og", "changed")}
    pmrr = ifjudge_eval(run_cli, "pmrr", "--qrels-og", offline / "trec" / "qrels.original.txt",
                        "--qrels-changed", offline / "trec" / "qrels.changed.txt",
                        "--run-og", write_run(half["og"], offline / "og.run"),
                        "--run-changed", write_run(half["changed"], offline / "changed.run"))
    assert scores["p-MRR"] == pytest.approx(pmrr["p-MRR"], abs=1e-9)


def test_an_ifir_domain_with_an_empty_level_is_warned_about(offline):
    """MTEB's IFIRFiQA divides each level's sum by its number of queries: without a level-3
    instruction it fails, so the export says so; a domain without levels (nfcorpus) is not warned."""
    from exports.validated import mteb_part
    from formats.readers import parse

    fiqa = parse("ifir", [FIXTURES / "ifir" / "fiqa"])
    fiqa.instances = [i for i in fiqa.instances if i.variant != "level3"]
    fiqa.qrels = [q for q in fiqa.qrels if not q.qid.endswith("_3")]
    _, omitted = mteb_part(fiqa, ["original"])
    assert [(e["what"], e["count"]) for e in omitted] == [("bare queries", 2), ("instruction levels", 1)]
    assert omitted[1]["why"].startswith("no instruction of level 3;")
    _, omitted = mteb_part(parse("ifir", [FIXTURES / "ifir" / "nfcorpus"]), ["original"])
    assert [(e["what"], e["count"], e["judgments"]) for e in omitted] == [("bare queries", 2, 4)]
