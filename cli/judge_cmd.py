"""``ifjudge judge``: run an automatic judge over a project's items and measure it against the
humans (docs/judges.md).

- ``judge run``: the items of a question, the estimate of what will be sent (tokens and cost,
  printed before anything is sent), then a job for ``ifjudge worker`` (or ``--foreground``);
  the same command again resumes the run;
- ``judge runs`` / ``judge show``: the runs and one run's provenance, progress and tokens (the
  estimate, IFJudge's count of what was sent, the server's usage);
- ``judge threshold``: a local judge's threshold chosen on a study's human outcomes;
- ``judge agreement``: the judge against a study's human outcomes (the Monitor's judge section);
- ``judge export``: the answers with their provenance (CSV for ``ifjudge report --judge``, JSONL);
- ``judge prompts`` / ``judge prompt-save``: prompt versions (built-in and a lead's own);
- ``judge settings``: the default endpoint and model of ``judge run``.

The key of a chat endpoint is read from the environment only (``--api-key-env``, default
``OPENAI_API_KEY``), never from the command line or the database. Heavy imports (``openai``,
torch) happen inside the handlers.
"""
from __future__ import annotations

import argparse
import getpass
import json
import sys

from cli.options import add_db, add_json, add_project
from storage.errors import IFJudgeError

QUESTIONS = ("validity", "naturalness", "best_passage", "passage_match", "instfol_match", "condition", "relevance")


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def register(sub) -> None:
    p = sub.add_parser("judge", help="run an automatic judge over a project's items, apart from the human labels",
                       description="Automatic judges (an OpenAI-compatible chat endpoint, or a local "
                                   "sentence-transformers model) and their measure against the humans.")
    judge_sub = p.add_subparsers(dest="judge_command", metavar="JUDGE_COMMAND", required=True)
    _register_run(judge_sub)
    r = judge_sub.add_parser("runs", help="list judge runs")
    add_db(r)
    add_project(r, required=False, help="only this project's runs")
    add_json(r)
    r.set_defaults(func=runs_cmd)
    s = judge_sub.add_parser("show", help="one judge run: provenance, items, tokens sent")
    add_db(s)
    s.add_argument("--run", type=int, required=True, metavar="ID")
    add_json(s)
    s.set_defaults(func=show_cmd)
    _register_measures(judge_sub)
    _register_prompts(judge_sub)


def _register_run(judge_sub) -> None:
    r = judge_sub.add_parser("run", help="judge every item of a question (estimate first, then a job)")
    add_db(r)
    add_project(r)
    r.add_argument("--question", required=True, choices=QUESTIONS)
    r.add_argument("--judge", default="chat", choices=("chat", "biencoder", "crossencoder"),
                   help="chat: an OpenAI-compatible endpoint (default); biencoder / crossencoder: a local model")
    r.add_argument("--judge-url", metavar="URL", help="base URL of the chat endpoint, e.g. http://localhost:8000/v1 "
                                                      "(default: the setting judge.base_url)")
    r.add_argument("--judge-model", metavar="NAME", help="the model to ask (chat; default: the setting judge.model), "
                                                         "or the local model (minilm or a folder)")
    r.add_argument("--api-key-env", default="OPENAI_API_KEY", metavar="VAR",
                   help="environment variable holding the key (default OPENAI_API_KEY; a local server needs none)")
    r.add_argument("--scale", help="answer scale: naturalness yesno|likert, relevance binary|graded")
    r.add_argument("--prompt", metavar="VERSION", help="prompt version (default: the question's first built-in; "
                                                       "see `ifjudge judge prompts`)")
    r.add_argument("--temperature", type=float, default=0.0)
    r.add_argument("--top-p", type=float, help="nucleus sampling (default: the prompt's; IFIR's INSTFOL 0.7)")
    r.add_argument("--max-tokens", type=_positive_int, help="answer token limit (default: the question's)")
    r.add_argument("--no-logprobs", action="store_true", help="do not ask for log-probabilities (no score)")
    r.add_argument("--top-logprobs", type=int, default=10, help="alternatives per token (default 10, as IFIR)")
    r.add_argument("--structured", default="json_schema", choices=("json_schema", "json_object", "none"),
                   help="how the answer is constrained (default json_schema)")
    r.add_argument("--seed", type=int, help="the server's sampling seed, where it takes one")
    r.add_argument("--concurrency", type=_positive_int, default=4, help="requests in flight (default 4)")
    r.add_argument("--timeout", type=float, default=60.0, help="seconds per request (default 60)")
    r.add_argument("--retries", type=int, default=8,
                   help="retries with backoff (0.5 s doubling to 8 s) on 429 / 5xx / time-outs (default 8)")
    r.add_argument("--token-rule", default="words", metavar="RULE",
                   help="how tokens are counted: words (default) or hf:DIR (a local tokenizer with a chat template)")
    r.add_argument("--price-in", type=float, metavar="USD", help="price per million prompt tokens (for the cost)")
    r.add_argument("--price-out", type=float, metavar="USD", help="price per million answer tokens (for the cost)")
    r.add_argument("--passages", type=int, default=3, help="best_passage: candidates per instance (default 3)")
    r.add_argument("--item-seed", type=int, default=0, help="best_passage: seed of the distractors (default 0)")
    r.add_argument("--bare-run", metavar="FILE", help="instfol_match: TREC run of the bare queries")
    r.add_argument("--instructed-run", metavar="FILE", help="instfol_match: TREC run of the instructed queries")
    r.add_argument("--top-k", type=_positive_int, default=10, help="instfol_match: passages per run (default 10)")
    r.add_argument("--from-study", type=int, metavar="ID", help="judge only this study's items of the question")
    r.add_argument("--retry-errors", action="store_true", help="judge again the items without a readable answer")
    r.add_argument("--estimate-only", action="store_true", help="print the estimate and send nothing")
    r.add_argument("--foreground", action="store_true", help="run here (progress on stderr) instead of as a job")
    r.add_argument("--created-by", default=None, help="who starts it (default: the system user)")
    add_json(r)
    r.set_defaults(func=run_cmd)


