"""Write the bytes of every user-visible output of the demo to a folder, to diff two trees.

Builds the demo (``ifjudge demo``), labels its study deterministically, stores the validated
qrels (``ifjudge validate``), runs ``eval run`` with BM25 (two templates: two systems) on the published
and the validated qrels, imports the published-layout fixtures of the tests (InfoSearch, IFIR, FollowIR),
writes every export format, ``eval compare --json`` and the stored evaluations, and saves each
output under OUT. Run it on two trees and diff the folders::

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python bench/snapshot_outputs.py /tmp/snap-base
    (change the code)
    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python bench/snapshot_outputs.py /tmp/snap-new
    diff -r /tmp/snap-base /tmp/snap-new && echo identical

What legitimately differs between two runs is normalised here, explicitly: timestamps
(``created_at``, ``exported_at``, ``generated_at``, ``built_at``, ``started_at``, ``finished_at``),
the temporary paths of the database and the output folders, the repository's own folder (input
paths in manifests), and run times in seconds (``retrieval_seconds`` and the like).
Prints the number of files written and their total size.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FORMATS = ("trec", "beir", "followir", "infosearch", "mteb", "ifir", "jsonl", "report")
VOLATILE_KEYS = {"created_at", "exported_at", "generated_at", "built_at", "started_at", "finished_at",
                 "seconds", "retrieval_seconds", "encode_seconds", "elapsed", "elapsed_s", "duration", "duration_s", "time_s"}
# bench fixtures of the published layouts: (project, kind, path)
BENCH_FIXTURES = (("infosearch", "infosearch", "tests/fixtures/published/infosearch/Language-v1"),
                  ("ifir", "ifir", "tests/fixtures/published/ifir/fiqa"),
                  ("followir", "followir", "tests/fixtures/published/followir_hub"))
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)?")


def cli(*args: str, refusal_ok: bool = False) -> str:
    """Run ``ifjudge ARGS`` in a subprocess; return stdout.

    A non-zero exit stops the snapshot, unless REFUSAL_OK: then the exit code and the message
    are the output (a layout that refuses a project must keep refusing it, with the same words).
    """
    p = subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, capture_output=True, text=True)
    if p.returncode != 0:
        if refusal_ok:
            return f"exit {p.returncode}\n{p.stdout}{p.stderr}"
        raise SystemExit(f"ifjudge {' '.join(args)} failed ({p.returncode}):\n{p.stderr}")
    return p.stdout


def normalise(text: str, tmp: str) -> str:
    """Replace the temporary folder, the repository's folder and timestamps by placeholders."""
    text = text.replace(tmp, "<TMP>").replace(str(ROOT), "<ROOT>")
    return TIMESTAMP.sub("<TIME>", text)


