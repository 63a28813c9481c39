"""How much each benchmark's figures move between ``--protocol mteb`` and ``--protocol paper`` (and
between WISE's two forms) on the data that ships with IFJudge.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/bench_protocols.py [--no-minilm]

For each bundled dataset it imports a fresh project, runs ``ifjudge eval run`` with BM25 and the
bundled MiniLM under both protocols and prints every headline figure side by side with the
difference (paper - mteb): the table of docs/evaluation.md ("What each protocol changes"). The
datasets: the shipped InstructIR release (split form, the 9,906 instances, BM25; and its first 40
query groups for MiniLM) with a stand-in corpus (the benchmark's revised passages are not shipped:
each target ``<pid>_<j>`` gets the text of the seed MS MARCO passage it revises followed by its
instance's instruction, as a revision fits the passage to the instruction; plus 500 seed passages
as distractors), and the published-layout
fixtures of FollowIR (hub v1), IFIR (fiqa + nfcorpus) and InfoSearch (Language) under
``tests/fixtures/published``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from cli.main import main as cli  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "published"
RELEASE = ROOT / "datasets" / "instructir"


def quiet(*argv) -> str:
    """Run ``ifjudge`` in-process; its stdout."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli([str(a) for a in argv])
    if code:
        raise SystemExit(f"ifjudge {' '.join(map(str, argv))} failed: {err.getvalue()}")
    return out.getvalue()


def stand_in_corpus(path: Path, groups: int | None) -> tuple[Path, Path]:
    """(the release folder to import, the stand-in corpus) for the first ``groups`` query groups."""
    seed = {}
    for line in (RELEASE / "msmarco-seed" / "corpus.jsonl").read_text().splitlines():
        r = json.loads(line)
        seed[r["_id"]] = r["text"]
    rows = [r.split("\t") for r in (RELEASE / "qrels" / "test.tsv").read_text().splitlines()[1:]]
    path.mkdir(parents=True, exist_ok=True)
    folder = RELEASE
    if groups is not None:  # a smaller release: the first groups' instances, queries and qrels
        keep = list(dict.fromkeys(r[0].rsplit("_", 1)[0] for r in rows))[:groups]
        folder = path / "release"
        (folder / "qrels").mkdir(parents=True)
        lines = (RELEASE / "only_instruction_queries.jsonl").read_text().splitlines()
        (folder / "only_instruction_queries.jsonl").write_text(
            "".join(x + "\n" for x in lines if json.loads(x)["_id"].rsplit("_", 1)[0] in keep))
        lines = (RELEASE / "only_queries.jsonl").read_text().splitlines()
        (folder / "only_queries.jsonl").write_text("".join(x + "\n" for x in lines if json.loads(x)["_id"] in keep))
        rows = [r for r in rows if r[0].rsplit("_", 1)[0] in keep]
        (folder / "qrels" / "test.tsv").write_text("qid\tpid\tscore\n" + "".join("\t".join(r) + "\n" for r in rows))
    instruction = {}
    for line in (RELEASE / "only_instruction_queries.jsonl").read_text().splitlines():
        r = json.loads(line)
        instruction[r["_id"]] = r["text"]
    # a revised passage fits its instance's instruction: the seed passage followed by that instruction
    targets = [(r[1], f"{seed[r[1].rsplit('_', 1)[0]]} {instruction[r[0]]}") for r in rows]
    used = {t.rsplit("_", 1)[0] for t, _ in targets}
    distractors = [d for d in seed if d not in used][:500]
    corpus = path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"_id": t, "title": "", "text": text}) + "\n" for t, text in targets)
                      + "".join(json.dumps({"_id": d, "title": "", "text": seed[d]}) + "\n" for d in distractors))
    return folder, corpus