def _register_measures(judge_sub) -> None:
    t = judge_sub.add_parser("threshold", help="choose a local judge's threshold on a study's human outcomes")
    add_db(t)
    t.add_argument("--run", type=int, required=True, metavar="ID")
    t.add_argument("--study", type=int, required=True, metavar="ID")
    add_json(t)
    t.set_defaults(func=threshold_cmd)
    a = judge_sub.add_parser("agreement", help="a judge run against a study's human outcomes")
    add_db(a)
    a.add_argument("--study", type=int, required=True, metavar="ID")
    a.add_argument("--run", type=int, metavar="ID", help="the judge run (default: the newest of each question)")
    a.add_argument("--bootstrap", type=int, default=200, metavar="N", help="replicates of the interval (default 200)")
    add_json(a)
    a.set_defaults(func=agreement_cmd)
    e = judge_sub.add_parser("export", help="a run's answers with their provenance (.csv or .jsonl)")
    add_db(e)
    e.add_argument("--run", type=int, required=True, metavar="ID")
    e.add_argument("--out", required=True, metavar="FILE")
    e.set_defaults(func=export_cmd)


def _register_prompts(judge_sub) -> None:
    pr = judge_sub.add_parser("prompts", help="prompt versions of a question (built-in and a lead's own)")
    add_db(pr)
    pr.add_argument("--question", choices=QUESTIONS)
    pr.add_argument("--show", metavar="VERSION", help="print this version's text")
    add_json(pr)
    pr.set_defaults(func=prompts_cmd)
    ps = judge_sub.add_parser("prompt-save", help="store a lead's prompt version (never changed afterwards)")
    add_db(ps)
    ps.add_argument("--question", required=True, choices=QUESTIONS)
    ps.add_argument("--version", required=True)
    ps.add_argument("--user-file", required=True, metavar="FILE", help="the user message template ({{field}})")
    ps.add_argument("--system-file", metavar="FILE", help="the system message (default: none)")
    ps.add_argument("--lead", required=True, help="the lead who wrote it")
    ps.add_argument("--note", default="")
    ps.set_defaults(func=prompt_save_cmd)
    st = judge_sub.add_parser("settings", help="the default endpoint and model of `judge run`")
    add_db(st)
    st.add_argument("--judge-url", metavar="URL")
    st.add_argument("--judge-model", metavar="NAME")
    add_json(st)
    st.set_defaults(func=settings_cmd)


# --------------------------------------------------------------------------- handlers


def _spec(args, db):
    from annotation.judges.runs import judge_settings
    from evaluation.judges.chat import ChatConfig
    from evaluation.judges.runs import JudgeSpec

    if args.judge != "chat":
        return JudgeSpec(args.question, judge=args.judge, model=args.judge_model or "minilm", scale=args.scale,
                         extra=_run_sources(args))
    saved = judge_settings(db)
    url, model = args.judge_url or saved["base_url"], args.judge_model or saved["model"]
    if not url or not model:
        raise IFJudgeError("a chat judge needs --judge-url and --judge-model (or `ifjudge judge settings` to keep them)")
    cfg = ChatConfig(url, model, temperature=args.temperature, top_p=args.top_p, max_tokens=args.max_tokens,
                     logprobs=not args.no_logprobs, top_logprobs=args.top_logprobs, structured=args.structured,
                     seed=args.seed, concurrency=args.concurrency, timeout=args.timeout, retries=args.retries,
                     api_key_env=args.api_key_env)
    return JudgeSpec(args.question, chat=cfg, scale=args.scale, prompt_version=args.prompt, token_rule=args.token_rule,
                     extra=_run_sources(args))


