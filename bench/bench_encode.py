"""Dense encoding backends side by side: speed, agreement of the results, tool overhead.

Prints, in one run, for the bundled MiniLM (all-MiniLM-L6-v2):

1. passages per second at 256 tokens (or `--words` per passage) for torch fp32, onnx (fp32) and onnx-int8 on the CPU
   (aim: int8 >= 2.5x torch), interleaved in one process: each of ``--rounds`` rounds runs the
   three backends in turn on the same passages with the same number of threads (``--threads``,
   torch and ONNX Runtime alike), and the medians are compared; the load average (1 / 5 / 15 min)
   before and after is printed, since other work on the machine moves wall times by up to 2x;
   plus the one-off ONNX export + optimization + int8 quantisation time;
2. tool overhead: ``DenseRetriever.embed`` (hashing, cache look-up, shards written) vs the raw
   ``model.encode`` on the same texts, torch and onnx-int8 (aim: < 5%);
3. nDCG@10 and p-MRR with each backend, and their difference from torch fp32 (aim: |delta| <
   0.005), on the demo project (storage/demo/demo.json) and on a synthetic FollowIR-shaped set
   (``--queries`` x ``--candidates`` passages, each query with an original and a changed
   instruction, per-query candidate lists, original and changed qrels); where a backend's p-MRR
   differs from torch's on a query, the changed documents' ranks and scores with both, and the
   torch score gap each rank change crossed (a near tie shows as a gap smaller than the shift);
4. on a machine with CUDA, the same throughput with torch fp32 and fp16 on the GPU, and a
   Robust04-sized evaluation (52 queries x 1,000 candidates) end to end; here it says when CUDA
   is not available.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/bench_encode.py [--passages 64] [--rounds 5] [--threads N]
        [--batch-size 32] [--queries 30] [--candidates 100] [--skip-quality]
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
import torch  # noqa: E402

from annotation.demo import DEMO_PROJECT, load_demo  # noqa: E402
from evaluation import measures, pmrr  # noqa: E402
from evaluation.embedding_cache import EmbeddingCache  # noqa: E402
from evaluation.retrievers import encoders  # noqa: E402
from evaluation.retrievers.dense import DenseRetriever  # noqa: E402
from evaluation.retrievers.encoders import OnnxEncoder  # noqa: E402
from evaluation.templates import get_template  # noqa: E402
from storage import projects  # noqa: E402
from storage.db import connect  # noqa: E402

BACKENDS = ("torch", "onnx", "onnx-int8")
WORDS = (
    "the model retrieval passage query instruction relevant document ranking search engine users need "
    "information about history science health policy energy climate city river market price study "
    "results method data analysis report patients clinic school teachers children budget safety risk "
    "government law court decision company workers industry production farmers water food travel"
).split()

SUBJECTS = [
    "sourdough bread", "marathon training", "home solar panels", "type 2 diabetes", "python decorators",
    "roman aqueducts", "coral reef bleaching", "mortgage refinancing", "houseplant care", "electric car batteries",
    "jazz improvisation", "sleep hygiene", "volcanic eruptions", "remote work", "vegan protein",
    "chess openings", "wine fermentation", "migraine triggers", "bird migration", "freelance taxes",
    "3d printing", "egyptian pyramids", "dog training", "climate policy", "password security",
    "knitting patterns", "black holes", "childhood vaccination", "coffee brewing", "urban beekeeping",
    "glacier retreat", "medieval castles", "stock options", "wildfire prevention", "language learning",
    "bicycle maintenance", "ocean tides", "vitamin d", "railway history", "drone regulation",
]
ANGLES = [
    "a beginner's introduction explaining the basic ideas in plain words",
    "a technical explanation with precise figures and measurements",
    "the history and how practices changed over the last century",
    "common mistakes people make and how to avoid them",
    "a budget guide for people with little money to spend",
    "safety warnings and risks that experts emphasise",
    "recent scientific research published in peer-reviewed journals",
    "a step-by-step checklist that busy parents can follow",
    "how it differs across countries and cultures",
    "advanced tips for professionals who already know the basics",
]
NARROW = {1: "precise technical figures", 5: "safety risks", 6: "peer-reviewed research"}


def passages_256(n: int, seed: int = 0, words: int = 300) -> list[str]:
    """``n`` passages of ``words`` words: at 300, MiniLM truncates each at 256 tokens."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(words)) for _ in range(n)]


