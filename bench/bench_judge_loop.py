"""The judge loop on a 2,000-instance project: a judge with a known bias served on loopback
(tests/fake_openai.py: the OpenAI chat-completions protocol, a 429 on every 40th request, a fixed
latency per answer), run as a job of ``ifjudge worker``, the worker SIGKILLed mid-run and a second
worker finishing the job; then the Monitor's judge-vs-human kappa on a study of the project.

Prints, each beside what it is compared with:

* requests the server received, answered (200) and refused (429); items answered twice (only the
  answers in flight at the kill may be: at most the concurrency);
* the token estimate printed before the run vs IFJudge's count of what was sent (equal) vs the
  server's usage (its own rule);
* throughput (items per second, the second worker alone) vs the ceiling concurrency / latency;
* the Monitor's kappa (``annotation.judges.agreement.judge_report``) vs scikit-learn's
  ``cohen_kappa_score`` on the same pairs (equal), and the human agreement table before / after
  the judge labels were stored (unchanged).

Run: ``HF_HUB_OFFLINE=1 .venv/bin/python bench/bench_judge_loop.py [--instances 2000] [--concurrency 8]
[--latency 0.02]``. Nothing leaves the machine (the server binds 127.0.0.1).
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def build(path: Path, n_instances: int):
    """Project "p" (groups of 4 instances) and a validity study of 8% of the groups, 3 annotators,
    who answer the truth (an instruction is valid unless its number is divisible by 7), one of
    them wrong on every 5th screen."""
    from annotation import workspace
    from annotation.studies import StudySettings, create_study
    from storage.projects import get_project
    from storage.db import connect
    from storage.users import get_user
    from tests.builders import make_project

    db = connect(path)
    make_project(db, n_groups=n_instances // 4, per_group=4)
    sid = create_study(db, project=get_project(db, "p"), questions=["validity"], annotators=["a0", "a1", "a2"],
                       settings=StudySettings(group_fraction=0.08, per_group=2, overlap=3, seed=3))["study_id"]
    for k, name in enumerate(("a0", "a1", "a2")):
        user = get_user(db, name)
        n = 0
        while (screen := workspace.open_screen(db, sid, user)) is not None:
            truth = truth_of(screen.instance_id)
            value = ("No" if truth == "Yes" else "Yes") if (k == 2 and n % 5 == 0) else truth
            workspace.submit_screen(db, screen, user, {"validity": {"value": value, "reason": "r"}}, started_at=None)
            n += 1
    return db, sid


def truth_of(instance_id: str) -> str:
    g, j = instance_id[1:].split("_")
    return "No" if (int(g) * 4 + int(j)) % 7 == 0 else "Yes"


def biased_answer(body):
    """The judge: the truth, except that it says No for every instance whose group number ends in 3."""
    import re

    from tests.fake_openai import json_answer

    text = body["messages"][-1]["content"]
    g, j = re.search(r"instruction (\d+)\.(\d+)", text).groups()
    iid = f"g{g}_{j}"
    answer = "No" if g.endswith("3") else truth_of(iid)
    return json_answer(answer, {answer: 0.8, ("No" if answer == "Yes" else "Yes"): 0.2})


def worker(path: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.Popen([sys.executable, "-m", "cli", "worker", "--db", str(path), "--poll", "0.2", "--heartbeat",
                             "0.5", "--stale", "3", "--nice", "0"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--instances", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--latency", type=float, default=0.02)
    args = ap.parse_args()
    from sklearn.metrics import cohen_kappa_score

    from annotation.monitoring import monitor
    from annotation.judges.agreement import judge_report, paired_items
    from annotation.judges.runs import prepare_run
    from storage.projects import get_project
    from evaluation.judges.chat import ChatConfig
    from evaluation.judges.jobs import submit_judge
    from evaluation.judges.runs import JudgeSpec
    from storage import jobs, judge_labels
    from tests.fake_openai import FakeOpenAI

    print(f"load before: {os.getloadavg()[0]:.2f}")
    path = Path(tempfile.mkdtemp()) / "bench.db"
    db, sid = build(path, args.instances)
    table7_before = monitor.table7(db, sid, n_boot=0, seed=0)

    def answer(body):
        time.sleep(args.latency)
        return biased_answer(body)

    def key(body):
        import re
        return re.search(r"instruction (\d+\.\d+)", body["messages"][-1]["content"]).group(1)

    with FakeOpenAI(answer, key=key, inject=lambda n, body: 429 if n % 40 == 0 else None) as server:
        cfg = ChatConfig(server.base_url, "biased-judge", concurrency=args.concurrency)
        prepared = prepare_run(db, get_project(db, "p"), JudgeSpec("validity", chat=cfg), created_by="bench")
        run_id, est = prepared["run"]["id"], prepared["estimate"]
        job, _ = submit_judge(db, run_id, created_by="bench", sending={"concurrency": args.concurrency})
        first = worker(path)
        while len(judge_labels.judged_keys(db, run_id)) < args.instances * 0.4:
            time.sleep(0.05)
        killed = jobs.get_job(db, job["id"])["worker_id"]
        first.send_signal(signal.SIGKILL)
        first.wait()
        at_kill = len(judge_labels.judged_keys(db, run_id))
        second = worker(path)
        while jobs.get_job(db, job["id"])["worker_id"] in (killed, None):  # until the second worker has it
            time.sleep(0.02)
        t0, start_labels = time.time(), len(judge_labels.judged_keys(db, run_id))
        while jobs.get_job(db, job["id"])["state"] not in ("finished", "failed", "cancelled"):
            time.sleep(0.05)
        seconds = time.time() - t0
        second.send_signal(signal.SIGTERM)
        second.wait()
    end = jobs.get_job(db, job["id"])
    totals = judge_labels.token_totals(db, run_id)
    twice = sum(1 for n in server.answered.values() if n > 1)
    print(f"job: {end['state']} after {end['attempts']} attempts; labels {totals['requests']} of {args.instances}; "
          f"killed at {at_kill} stored")
    print(f"server: {server.requests} requests, {sum(server.answered.values())} answered, {server.failures[429]} "
          f"refused with 429 (retried: {totals['retries']} retries stored); items answered twice: {twice} "
          f"(compare: at most the concurrency, {args.concurrency})")
    print(f"tokens: estimate {est['prompt_tokens']:,} vs counted as sent {totals['counted_tokens']:,} "
          f"({'equal' if est['prompt_tokens'] == totals['counted_tokens'] else 'DIFFERENT'}); server usage "
          f"{totals['prompt_tokens']:,} (its whitespace rule)")
    done = totals["requests"] - start_labels
    print(f"throughput (second worker): {done / seconds:.1f} items/s vs ceiling {args.concurrency / args.latency:.0f} "
          f"items/s (concurrency / latency)")
    rep = judge_report(db, sid, run_id, n_boot=200, seed=0)
    rows = [r for r in paired_items(db, sid, judge_labels.get_run(db, run_id))["rows"] if r["human"] and r["judge"]]
    hand = cohen_kappa_score([r["human"] for r in rows], [r["judge"] for r in rows], labels=["Yes", "No"])
    print(f"monitor kappa {rep['overall']['kappa']:.6f} [{rep['overall']['kappa_low']:.3f}, "
          f"{rep['overall']['kappa_high']:.3f}] on {rep['overall']['n_items']} items vs scikit-learn {hand:.6f}")
    print(f"human agreement table unchanged by the judge labels: {monitor.table7(db, sid, n_boot=0, seed=0) == table7_before}")
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