def _run_sources(args) -> dict:
    """instfol_match: the two run files (name and SHA-256), part of what defines the run."""
    if args.question != "instfol_match" or not (args.bare_run and args.instructed_run):
        return {}
    import hashlib
    from pathlib import Path

    return {"runs": {mode: {"file": str(Path(f).resolve()), "sha256": hashlib.sha256(Path(f).read_bytes()).hexdigest()}
                     for mode, f in (("query", args.bare_run), ("instructed", args.instructed_run))}}


def _runs(args):
    if args.question != "instfol_match":
        if args.bare_run or args.instructed_run:
            raise IFJudgeError("--bare-run/--instructed-run go with --question instfol_match")
        return None
    if args.from_study is not None:
        return None
    if not (args.bare_run and args.instructed_run):
        raise IFJudgeError("instfol_match judges the passages of two runs: give --bare-run FILE and --instructed-run FILE"
                           " (or --from-study ID, an INSTFOL study)")
    from formats import trec_io

    return trec_io.read_run(args.bare_run), trec_io.read_run(args.instructed_run)


def _estimate_lines(est: dict) -> list[str]:
    if est.get("note"):
        return [f"estimate: {est['requests']} item(s) to score locally ({est['note']})"]
    cost = "" if est["cost"] is None else f"; cost at most ${est['cost']:.4f}"
    return [f"estimate: {est['requests']} request(s) ({est['already_judged']} of {est['items']} items judged before, "
            f"not sent again): {est['prompt_tokens']:,} prompt tokens, at most {est['max_completion_tokens']:,} answer "
            f"tokens{cost}", f"  tokens counted by {est['rule_description']}"]


def run_cmd(args) -> int:
    from annotation.judges.runs import prepare_run
    from storage import projects
    from storage.db import connect

    db = connect(args.db)
    who = args.created_by or f"cli:{getpass.getuser()}"
    spec, runs = _spec(args, db), _runs(args)
    prepared = prepare_run(db, projects.get_project(db, args.project), spec, created_by=who, passages=args.passages,
                           seed=args.item_seed, runs=runs, top_k=args.top_k, from_study=args.from_study,
                           retry_errors=args.retry_errors, price_in=args.price_in, price_out=args.price_out)
    run, est = prepared["run"], prepared["estimate"]
    out = {"run_id": run["id"], "created": prepared["created"], "items_added": prepared["items_added"],
           "estimate": est, "notes": prepared["notes"]}
    if not args.json:
        print(f"judge run {run['id']} ({'new' if prepared['created'] else 'resumed'}): {run['question']} by "
              f"{run['judge']} {run['model']}" + (f", prompt {run['prompt_version']} ({run['prompt_hash']})"
                                                  if run["prompt_version"] else ""))
        print("\n".join(_estimate_lines(est)))
        for note in prepared["notes"]:
            print(f"  note: {note}", file=sys.stderr)
    sending = {"concurrency": args.concurrency, "timeout": args.timeout, "retries": args.retries,
               "api_key_env": args.api_key_env}
    if args.estimate_only or not est["requests"]:
        out["job"] = None
    elif args.foreground:
        out["result"] = _foreground(db, run["id"], sending, quiet=args.json)
    else:
        from evaluation.judges.jobs import submit_judge

        job, created = submit_judge(db, run["id"], created_by=who, sending=sending, estimate=est)
        out["job"] = {"id": job["id"], "created": created, "state": job["state"]}
        if not args.json:
            print(f"job {job['id']} {'queued' if created else 'already ' + job['state']}: `ifjudge worker --db ...` runs "
                  f"it; `ifjudge jobs` shows progress and ETA, `ifjudge jobs cancel {job['id']}` stops it")
    if args.json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
    return 0