def timed(fn) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process, all threads) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def median_of(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def retriever(backend: str, cache_dir: Path, device: str = "cpu", fp16: bool = True, batch_size=None) -> DenseRetriever:
    r = DenseRetriever("minilm", cache_dir=cache_dir, device=device, backend=backend, fp16=fp16, batch_size=batch_size)
    r._load()
    return r


def raw_encode(r: DenseRetriever, texts: list[str]) -> np.ndarray:
    if r._onnx is not None:
        return r._onnx.encode(texts, batch_size=r.batch_size)
    return r._model.encode(texts, batch_size=r.batch_size, convert_to_numpy=True, show_progress_bar=False)


def tool_encode(r: DenseRetriever, texts: list[str], root: Path) -> np.ndarray:
    r.cache = EmbeddingCache(r.cache.identity, cache_dir=Path(tempfile.mkdtemp(dir=root)))  # empty cache
    return r.embed(texts)


# -- quality ---------------------------------------------------------------------------------
def quality(r: DenseRetriever, topics, documents, qrels_og, qrels_changed, candidates) -> dict:
    """nDCG@10 of the og topics on the original qrels, p-MRR of og vs changed (FollowIR eq. 1)."""
    template = get_template("instruction_query")
    og = [t for t in topics if t["variant"] == "og"]
    changed = [t for t in topics if t["variant"] == "changed"]
    run_og = r.retrieve(og, documents, template=template, k=1000, candidates=candidates)
    run_changed = r.retrieve(changed, documents, template=template, k=1000, candidates=candidates)
    judged = {q: qrels_og[q] for q in run_og if q in qrels_og}
    ndcg = measures.evaluate(judged, run_og, ["nDCG@10"])["measures"]["nDCG@10"]
    return {"nDCG@10": ndcg, "p-MRR": pmrr.p_mrr(qrels_og, qrels_changed, run_og, run_changed)["p-MRR"]}, (run_og, run_changed)


def demo_set(root: Path):
    db = connect(root / "demo.db")
    load_demo(db)
    pid = projects.get_project(db, DEMO_PROJECT)["id"]
    topics = projects.eval_topics(db, pid)
    return topics, projects.documents(db, pid), projects.qrels(db, pid, "original"), projects.qrels(db, pid, "changed"), None


def followir_set(n_queries: int, n_candidates: int, seed: int = 0):
    """FollowIR-shaped: each query has og and changed instructions and its own candidates
    (a third about its subject, the rest about others); the changed instruction keeps one angle
    relevant, so its subject's other passages become non-relevant (the changed documents)."""
    rng = random.Random(seed)
    documents, topics, candidates, qrels_og, qrels_changed = {}, [], {}, {}, {}
    for qi in range(n_queries):
        qid = f"q{qi}"
        subject = SUBJECTS[qi % len(SUBJECTS)]
        angle = list(NARROW)[qi % len(NARROW)]
        own = n_candidates // 3
        cand = []
        for ci in range(n_candidates):
            about = subject if ci < own else rng.choice([s for s in SUBJECTS if s != subject])
            a = ci % len(ANGLES) if ci < own else rng.randrange(len(ANGLES))
            filler = " ".join(rng.choice(WORDS) for _ in range(25))
            doc_id = f"{qid}-d{ci}"
            documents[doc_id] = {"title": about.title(), "text": f"{about.capitalize()}: {ANGLES[a]}. {filler}."}
            cand.append(doc_id)
            if about == subject:
                qrels_og.setdefault(qid, {})[doc_id] = 1
                qrels_changed.setdefault(qid, {})[doc_id] = int(a == angle)
        rng.shuffle(cand)
        candidates[qid] = cand
        topics.append({"qid": qid, "query": f"information about {subject}", "variant": "og",
                       "instruction": f"Relevant documents are about {subject}, whatever aspect they cover."})
        topics.append({"qid": qid, "query": f"information about {subject}", "variant": "changed",
                       "instruction": f"Relevant documents are about {subject} and give {NARROW[angle]}; "
                                      "documents about any other aspect are not relevant."})
    return topics, documents, qrels_og, qrels_changed, candidates


def loads() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f} (1 / 5 / 15 min)"


def with_threads(r: DenseRetriever, threads: int) -> DenseRetriever:
    """The ONNX session rebuilt with ``threads`` intra-op threads, as many as torch uses."""
    if r._onnx is not None:
        r._onnx = OnnxEncoder(r._model, r._onnx.onnx_file, threads=threads)
    return r


