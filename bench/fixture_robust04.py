"""A Robust04-sized FollowIR project and two large studies, generated (seeded), for the lead-loop bench.

What it builds, once, into a cache folder (default ``.cache/bench_robust04/`` in the repository,
which git ignores; ``--out DIR`` elsewhere):

``robust04/``  the FollowIR hub v1 layout as published (``jhu-clsp/robust04-instructions``):
    ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl`` (``_id``, ``text``,
    ``instruction_og``, ``instruction_changed``), ``top_ranked.jsonl`` (one ``{qid, pid}`` row per
    pair), ``qrels_og/test.{jsonl,tsv}`` and ``qrels_changed/test.{jsonl,tsv}``, ``README.md``.
    Sizes follow FollowIR's Table 2 for Robust04 (the constants below): 52 queries of ~12 words,
    instructions of ~68 (original) and ~75 words (changed: the original plus a negation), ~1,000
    candidates per query, documents of TREC length (300-1,500 words, log-normal, median ~650),
    ~39.6 relevant documents per query under the original narrative (the changed narrative was
    written to cut them in half: 19.8 left relevant), and judged non-relevant documents to make
    ~200 judgments per query. Scores 0 / 1 / 2 as in Robust04's qrels.
``runs/``      5 systems x 2 instructions: TREC run files over the candidates (seeded scores that
    favour relevant documents), for 10 stored evaluations.
``robust04_base.db``  the project imported (``ifjudge import``), users lead + ann1..ann3.
``robust04.db``       + the re-judging study of the published changed instruction (``ifjudge
    narrative rejudge-published`` with controls: ~10,000 documents x 3 annotators = ~30,000 labels,
    all submitted through ``storage.studies.submit``, seeded answers with ~10% disagreement),
    a few adjudications, and the 10 evaluations (``evaluation.runner.run_eval`` on the run files).
``instructir.db``     a synthetic InstructIR project of 11,112 instances (groups of 4) and a study of
    validity + naturalness + best_passage over all of them x 3 annotators: 100,008 labels.

Run: ``HF_HUB_OFFLINE=1 .venv/bin/python bench/fixture_robust04.py [--out DIR] [--force]``
"""
from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# FollowIR (Weller et al., 2024), Table 2, TREC Robust '04 after annotation, and §3
N_QUERIES = 52
QUERY_WORDS = 11.9            # |Q|, words per query (before annotation, the same queries)
INSTRUCTION_OG_WORDS = 68.2   # |I| of the TREC narratives
INSTRUCTION_CHANGED_WORDS = 75.2  # |I| after the experts' changes
REL_PER_QUERY_CHANGED = 19.8  # relevant documents per query under the changed instruction
REL_PER_QUERY_OG = 2 * REL_PER_QUERY_CHANGED  # "changed so that the number of relevant documents was cut in half"
# the reranking set: all relevant documents plus top non-relevant from a pool of five models
CANDIDATES_PER_QUERY = 1_000
JUDGED_PER_QUERY = 200        # judged documents per query in the qrels (relevant + non-relevant)
DOC_WORDS_MIN, DOC_WORDS_MAX, DOC_WORDS_MEDIAN = 300, 1_500, 650   # TREC news articles
VOCABULARY = 30_000
SEED = 21

SYSTEMS = ("bm25-like", "dense-a", "dense-b", "instr-a", "instr-b")
ANNOTATORS = ("ann1", "ann2", "ann3")
REJUDGE_CONTROLS = 152        # originally non-relevant documents per query judged as controls: ~10,000 items
INSTRUCTIR_INSTANCES = 11_112  # x (validity, naturalness, best_passage) x 3 annotators = 100,008 labels
PASSWORD = "bench-pw"


def _vocabulary(rng: np.random.Generator) -> np.ndarray:
    syll = np.array(["ka", "lo", "mi", "ne", "ru", "ta", "sho", "ver", "pin", "dal", "gre", "tor", "ban", "sel",
                     "mon", "rik", "ace", "ul", "pha", "zen"])
    words = set()
    while len(words) < VOCABULARY:
        n = int(rng.integers(1, 5))
        words.add("".join(syll[rng.integers(0, len(syll), n)]))
    return np.array(sorted(words))