def figures(summary: dict) -> dict[str, float]:
    """The headline figures of one ``eval run --json``, InfoSearch's Table 2 means flattened."""
    out = {k: v for k, v in summary["metrics"].items() if v is not None}
    t2 = summary.get("infosearch_table2")
    if t2:
        for m in ("nDCG@10", "Robustness@10"):
            for mode in ("original", "instructed", "reversed"):
                if t2["mean"][m].get(mode) is not None:
                    out[f"{m} {mode[:3]} (Table 2)"] = t2["mean"][m][mode]
    return out


def compare(db: Path, project: str, model: str, label: str, cache: Path, *extra) -> list[tuple]:
    runs = {}
    for protocol, more in (("mteb", ()), ("paper", ()), ("paper", ("--wise-version", "evaluator"))):
        if more and "WISE" not in json.dumps(runs.get("paper", {})):
            continue
        started = time.perf_counter()
        summary = json.loads(quiet("eval", "run", "--db", db, "--project", project, "--model", model, "--protocol",
                                   protocol, "--cache-dir", cache, "--json", *extra, *more))
        runs[protocol + ("+evaluator" if more else "")] = figures(summary) | {"_s": time.perf_counter() - started}
    rows = []
    for name, value in runs["mteb"].items():
        if name == "_s":
            continue
        paper_name = name.replace("(ties='run-order')", "")
        paper = next((v for k, v in runs["paper"].items() if k.replace("(ties='run-order')", "") == paper_name
                      or k == name), None)
        if paper is None:
            paper_key = [k for k in runs["paper"] if k.split("(")[0] == name.split("(")[0] and "qrels" not in k]
            paper = runs["paper"][paper_key[0]] if paper_key else None
        rows.append((label, model, name, value, paper))
    if "paper+evaluator" in runs:
        for k, v in runs["paper+evaluator"].items():
            if k.startswith("WISE(") and "qrels" not in k:
                rows.append((label, model, f"{k} (paper protocol)", runs["paper"].get("WISE(ties='run-order')"), v))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-minilm", action="store_true", help="BM25 only (minutes less)")
    args = parser.parse_args()
    models = ["bm25"] + ([] if args.no_minilm else ["minilm"])
    print(f"load before: {os.getloadavg()[0]:.2f}", flush=True)
    rows: list[tuple] = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cache = tmp / "emb"
        db = tmp / "p.db"
        release, corpus = stand_in_corpus(tmp / "all", None)
        quiet("import", "--db", db, "--project", "instructir", release)
        quiet("import", "--db", db, "--project", "instructir", "--add", "corpus", corpus)
        rows += compare(db, "instructir", "bm25", "InstructIR (9,906 instances, stand-in corpus)", cache, "--k", "10")
        if not args.no_minilm:
            release, corpus = stand_in_corpus(tmp / "small", 40)
            quiet("import", "--db", db, "--project", "instructir-40", release)
            quiet("import", "--db", db, "--project", "instructir-40", "--add", "corpus", corpus)
            rows += compare(db, "instructir-40", "minilm", "InstructIR (40 groups, stand-in corpus)", cache, "--k", "10")
        for project, folder, label in (("followir", FIXTURES / "followir_hub", "FollowIR (hub v1 fixture, 3 queries)"),
                                       ("ifir", FIXTURES / "ifir", "IFIR (fiqa + nfcorpus fixture)"),
                                       ("infosearch", FIXTURES / "infosearch", "InfoSearch (Language fixture)")):
            quiet("import", "--db", db, "--project", project, folder)
            for model in models:
                rows += compare(db, project, model, label, cache)
    print(f"load after: {os.getloadavg()[0]:.2f}")
    print("dataset | model | measure | mteb | paper | paper - mteb")
    for label, model, name, a, b in rows:
        diff = "" if a is None or b is None else f"{b - a:+.4f}"
        fa = "—" if a is None else f"{a:.4f}"
        fb = "—" if b is None else f"{b:.4f}"
        print(f"{label} | {model} | {name} | {fa} | {fb} | {diff}")


if __name__ == "__main__":
    main()