def _foreground(db, run_id: int, sending: dict, *, quiet: bool) -> dict:
    from evaluation.judges.runs import run_judge

    def progress(done, total, message):
        if not quiet and (done == total or done % 50 == 0):
            print(f"{message}: {done}/{total}", file=sys.stderr, flush=True)

    result = run_judge(db, run_id, sending=sending, progress=progress)
    if not quiet:
        print(f"judged {result['judged']} item(s), {result['errors']} without a readable answer, "
              f"{result['retries']} retries; sent {result['counted_tokens']:,} tokens by the rule"
              + (f", the server counted {result['prompt_tokens']:,} prompt tokens" if result["prompt_tokens"] else ""))
    return result


def runs_cmd(args) -> int:
    from storage import judge_labels, projects
    from storage.db import connect

    db = connect(args.db)
    pid = projects.get_project(db, args.project)["id"] if args.project else None
    rows = [{"id": r["id"], "project_id": r["project_id"], "question": r["question"], "judge": r["judge"],
             "model": r["model"], "base_url": r["base_url"], "prompt_version": r["prompt_version"],
             "prompt_hash": r["prompt_hash"], "items": judge_labels.item_count(db, r["id"]), "labels": r["labels"],
             "answers": r["answers"], "errors": r["errors"], "created_by": r["created_by"], "created_at": r["created_at"]}
            for r in judge_labels.list_runs(db, pid)]
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
    elif not rows:
        print("no judge run")
    for r in rows if not args.json else []:
        waiting = r["labels"] - r["answers"] - r["errors"]  # a local judge's scores before its threshold
        print(f"run {r['id']:<4} {r['question']:<14} {r['judge']} {r['model']}  {r['labels']}/{r['items']} judged"
              + (f", {r['errors']} without an answer" if r["errors"] else "")
              + (f", {waiting} scored, waiting for `ifjudge judge threshold`" if waiting else "") + f"  ({r['created_at']})")
    return 0


def show_cmd(args) -> int:
    from annotation.judges.agreement import provenance
    from evaluation.judges.runs import estimate
    from storage import judge_labels
    from storage.db import connect

    db = connect(args.db)
    run = judge_labels.get_run(db, args.run)
    sent = judge_labels.token_totals(db, args.run)
    out = {"run": provenance(run), "question": run["question"], "parameters": run["parameters"],
           "prompt": run["prompt"], "items": judge_labels.item_count(db, args.run), "sent": sent,
           "pending": estimate(db, run)}
    if args.json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return 0
    print(f"judge run {run['id']}: {run['question']} by {run['judge']} {run['model']}"
          + (f" at {run['base_url']}" if run["base_url"] else "")
          + (f", prompt {run['prompt_version']} ({run['prompt_hash']})" if run["prompt_version"] else ""))
    print(f"items: {out['items']}, answered {sent['requests']}, pending {out['pending']['requests']}")
    if run["judge"] == "chat":
        usage = ("the server returned no usage" if not sent["with_usage"] else
                 f"the server counted {sent['prompt_tokens']:,} prompt and {sent['completion_tokens']:,} answer tokens")
        print(f"sent: {sent['counted_tokens'] or 0:,} prompt tokens by the rule ({run['parameters']['token_rule']}), "
              f"{sent['retries']} retries (each resent the same tokens); {usage}")
    return 0


def threshold_cmd(args) -> int:
    from annotation.judges.runs import fit_threshold
    from storage.db import connect

    fit = fit_threshold(connect(args.db), args.run, args.study)
    if args.json:
        print(json.dumps(fit, indent=2))
    else:
        print(f"threshold {fit['threshold']:.4f} (Cohen kappa {fit['kappa'] if fit['kappa'] is None else round(fit['kappa'], 4)}"
              f" on {fit['n']} items of study {args.study}); {fit['values']} items now answered "
              f"{' / '.join(fit['categories'])}")
    return 0


def agreement_cmd(args) -> int:
    from annotation.judges.agreement import judge_report, runs_for_study
    from cli.output import fmt_value
    from storage.db import connect

    db = connect(args.db)
    if args.bootstrap < 0:
        raise IFJudgeError(f"--bootstrap must be >= 0, got {args.bootstrap}")
    run_ids = [args.run] if args.run is not None else list(
        {r["question"]: r["id"] for r in reversed(runs_for_study(db, args.study))}.values())
    if not run_ids:
        raise IFJudgeError(f"no judge run answers a question of study {args.study}")
    reports = [judge_report(db, args.study, rid, n_boot=args.bootstrap) for rid in run_ids]
    if args.json:
        print(json.dumps(reports, indent=2, ensure_ascii=False))
        return 0
    for rep in reports:
        print(f"{rep['question']}: judge run {rep['run']['id']} ({rep['run']['judge']} {rep['run']['model']})")
        for row in [rep["overall"], *rep["domains"]]:
            ci = "" if row["kappa_low"] is None else f" [{fmt_value(row['kappa_low'], digits=3)}, {fmt_value(row['kappa_high'], digits=3)}]"
            why = f" ({row['undefined']})" if row["undefined"] else ""
            print(f"  {row['domain']:<12} items {row['n_items']:<5} kappa {fmt_value(row['kappa'], digits=3)}{ci}{why}"
                  f"  agreement {fmt_value(row['agreement'], digits=3)}")
        print(f"  disagreements: {len(rep['disagreements'])}; undecided by the humans: {rep['undecided']}; "
              f"not answered by the judge: {rep['unjudged']}")
        for note in rep["notes"]:
            print(f"  note: {note}")
    return 0