def _texts(rng, vocab, cdf, lengths) -> list[str]:
    idx = np.searchsorted(cdf, rng.random(int(lengths.sum())))
    words = vocab[np.minimum(idx, len(vocab) - 1)].tolist()
    out, at = [], 0
    for n in lengths.tolist():
        out.append(" ".join(words[at:at + n]))
        at += n
    return out


def write_robust04(out: Path, seed: int = SEED) -> dict:
    """Write the hub v1 layout under ``out``; returns counts."""
    rng = np.random.default_rng(seed)
    vocab = _vocabulary(rng)
    p = 1.0 / np.arange(1, len(vocab) + 1)
    cdf = np.cumsum(p / p.sum())
    out.mkdir(parents=True, exist_ok=True)
    qids = [str(301 + i * 4) for i in range(N_QUERIES)]  # Robust04 topic numbers (301-700)
    n_docs = N_QUERIES * CANDIDATES_PER_QUERY
    sigma = math.log(DOC_WORDS_MAX / DOC_WORDS_MEDIAN) / 2.0
    lengths = np.clip(np.exp(rng.normal(math.log(DOC_WORDS_MEDIAN), sigma, n_docs)).astype(int),
                      DOC_WORDS_MIN, DOC_WORDS_MAX)
    doc_ids = [f"FBIS{3 + i % 2}-{10000 + i}" if i % 3 else f"LA{(i % 12) + 1:02d}{(i % 28) + 1:02d}89-{i:04d}"
               for i in range(n_docs)]
    with open(out / "corpus.jsonl", "w", encoding="utf-8") as f:
        chunk = 2_000
        for start in range(0, n_docs, chunk):
            bodies = _texts(rng, vocab, cdf, lengths[start:start + chunk])
            titles = _texts(rng, vocab, cdf, rng.integers(3, 10, len(bodies)))
            for j, (t, b) in enumerate(zip(titles, bodies)):
                f.write(json.dumps({"_id": doc_ids[start + j], "title": t.title(), "text": b}) + "\n")
    qrels_og, qrels_changed, top = [], [], []
    with open(out / "queries.jsonl", "w", encoding="utf-8") as f:
        for i, q in enumerate(qids):
            qt, io, neg = _texts(rng, vocab, cdf, np.array([
                max(3, int(rng.normal(QUERY_WORDS, 3))), max(20, int(rng.normal(INSTRUCTION_OG_WORDS, 15))),
                max(4, int(rng.normal(INSTRUCTION_CHANGED_WORDS - INSTRUCTION_OG_WORDS, 2)))]))
            f.write(json.dumps({"_id": q, "text": qt, "instruction_og": "A relevant document " + io,
                                "instruction_changed": "A relevant document " + io + " Documents about " + neg
                                + " are not relevant."}) + "\n")
            cands = doc_ids[i * CANDIDATES_PER_QUERY:(i + 1) * CANDIDATES_PER_QUERY]
            top += [(q, d) for d in cands]
            n_rel = int(np.clip(rng.poisson(REL_PER_QUERY_OG), 5, JUDGED_PER_QUERY // 2))
            judged = rng.choice(len(cands), JUDGED_PER_QUERY, replace=False)
            for k, j in enumerate(judged.tolist()):
                og = (1 if rng.random() < 0.7 else 2) if k < n_rel else 0
                # the changed narrative keeps about half of the relevant documents
                ch = og if (og == 0 or rng.random() < REL_PER_QUERY_CHANGED / REL_PER_QUERY_OG) else 0
                qrels_og.append((q, cands[j], og))
                qrels_changed.append((q, cands[j], ch))
    with open(out / "top_ranked.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps({"qid": q, "pid": d}) + "\n" for q, d in top)
    for name, rows in (("qrels_og", qrels_og), ("qrels_changed", qrels_changed)):
        (out / name).mkdir(exist_ok=True)
        with open(out / name / "test.jsonl", "w", encoding="utf-8") as f:
            f.writelines(json.dumps({"query-id": q, "corpus-id": d, "score": float(s)}) + "\n" for q, d, s in rows)
        with open(out / name / "test.tsv", "w", encoding="utf-8") as f:
            f.write("query-id\tcorpus-id\tscore\n")
            f.writelines(f"{q}\t{d}\t{s}\n" for q, d, s in rows)
    (out / "README.md").write_text("---\nlanguage:\n- en\n---\nSynthetic Robust04-sized FollowIR set (bench).\n")
    return {"queries": len(qids), "documents": n_docs, "words": int(lengths.sum()), "pairs": len(top),
            "qrels_og": len(qrels_og), "relevant_og": sum(s > 0 for *_, s in qrels_og),
            "relevant_changed": sum(s > 0 for *_, s in qrels_changed)}


def write_runs(data: Path, out: Path, seed: int = SEED) -> list[Path]:
    """5 systems x (og, changed) TREC run files over the candidates; scores favour relevant documents
    (under the instruction of the run, more so for the instruction-following systems)."""
    rng = np.random.default_rng(seed + 1)
    cands: dict[str, list[str]] = {}
    for line in open(data / "top_ranked.jsonl", encoding="utf-8"):
        r = json.loads(line)
        cands.setdefault(r["qid"], []).append(r["pid"])
    rel = {}
    for name in ("qrels_og", "qrels_changed"):
        m = {}
        for line in open(data / name / "test.jsonl", encoding="utf-8"):
            r = json.loads(line)
            m[(r["query-id"], r["corpus-id"])] = r["score"]
        rel[name] = m
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for s, system in enumerate(SYSTEMS):
        for variant, qrels in (("og", "qrels_og"), ("changed", "qrels_changed")):
            follow = 1.0 + 0.5 * s
            (out / variant).mkdir(exist_ok=True)
            path = out / variant / f"{system}.run"  # the same name on both sides: one system
            with open(path, "w", encoding="utf-8") as f:
                for q, docs in cands.items():
                    gain = np.array([rel["qrels_og"].get((q, d), 0) * 0.6
                                     + rel[qrels].get((q, d), 0) * 0.3 * follow for d in docs])
                    scores = rng.normal(0, 1, len(docs)) + gain
                    order = np.argsort(-scores)
                    f.writelines(f"{q} Q0 {docs[j]} {r + 1} {scores[j]:.6f} {system}\n"
                                 for r, j in enumerate(order.tolist()))
            paths.append(path)
    return paths


def copy_db(src: Path, dst: Path) -> None:
    """A consistent copy of a SQLite database in WAL mode (the sqlite3 backup API, WAL included)."""
    import sqlite3
    with sqlite3.connect(src) as a, sqlite3.connect(dst) as b:
        a.backup(b)
    b.close()
    a.close()


def _cli(*argv: str) -> None:
    from cli.main import main
    code = main(list(argv))
    if code not in (0, None):
        raise SystemExit(f"ifjudge {' '.join(argv)} -> exit {code}")


def build_robust04_db(data: Path, runs: list[Path], base: Path, full: Path) -> dict:
    from accounts import auth
    from storage import projects, studies, users
    from storage.db import connect
    from annotation.outcomes import adjudication
    t = time.perf_counter()
    _cli("import", "--db", str(base), "--project", "robust04", "--format", "followir", str(data), "--json")
    db = connect(base)
    auth.add_user(db, "lead", "lead", PASSWORD)
    for a in ANNOTATORS:
        auth.add_user(db, a, "annotator", PASSWORD)
    db.close()
    t_import = time.perf_counter() - t
    copy_db(base, full)
    _cli("narrative", "rejudge-published", "--db", str(full), "--project", "robust04", "--author", "lead",
         "--annotators", ",".join(ANNOTATORS), "--controls", str(REJUDGE_CONTROLS), "--json")
    db = connect(full)
    sid = db.execute("SELECT MAX(id) FROM studies").fetchone()[0]
    rng = np.random.default_rng(SEED + 2)
    items = studies.items_of_study(db, sid)
    n_labels = 0
    t = time.perf_counter()
    for a in ANNOTATORS:
        uid = users.get_user(db, a)["id"]
        for it in items:
            truth = rng.random() < 0.5
            value = "relevant" if (truth ^ (rng.random() < 0.1)) else "not relevant"
            n_labels += len(studies.submit(db, study_id=sid, user_id=uid, screen=it["screen"],
                                           answers={it["id"]: {"value": value, "reason": "", "shown_order": None}},
                                           based_on={it["id"]: None}, started_at=time.time() - 20))
    t_labels = time.perf_counter() - t
    queue = adjudication.queue(db, sid)
    for row in queue[:20]:
        adjudication.record(db, sid, row["item_id"], "relevant", lead="lead", note="bench")
    db.close()
    from evaluation.runner import run_eval
    db = connect(full)
    t = time.perf_counter()
    for path in runs:
        variant = path.parent.name
        run_eval(db, projects.get_project(db, "robust04"), model=str(path), qrels_version="original" if variant == "og" else "changed",
                 variant=variant)
    t_eval = time.perf_counter() - t
    n_eval = db.execute("SELECT COUNT(*) FROM eval_runs").fetchone()[0]
    db.close()
    return {"study_id": sid, "items": len(items), "labels": n_labels, "eval_runs": n_eval,
            "import_s": round(t_import, 1), "labels_s": round(t_labels, 1), "eval_s": round(t_eval, 1)}


def build_instructir_db(path: Path) -> dict:
    from bench.load_test import synthetic_bundle
    from accounts import auth
    from annotation.studies import StudySettings, create_study
    from storage.projects import get_project
    from storage import projects, studies, users
    from storage.db import connect
    db = connect(path)
    projects.import_bundle(db, "instructir", synthetic_bundle(INSTRUCTIR_INSTANCES), fmt="beir", kind="instructir")
    auth.add_user(db, "lead", "lead", PASSWORD)
    for a in ANNOTATORS:
        auth.add_user(db, a, "annotator", PASSWORD)
    study = create_study(db, project=get_project(db, "instructir"), questions=["validity", "naturalness", "best_passage"],
                         annotators=list(ANNOTATORS), created_by="lead", name="instructir 100k",
                         settings=StudySettings(group_fraction=1.0, per_group=4, overlap=3, passages=3, seed=3))
    sid = study["study_id"]
    by_screen: dict[str, list[dict]] = {}
    for it in studies.items_of_study(db, sid):
        by_screen.setdefault(it["screen"], []).append(it)
    rng = np.random.default_rng(SEED + 3)
    n = 0
    for a in ANNOTATORS:
        uid = users.get_user(db, a)["id"]
        for screen, its in by_screen.items():
            answers = {}
            for it in its:
                if it["question"] == "best_passage":
                    c = it["payload"]["candidates"]
                    v = c[0] if rng.random() < 0.8 else c[int(rng.integers(0, len(c)))]
                    answers[it["id"]] = {"value": v, "reason": "", "shown_order": c}
                else:
                    no = rng.random() < 0.15
                    answers[it["id"]] = {"value": "No" if no else "Yes", "reason": "too vague" if no else "",
                                         "shown_order": None}
            n += len(studies.submit(db, study_id=sid, user_id=uid, screen=screen, answers=answers,
                                    based_on={i: None for i in answers}, started_at=time.time() - 30))
    db.close()
    return {"study_id": sid, "labels": n}


def build(out: Path, force: bool = False) -> dict:
    """Build everything under ``out`` unless ``out/manifest.json`` says it is there; returns the manifest."""
    manifest = out / "manifest.json"
    if manifest.exists() and not force:
        return json.loads(manifest.read_text())
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    t = time.perf_counter()
    info = {"robust04": write_robust04(out / "robust04")}
    info["write_s"] = round(time.perf_counter() - t, 1)
    runs = write_runs(out / "robust04", out / "runs")
    info["robust04_db"] = build_robust04_db(out / "robust04", runs, out / "robust04_base.db", out / "robust04.db")
    info["instructir_db"] = build_instructir_db(out / "instructir.db")
    info["built_s"] = round(time.perf_counter() - t, 1)
    manifest.write_text(json.dumps(info, indent=1))
    return info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / ".cache" / "bench_robust04")
    ap.add_argument("--force", action="store_true", help="rebuild even if the cache is there")
    args = ap.parse_args()
    print(json.dumps(build(args.out, args.force), indent=1))


if __name__ == "__main__":
    main()