def near_ties(runs: dict, qrels_og, qrels_changed, *, detail: int = 3) -> None:
    """Where a backend's p-MRR differs from torch's, why: each rank change of a changed document
    against the torch score gap it crossed, beside how far the backend moves that query's scores.
    Up to ``detail`` such queries are shown document by document; more are summarised."""
    changed = pmrr.changed_documents(qrels_og, qrels_changed)
    base = runs["torch"]
    for name, other in runs.items():
        if name == "torch":
            continue
        per_base = pmrr.p_mrr(qrels_og, qrels_changed, *base)["per_query"]
        per_other = pmrr.p_mrr(qrels_og, qrels_changed, *other)["per_query"]
        differ = [q for q in changed if q in per_base and per_base[q] != per_other.get(q)]
        gaps, shifts = [], []
        for qid in differ:
            show = len(differ) <= detail
            if show:
                print(f"   near tie? query {qid}: p-MRR torch {per_base[qid]:+.4f}, {name} {per_other[qid]:+.4f}; "
                      "changed documents, rank og -> changed (score og / changed):")
                for d in changed[qid]:
                    cells = []
                    for label, (run_og, run_new) in (("torch", base), (name, other)):
                        (r_og, s_og), (r_new, s_new) = pmrr.doc_ranks(run_og[qid], [d])[d], pmrr.doc_ranks(run_new[qid], [d])[d]
                        cells.append(f"{label} {r_og} -> {r_new} ({s_og:.4f} / {s_new:.4f})")
                    print(f"     {d:<12} " + "   ".join(cells))
            for which, i in (("og", 0), ("changed", 1)):
                ref, got = base[i][qid], other[i][qid]
                ref_order, got_order = list(ref), list(got)
                shift = max(abs(ref[x] - got[x]) for x in ref if x in got)
                shifts.append(shift)
                for d in changed[qid]:
                    a, b = ref_order.index(d), got_order.index(d)
                    if a != b:
                        passed = ref_order[b]
                        gaps.append(abs(ref[d] - ref[passed]))
                        if show:
                            print(f"     {which} run: {d} rank {a + 1} -> {b + 1}, past {passed}: torch scores "
                                  f"{ref[d]:.4f} vs {ref[passed]:.4f} (gap {gaps[-1]:.4f}); "
                                  f"{name} moves this query's scores by up to {shift:.4f}")
        if differ and len(differ) > detail:
            deltas = [abs(per_other[q] - per_base[q]) for q in differ]
            print(f"   {name}: per-query p-MRR differs from torch on {len(differ)} of {len(per_base)} queries "
                  f"(|delta| median {statistics.median(deltas):.4f}, max {max(deltas):.4f}); {len(gaps)} rank changes of "
                  f"changed documents, each across a torch score gap of median {statistics.median(gaps):.4f} "
                  f"(max {max(gaps):.4f}), while {name} moves a query's scores by up to {statistics.median(shifts):.4f} "
                  "(median over runs): near ties, many of them cancelling out in the mean")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--passages", type=int, default=64, help="passages of 256 tokens per throughput run")
    ap.add_argument("--words", type=int, default=300, help="words per passage (300: truncated at 256 tokens)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (each backend once per round); medians kept")
    ap.add_argument("--threads", type=int, default=torch.get_num_threads(), help="threads for torch and ONNX Runtime alike")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--queries", type=int, default=30, help="queries of the synthetic FollowIR-shaped set")
    ap.add_argument("--candidates", type=int, default=100, help="candidates per query of that set")
    ap.add_argument("--skip-quality", action="store_true", help="throughput and overhead only")
    args = ap.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)
    torch.set_num_threads(args.threads)
    print(f"machine: {os.cpu_count()} CPUs, torch {torch.__version__}, onnxruntime {ort.__version__}; "
          f"{args.threads} threads for torch and ONNX Runtime; load average {loads()}")
    print(f"ONNX recipe {encoders.recipe_id()}: {encoders.RECIPE}")

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        encoders_ = {"torch": retriever("torch", root, batch_size=args.batch_size)}
        load_s = time.perf_counter() - started
        started = time.perf_counter()
        encoders_["onnx-int8"] = retriever("onnx-int8", root, batch_size=args.batch_size)  # export, optimize, quantise
        export_s = time.perf_counter() - started
        encoders_["onnx"] = retriever("onnx", root, batch_size=args.batch_size)
        for r in encoders_.values():
            with_threads(r, args.threads)
        print(f"model load {load_s:.1f} s; ONNX export + optimization + int8 quantisation, once per cache dir: {export_s:.1f} s")

        # 1-2. throughput and overhead, interleaved -------------------------------------------
        # On a shared machine the load changes from one minute to the next: each round runs every
        # backend in turn (A, B, C), raw and through the tool, on the same passages; the median of
        # the rounds is kept, and CPU seconds (all threads) are shown beside wall seconds.
        texts = passages_256(args.passages, words=args.words)
        tokens = int(encoders._tokenize(encoders_["torch"]._model, texts[:1])["attention_mask"].sum())
        for r in encoders_.values():
            raw_encode(r, texts[:8])  # warm-up
        times = {}
        load_before = loads()
        for _ in range(args.rounds):
            for name in BACKENDS:
                for side, fn in (("raw", lambda: raw_encode(encoders_[name], texts)),
                                 ("tool", lambda: tool_encode(encoders_[name], texts, root))):
                    times.setdefault((name, side), []).append(timed(fn))
        load_after = loads()
        med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in times.items()}
        print(f"\n1. throughput: {len(texts)} passages of {tokens} tokens, batch {args.batch_size}, CPU, {args.threads} threads, "
              f"median of {args.rounds} interleaved rounds (torch, onnx, onnx-int8 in turn, same passages)")
        print(f"   load average before {load_before}; after {load_after}")
        t_wall, t_cpu = med[("torch", "raw")]
        for name in BACKENDS:
            wall, cpu = med[(name, "raw")]
            walls = sorted(w for w, _ in times[(name, "raw")])
            print(f"   {name:<10} {len(texts) / wall:7.1f} passages/s (rounds {len(texts) / walls[-1]:.1f}-{len(texts) / walls[0]:.1f})   "
                  f"{t_wall / wall:4.2f}x torch fp32 by wall time, {t_cpu / cpu:4.2f}x by CPU time ({cpu:.1f} CPU s)")
        print("   compared with: torch fp32 (sentence-transformers model.encode) on the same passages in the same rounds; "
              "aim: onnx-int8 >= 2.5x")

        print("\n2. tool overhead: DenseRetriever.embed (empty cache) vs the raw encode, same texts, medians")
        for name in BACKENDS:
            (tw, tc), (rw, rc) = med[(name, "tool")], med[(name, "raw")]
            print(f"   {name:<10} tool {tw:6.2f} s ({tc:.1f} CPU s)   raw {rw:6.2f} s ({rc:.1f} CPU s)   "
                  f"overhead {100 * (tw / rw - 1):+5.1f}% wall, {100 * (tc / rc - 1):+5.1f}% CPU   (aim < 5%)")
        reference = raw_encode(encoders_["torch"], texts[:32])
        for name in ("onnx", "onnx-int8"):
            v = raw_encode(encoders_[name], texts[:32])
            print(f"   {name} vs torch vectors: max |diff| {np.abs(v - reference).max():.2e}, "
                  f"min cosine {(v * reference).sum(1).min():.4f}")

        # 3. quality ---------------------------------------------------------------------------
        fsize = f"{args.queries} queries x {args.candidates} candidates = {args.queries * args.candidates:,} passages"
        sets = () if args.skip_quality else (("demo project", demo_set(root)), (f"synthetic FollowIR-shaped, {fsize}", followir_set(args.queries, args.candidates)))
        for label, data in sets:
            print(f"\n3. {label}: nDCG@10 (og, original qrels) and p-MRR, instruction_query template")
            results, runs = {}, {}
            for name in BACKENDS:
                started = time.perf_counter()
                results[name], runs[name] = quality(encoders_[name], *data)
                seconds = time.perf_counter() - started
                base = results["torch"]
                deltas = "   ".join(
                    f"delta {m} {results[name][m] - base[m]:+.4f}" for m in ("nDCG@10", "p-MRR")
                    if results[name][m] is not None and base[m] is not None
                )
                shown = "   ".join(f"{m} {v:.4f}" if v is not None else f"{m} undefined" for m, v in results[name].items())
                print(f"   {name:<10} {shown}   {deltas if name != 'torch' else ''}  ({seconds:.1f} s)")
            print("   aim: |delta| < 0.005")
            near_ties(runs, data[2], data[3])

        # 4. GPU -------------------------------------------------------------------------------
        print()
        if not torch.cuda.is_available():
            print("4. GPU: CUDA is not available on this machine: no GPU figures.")
        else:
            print(f"4. GPU: {torch.cuda.get_device_name(0)}")
            for fp16 in (False, True):
                r = retriever("torch", root, device="cuda", fp16=fp16)
                r.batch_size = 128
                raw_encode(r, texts[:8])
                s = median_of(lambda: raw_encode(r, texts), args.rounds)
                print(f"   torch {'fp16' if fp16 else 'fp32'} batch 128: {len(texts) / s:8.1f} passages/s")
            r = DenseRetriever("minilm", cache_dir=root / "gpu", device="cuda")
            started = time.perf_counter()
            quality(r, *followir_set(52, 1000))
            print(f"   Robust04-sized (52 queries x 1,000 candidates, og + changed), empty cache: {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