def export_cmd(args) -> int:
    from exports.judge_labels import write_judge_labels
    from storage.db import connect

    done = write_judge_labels(connect(args.db), args.run, args.out)
    print(f"{done['rows']} answers written to {done['path']}")
    return 0


def prompts_cmd(args) -> int:
    from evaluation.judges.questions import JUDGE_QUESTIONS
    from storage import judge_labels
    from storage.db import connect

    db = connect(args.db)
    rows = []
    for qid, q in JUDGE_QUESTIONS.items():
        if args.question and qid != args.question:
            continue
        rows += [{**p.as_dict(), "built_in": True, "author": "IFJudge"} for p in q.prompts]
        rows += [{"question": p["question"], "version": p["version"], "system": p["system"], "user": p["user_template"],
                  "source": p["source"], "hash": p["hash"], "built_in": False, "author": p["author"]}
                 for p in judge_labels.stored_prompts(db, qid)]
    if args.show:
        rows = [r for r in rows if r["version"] == args.show]
        if not rows:
            raise IFJudgeError(f"no prompt version {args.show!r}")
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
    elif args.show:
        print(f"[system]\n{rows[0]['system']}\n\n[user]\n{rows[0]['user']}")
    else:
        for r in rows:
            print(f"{r['question']:<14} {r['version']:<24} {r['hash']}  {'built-in' if r['built_in'] else r['author']}: "
                  f"{r['source']}")
    return 0


def prompt_save_cmd(args) -> int:
    from pathlib import Path

    from evaluation.judges.runs import save_prompt
    from storage.db import connect

    user = Path(args.user_file).read_text(encoding="utf-8")
    system = Path(args.system_file).read_text(encoding="utf-8") if args.system_file else ""
    saved = save_prompt(connect(args.db), question=args.question, version=args.version, system=system, user=user,
                        author=args.lead, note=args.note)
    print(f"prompt {saved['question']} {saved['version']} stored ({saved['hash']})")
    return 0


def settings_cmd(args) -> int:
    from annotation.judges.runs import save_judge_settings
    from storage.db import connect

    values = save_judge_settings(connect(args.db), base_url=args.judge_url, model=args.judge_model)
    print(json.dumps(values) if args.json else f"judge endpoint {values['base_url'] or '(not set)'}, model "
          f"{values['model'] or '(not set)'}")
    return 0


def instfol_judged(args) -> int:
    """``ifjudge eval instfol --judge-run ID [--check-study ID]``: INSTFOL with a stored judge run."""
    from annotation.judges.instfol import instfol_from_judge
    from cli.output import fmt_value
    from evaluation.undefined import json_null
    from storage.db import connect

    if not args.db:
        raise IFJudgeError("--judge-run needs --db PATH")
    result = instfol_from_judge(connect(args.db), args.judge_run, check_study=args.check_study, k=args.k)
    if args.json:
        print(json.dumps(result, indent=2, default=json_null))
        return 0
    print(f"INSTFOL  {fmt_value(result['INSTFOL'])}  ({result['n_queries']} queries, judge run {args.judge_run}: "
          f"{result['judge']}, {result['scores']}, max 3" + (f", top {result['k']}" if result["k"] else "") + ")")
    if result["left_out"]:
        print(f"left out (a mode has no scored passage): {len(result['left_out'])} instance(s)")
    if "check" in result:
        c, m = result["check"], result["check"]["same_passages"]
        a = m["agreement"]
        print(f"check, study {c['study_id']}: human INSTFOL {fmt_value(c['human_INSTFOL'])} ({c['human_n_queries']} "
              f"queries); on the same {m['passages']} passages: judge {fmt_value(m['INSTFOL'])}, humans "
              f"{fmt_value(m['human_INSTFOL'])}; Cohen kappa linear {fmt_value(a['cohen_kappa_linear'])}, "
              f"exact {fmt_value(a['exact'])}")
    return 0