def scrub(value):
    """Drop the values of volatile keys from parsed JSON (recursively)."""
    if isinstance(value, dict):
        return {k: ("<VOLATILE>" if k in VOLATILE_KEYS else scrub(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


def save(out: Path, name: str, text: str, tmp: str) -> None:
    """Save TEXT (JSON is scrubbed of volatile values first) under OUT/NAME."""
    text = normalise(text, tmp)
    try:
        text = json.dumps(scrub(json.loads(text)), indent=1, sort_keys=False) + "\n"
    except ValueError:
        pass
    path = out / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def save_file(out: Path, name: str, src: Path, tmp: str) -> None:
    """Save the file SRC under OUT/NAME: text normalised as by ``save``, binary (Parquet) as is."""
    data = src.read_bytes()
    try:
        save(out, name, data.decode("utf-8"), tmp)
    except UnicodeDecodeError:
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(data)


def label_demo(db_path: str) -> int:
    """Answer every screen of the demo study for the three annotators, deterministically."""
    from annotation import workspace
    from storage.db import connect

    db = connect(db_path)
    sid = db.execute("SELECT MIN(id) FROM studies").fetchone()[0]
    plan = {"ann1": ("Yes", "Yes", 0), "ann2": ("Yes", "No", 0), "ann3": ("No", "No", 1)}
    for name, (validity, natural, pick) in plan.items():
        row = db.execute("SELECT id, name, role FROM users WHERE name = ?", [name]).fetchone()
        user = {"id": row[0], "name": row[1], "role": row[2]}
        while (s := workspace.open_screen(db, sid, user)) is not None:
            passages = s.items[2].passages
            workspace.submit_screen(db, s, user, {
                "validity": {"value": validity, "reason": "r"}, "naturalness": {"value": natural, "reason": "r"},
                "best_passage": {"value": passages[min(pick, len(passages) - 1)]["doc_id"]},
            }, started_at=time.time() - 1)
    return sid


def stored_evaluations(db_path: str) -> str:
    """The stored eval runs (everything but created_at; the JSON columns parsed), as JSON."""
    from storage.db import connect

    db = connect(db_path)
    cols = ("id", "model", "template", "settings", "qrels_version", "metrics", "per_query", "run")
    rows = db.execute(f"SELECT {', '.join(cols)} FROM eval_runs ORDER BY id").fetchall()
    out = [{c: (json.loads(v) if c in ("settings", "metrics", "per_query", "run") else v) for c, v in zip(cols, r)}
           for r in rows]
    return json.dumps(out, indent=1)


def export_all(out: Path, tmp: str, db: str, project: str, name: str, *options: str) -> None:
    """Every export format of PROJECT (its manifest on stdout and every file written, or its refusal)."""
    for fmt in FORMATS:
        dest = Path(tmp) / name / fmt
        manifest = cli("export", "--db", db, "--project", project, "--format", fmt, "--out", str(dest), *options,
                       "--json", refusal_ok=True)
        save(out, f"{name}/{fmt}/MANIFEST-stdout.json", manifest, tmp)
        for f in sorted(p for p in dest.rglob("*") if p.is_file()):
            save_file(out, f"{name}/{fmt}/{f.relative_to(dest)}", f, tmp)


def snapshot(out: Path) -> None:
    """Build the demo in a temporary folder and write every output under OUT."""
    tmp = tempfile.mkdtemp(prefix="ifj-snap-")
    try:
        db = f"{tmp}/demo.db"
        save(out, "demo.json", cli("demo", "--db", db, "--json"), tmp)
        project = "demo"
        sid = str(label_demo(db))
        save(out, "validate.json", cli("validate", "--db", db, "--study", sid, "--unresolved", "keep-published",
                                       "--allow-incomplete", "--json"), tmp)
        for version in ("original", "validated"):
            save(out, f"eval-bm25-{version}.json", cli("eval", "run", "--db", db, "--project", project, "--model", "bm25",
                                                       "--qrels-version", version, "--json"), tmp)
            # a second system (the bare query), so that the comparison has paired tests and Kendall tau
            save(out, f"eval-bm25-query-{version}.json", cli("eval", "run", "--db", db, "--project", project, "--model",
                                                             "bm25", "--template", "query", "--qrels-version", version,
                                                             "--json"), tmp)
        export_all(out, tmp, db, project, "export", "--study", sid, "--unresolved", "keep-published", "--allow-incomplete")
        dest = Path(tmp) / "export" / "followir-cmd"
        save(out, "export-followir-stdout.txt", cli("export-followir", "--db", db, "--project", project, "--out", str(dest)), tmp)
        for f in sorted(p for p in dest.rglob("*") if p.is_file()):
            save_file(out, f"export-followir/{f.relative_to(dest)}", f, tmp)
        save(out, "compare.json", cli("eval", "compare", "--db", db, "--project", project, "--permutations", "2000", "--json"), tmp)
        save(out, "compare.txt", cli("eval", "compare", "--db", db, "--project", project, "--permutations", "2000"), tmp)
        save(out, "eval_runs.json", stored_evaluations(db), tmp)
        for project, kind, path in BENCH_FIXTURES:
            save(out, f"bench-{project}/import.json", cli("import", "--db", db, "--project", project, "--kind", kind,
                                                          "--json", str(ROOT / path)), tmp)
            export_all(out, tmp, db, project, f"bench-{project}/export")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: bench/snapshot_outputs.py OUT_DIR")
    target = Path(sys.argv[1])
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    snapshot(target)
    files = [p for p in target.rglob("*") if p.is_file()]
    print(f"{len(files)} files, {sum(p.stat().st_size for p in files)} bytes in {target}")
