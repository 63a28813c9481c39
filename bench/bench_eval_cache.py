"""Second evaluation of the same model on corrected qrels vs the first one.

Builds a synthetic InstructIR-like project (300 passages, 50 query groups x 2 instances = 100
instances, qrels ``original`` and a ``validated`` version where 10% of targets moved), then times

  run 1  MiniLM (bundled all-MiniLM-L6-v2), empty embedding cache, ``original`` qrels
  run 2  the same model and template on ``validated`` qrels (the stored run is reused)
  run 2b the same, forcing retrieval again (``reuse=False``): only the embedding cache helps

and prints the times and the ratios run1/run2 and run1/run2b (aim: >= 20x).

    HF_HUB_OFFLINE=1 .venv/bin/python bench/bench_eval_cache.py
"""
from __future__ import annotations

import os
import random
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluation.runner import run_eval  # noqa: E402
from formats.bundle import Bundle, Document, Instance, Qrel, Query  # noqa: E402
from storage import projects  # noqa: E402
from storage.db import connect  # noqa: E402
from storage.eval_runs import load_eval_run  # noqa: E402
from storage.projects import import_bundle, replace_qrels  # noqa: E402

SUBJECTS = [
    ("sourdough bread", "baking"), ("marathon training", "running"), ("home solar panels", "energy"),
    ("type 2 diabetes", "health"), ("python decorators", "programming"), ("roman aqueducts", "history"),
    ("coral reef bleaching", "ecology"), ("mortgage refinancing", "finance"), ("houseplant care", "gardening"),
    ("electric car batteries", "transport"), ("jazz improvisation", "music"), ("sleep hygiene", "health"),
    ("volcanic eruptions", "geology"), ("remote work productivity", "work"), ("vegan protein sources", "nutrition"),
    ("chess openings", "games"), ("wine fermentation", "food"), ("migraine triggers", "health"),
    ("bird migration", "biology"), ("tax deductions for freelancers", "finance"), ("3d printing materials", "making"),
    ("ancient egyptian pyramids", "history"), ("dog obedience training", "pets"), ("climate change policy", "policy"),
    ("cybersecurity passwords", "security"), ("knitting patterns", "crafts"), ("black holes", "astronomy"),
    ("childhood vaccination", "health"), ("coffee brewing methods", "food"), ("urban beekeeping", "farming"),
]
ANGLES = [
    "a beginner's introduction to {s}, explaining the basic ideas in plain words",
    "a detailed technical explanation of {s} with precise figures and measurements",
    "the history of {s} and how practices changed over the last century",
    "common mistakes people make with {s} and how to avoid them",
    "a budget-friendly guide to {s} for people with little money to spend",
    "safety warnings and risks related to {s} that experts emphasise",
    "recent scientific research on {s} published in peer-reviewed journals",
    "a step-by-step checklist for {s} that busy parents can follow",
    "how {s} differs across countries and cultures around the world",
    "advanced tips on {s} for professionals who already know the basics",
]
PERSONAS = [
    ("I am a complete beginner and want the basics explained simply.", 0),
    ("I am an engineer and need precise technical figures.", 1),
    ("I am a historian interested in how things changed over time.", 2),
    ("I keep making errors and want to know what to avoid.", 3),
    ("I am a student on a tight budget.", 4),
    ("I care most about safety and risks.", 5),
    ("I am a researcher who wants recent peer-reviewed findings.", 6),
    ("I am a busy parent who needs a quick checklist.", 7),
    ("I am curious about differences between countries.", 8),
    ("I am a professional looking for advanced tips.", 9),
]


def build_bundle(seed: int = 0) -> Bundle:
    rng = random.Random(seed)
    docs, queries, instances, qrels = [], [], [], []
    for si, (subject, field) in enumerate(SUBJECTS):
        for ai, angle in enumerate(ANGLES):
            body = angle.format(s=subject)
            docs.append(Document(f"p{si}_{ai}", f"This {field} article offers {body}. It covers {subject} in depth.",
                                 title=subject.title()))
    for gi in range(50):
        si = gi % len(SUBJECTS)
        subject = SUBJECTS[si][0]
        qid = f"g{gi}"
        queries.append(Query(qid, f"what should I know about {subject}"))
        for j, (persona, ai) in enumerate(rng.sample(PERSONAS, 2), start=1):
            iid = f"{qid}_{j}"
            instances.append(Instance(iid, qid, qid, persona))
            qrels.append(Qrel(iid, f"p{si}_{ai}", 1, "original"))
            # Annotators moved 10% of the targets to a neighbouring angle of the same subject.
            target = f"p{si}_{(ai + 1) % len(ANGLES)}" if rng.random() < 0.1 else f"p{si}_{ai}"
            qrels.append(Qrel(iid, target, 1, "validated"))
    return Bundle(documents=docs, queries=queries, instances=instances, qrels=qrels)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = connect(Path(tmp) / "bench.db")
        bundle = build_bundle()
        # imports hold the published versions; the validated one is stored through storage
        validated = {}
        for q in bundle.qrels:
            if q.version == "validated":
                validated.setdefault(q.qid, {})[q.doc_id] = q.relevance
        bundle.qrels = [q for q in bundle.qrels if q.version != "validated"]
        import_bundle(db, "bench", bundle, fmt="instructir")
        replace_qrels(db, 1, "validated", validated)
        cache = Path(tmp) / "embeddings"
        print(f"project: {len(bundle.documents)} passages, {len(bundle.instances)} instances, "
              f"{len({i.group_id for i in bundle.instances})} groups")

        t = time.perf_counter()
        r1 = run_eval(db, projects.get_project(db, "bench"), model="minilm", template="instruction_query", qrels_version="original", cache_dir=cache)
        t1 = time.perf_counter() - t

        t = time.perf_counter()
        r2 = run_eval(db, projects.get_project(db, "bench"), model="minilm", template="instruction_query", qrels_version="validated", cache_dir=cache)
        t2 = time.perf_counter() - t

        t = time.perf_counter()
        r2b = run_eval(db, projects.get_project(db, "bench"), model="minilm", template="instruction_query", qrels_version="validated",
                       cache_dir=cache, reuse=False)
        t2b = time.perf_counter() - t

        m1, m2, m2b = (load_eval_run(db, r) for r in (r1, r2, r2b))
        assert m2["settings"]["reused_run"] and not m2b["settings"]["reused_run"]
        assert m2b["run"] == m1["run"], "cached embeddings must give the identical run"
        print(f"run 1  (MiniLM, empty cache, original qrels):      {t1:8.3f} s  nDCG@10 {m1['metrics']['nDCG@10']:.4f}")
        print(f"run 2  (same model, validated qrels, run reused):  {t2:8.3f} s  nDCG@10 {m2['metrics']['nDCG@10']:.4f}")
        print(f"run 2b (same, retrieval forced, embeddings cached): {t2b:8.3f} s  nDCG@10 {m2b['metrics']['nDCG@10']:.4f}")
        print(f"speed-up run1/run2:  {t1 / t2:8.1f}x   (aim: >= 20x)")
        print(f"speed-up run1/run2b: {t1 / t2b:8.1f}x")


if __name__ == "__main__":
    main()
