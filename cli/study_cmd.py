"""``ifjudge study create|list|close|reopen|delete|backup`` and ``ifjudge labels``."""
from __future__ import annotations

import json
import sys

from annotation.questions.own import read_questions
from annotation.studies import StudySettings, create_study, sample_overlap
from formats import trec_io
from annotation.workspace import labels_csv
from storage import eval_runs, projects, studies
from storage.db import connect
from storage.errors import IFJudgeError
from cli.options import add_db, add_json, add_project


def _csv_list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _domain_values(text: str) -> dict[str, float]:
    """``fiqa=0.04,aila=0.1`` -> {"fiqa": 0.04, "aila": 0.1} (an empty name is the groups without a
    domain)."""
    out: dict[str, float] = {}
    for part in (t.strip() for t in text.split(",") if t.strip()):
        name, sep, value = part.partition("=")
        try:
            if not sep:
                raise ValueError
            out[name.strip()] = float(value)
        except ValueError:
            raise IFJudgeError(f"expected DOMAIN=NUMBER pairs separated by commas, got {part!r}") from None
    return out


def register(sub) -> None:
    p = sub.add_parser("study", help="set up and list studies")
    ss = p.add_subparsers(dest="study_command", required=True, metavar="ACTION")
    c = ss.add_parser("create", help="sample instances, create items and assign them")
    add_db(c)
    add_project(c)
    c.add_argument("--questions", type=_csv_list, default=[],
                   help="validity,naturalness,best_passage,passage_match; or instfol_match alone (with the two runs); "
                        "or condition alone (InfoSearch: one Yes/No item per query, mode changed/reversed and "
                        "originally relevant document)")
    c.add_argument("--question-file", metavar="FILE", action="append", default=[],
                   help="your own question(s), declared in a TOML or YAML file (docs/questions.md); asked after "
                        "--questions, stored with the study; repeat for several files")
    c.add_argument("--annotators", required=True, type=_csv_list, help="comma-separated user names")
    c.add_argument("--name")
    c.add_argument("--groups", type=_csv_list, help="restrict the sample to these query groups (condition: query ids)")
    d = StudySettings()
    c.add_argument("--group-fraction", type=float, default=d.group_fraction)
    c.add_argument("--per-group", type=int, default=d.per_group)
    c.add_argument("--overlap", type=int, default=d.overlap)
    c.add_argument("--passages", type=int, default=d.passages)
    c.add_argument("--naturalness", choices=("yesno", "likert"), default=d.naturalness,
                   help="naturalness answered Yes/No (InstructIR) or on the 1-5 scale (likert, IFIR)")
    c.add_argument("--subset-fraction", "--domain-fraction", type=float, default=d.subset_fraction, metavar="F",
                   help="sample this fraction of the query groups of every subset/domain (IFIR: 0.1), at least "
                        "one per domain; replaces --group-fraction")
    c.add_argument("--domain-fractions", metavar="D=F,...",
                   help="one fraction per domain, e.g. fiqa=0.04,aila=0.1,pm=0.25 (every domain of the project; "
                        "at least one group each); the estimates weight each domain by its own rate")
    c.add_argument("--allocation", choices=("proportional", "neyman"),
                   help="sample --group-fraction of all groups, allocated to the domains in proportion to their "
                        "sizes or by Neyman allocation (needs --anticipated-shares)")
    c.add_argument("--anticipated-shares", metavar="D=P,...",
                   help="Neyman allocation: the share of Yes you expect in each domain, e.g. fiqa=0.97,aila=0.8 "
                        "(more groups where answers vary most)")
    c.add_argument("--max-excluded", type=int, default=d.max_excluded, metavar="N",
                   help="passage_match: at most N excluded passages per instance (seeded sample; default all)")
    c.add_argument("--seed", type=int, default=d.seed)
    c.add_argument("--remaining", action="store_true",
                   help="sample only instances (condition: queries) no other study of the project asks these questions about")
    c.add_argument("--check-share", type=float, default=d.check_share, metavar="S",
                   help="share of the screens that are check items with known answers, mixed into the queue and left "
                        "out of every estimate (0 to 0.5; default 0: none)")
    jg = c.add_argument_group("humans where the judge is likely wrong (strata = a judge run's answers)")
    jg.add_argument("--stratify-by-judge", type=int, metavar="RUN",
                    help="draw the groups per judge stratum of this judge run (`ifjudge judge runs`): No, unsure, Yes, "
                         "not judged; by default --group-fraction of the groups by Neyman allocation, more where the "
                         "judge says No; the estimates weight each stratum by its rate")
    jg.add_argument("--judge-rates", metavar="S=F,...", help="the rate of each judge stratum instead, e.g. No=1,Yes=0.05")
    jg.add_argument("--judge-shares", metavar="S=P,...",
                    help="the share of Yes you expect the humans to give in each stratum, e.g. No=0.4,Yes=0.99 "
                         "(default: measured on the project's human outcomes where a stratum has 10, else "
                         "No=0.5, unsure=0.8, Yes=0.99)")
    jg.add_argument("--judge-unsure", metavar="LOW,HIGH",
                    help="an unsure stratum: items the judge answered Yes with a score (probability of Yes) in this band")
    jg.add_argument("--dry-run", action="store_true",
                    help="print the judge-stratified plan and the interval width it buys, create nothing")
    runs = c.add_argument_group("INSTFOL with human judges (--questions instfol_match)")
    runs.add_argument("--bare-run", metavar="FILE", help="TREC run of the bare queries")
    runs.add_argument("--instructed-run", metavar="FILE", help="TREC run of the queries with their instructions")
    runs.add_argument("--bare-run-id", type=int, metavar="ID", help="a stored eval run instead of --bare-run")
    runs.add_argument("--instructed-run-id", type=int, metavar="ID", help="a stored eval run instead of --instructed-run")
    runs.add_argument("--top-k", type=int, default=10, metavar="K", help="passages judged per run and query (default 10)")
    add_json(c)
    c.set_defaults(func=run_create)
    ls = ss.add_parser("list", help="list studies")
    add_db(ls)
    add_project(ls, required=False, help="only this project's studies")
    add_json(ls)
    ls.set_defaults(func=run_list)
    for action, help_text in (("close", "hand out no new screen of the study (its labels stay)"),
                              ("reopen", "hand out the study's remaining screens again")):
        a = ss.add_parser(action, help=help_text)
        add_db(a)
        a.add_argument("study", type=int, metavar="ID")
        a.set_defaults(func=run_close, closed=action == "close")
    dl = ss.add_parser("delete", help="delete a study after keeping all its rows in a backup (in the database)")
    add_db(dl)
    dl.add_argument("study", type=int, metavar="ID")
    dl.add_argument("--confirm", required=True, metavar="NAME", help="the study's name, typed again")
    dl.add_argument("--by", default="cli", help="who deletes it (kept with the backup)")
    dl.set_defaults(func=run_delete)
    bk = ss.add_parser("backup", help="list the backups of deleted studies, or write one (--id) as JSON")
    add_db(bk)
    bk.add_argument("--id", type=int, metavar="BACKUP", help="the backup to write to stdout")
    bk.set_defaults(func=run_backup)
    lb = sub.add_parser("labels", help="print the current labels of a study as CSV")
    add_db(lb)
    lb.add_argument("--study", required=True, type=int)
    lb.add_argument("--raw", action="store_true",
                    help="write every cell as stored; by default a cell a spreadsheet would run as a formula "
                         "(starting with = + - @, a tab or a carriage return) gets an apostrophe in front")
    lb.set_defaults(func=run_labels)


def run_create(args) -> int:
    settings = StudySettings(
        group_fraction=args.group_fraction, per_group=args.per_group, overlap=args.overlap,
        passages=args.passages, naturalness=args.naturalness, seed=args.seed,
        subset_fraction=args.subset_fraction, max_excluded=args.max_excluded, skip_covered=args.remaining,
        check_share=args.check_share,
        domain_fractions=None if args.domain_fractions is None else _domain_values(args.domain_fractions),
        allocation=args.allocation,
        anticipated_shares=None if args.anticipated_shares is None else _domain_values(args.anticipated_shares),
    )
    own = [q for path in args.question_file for q in read_questions(path)]  # refused before anything is written
    if not args.questions and not own:
        raise IFJudgeError("say what the study asks: --questions (built-in ones) and/or --question-file FILE")
    db = connect(args.db)
    if args.stratify_by_judge is None and any(v for v in (args.judge_rates, args.judge_shares, args.judge_unsure,
                                                          args.dry_run)):
        raise IFJudgeError("--judge-rates, --judge-shares, --judge-unsure and --dry-run go with --stratify-by-judge RUN")
    if args.stratify_by_judge is not None:
        if {"instfol_match", "condition"} & set(args.questions):
            raise IFJudgeError("--stratify-by-judge draws query groups of instances: not for instfol_match or condition "
                               "studies")
        judge_plan = _judge_plan(db, args)
        settings.judge_strata = judge_plan["settings"]
        settings.validate()  # a dry run refuses what the creation would refuse (the domains as strata too)
        if args.dry_run:
            return 0
    if "instfol_match" in args.questions:
        if args.questions != ["instfol_match"] or own:
            raise IFJudgeError("instfol_match is asked in a study of its own (its items are the runs' passages); "
                               f"got --questions {','.join(args.questions)}")
        from annotation.instfol_study import create_instfol_study

        bare, bare_src = _run(db, args.bare_run, args.bare_run_id, "bare")
        instructed, instructed_src = _run(db, args.instructed_run, args.instructed_run_id, "instructed")
        result = create_instfol_study(
            db, project=projects.get_project(db, args.project), bare_run=bare, instructed_run=instructed, annotators=args.annotators,
            top_k_passages=args.top_k, name=args.name, settings=settings, groups=args.groups,
            sources={"query": bare_src, "instructed": instructed_src},
        )
    else:
        if any(v is not None for v in (args.bare_run, args.instructed_run, args.bare_run_id, args.instructed_run_id)):
            raise IFJudgeError("--bare-run/--instructed-run go with --questions instfol_match")
        if not args.remaining:  # the same seed draws the same sample: say so before re-asking
            overlap = sample_overlap(db, project=projects.get_project(db, args.project), questions=args.questions + [q.id for q in own],
                                     settings=settings, groups=args.groups)
            if overlap.covered:
                print(f"warning: {overlap.text} (--seed N or --remaining)", file=sys.stderr)
        result = create_study(
            db, project=projects.get_project(db, args.project), questions=args.questions, annotators=args.annotators,
            name=args.name, settings=settings, groups=args.groups, own_questions=own,
        )
    if args.stratify_by_judge is not None:
        result["judge_strata"] = {k: judge_plan[k] for k in ("strata", "preview")}
    if args.json:
        print(json.dumps(result))
    else:
        checks = result.get("check_screens") or 0
        print(f"study {result['study_id']}: {result['instances']} instances, {result['screens'] - checks} screens, "
              f"{result['items']} items, {result['assignments']} assignments"
              + (f", {checks} check screens mixed in" if checks else ""))
        for n in result["notes"]:
            print(f"  note: {n}", file=sys.stderr)
    return 0


def _judge_plan(db, args) -> dict:
    """The judge-stratified plan of ``study create`` (:func:`annotation.judges.strata.plan`), its width
    printed before anything is created (stderr; stdout with --dry-run)."""
    from annotation.judges import strata as judge_strata

    def per_stratum(text):
        return None if text is None else {judge_strata.stratum_name(k): v for k, v in _domain_values(text).items()}

    unsure = None
    if args.judge_unsure is not None:
        try:
            low, high = (float(v) for v in args.judge_unsure.split(","))
        except ValueError:
            raise IFJudgeError(f"--judge-unsure expects LOW,HIGH (e.g. 0.2,0.8), got {args.judge_unsure!r}") from None
        unsure = (low, high)
    p = judge_strata.plan(db, project=projects.get_project(db, args.project), run_id=args.stratify_by_judge, group_fraction=args.group_fraction,
                          fractions=per_stratum(args.judge_rates), assumed_shares=per_stratum(args.judge_shares),
                          unsure=unsure)
    if args.dry_run and args.json:
        print(json.dumps({k: p[k] for k in ("strata", "preview", "text")}))
    else:
        print(p["text"], file=sys.stdout if args.dry_run else sys.stderr)
    return p


def _run(db, path: str | None, run_id: int | None, which: str) -> tuple[dict, str]:
    """A run (qid -> doc -> score) from a TREC run file or a stored eval run, and where it came from."""
    if (path is None) == (run_id is None):
        raise IFJudgeError(f"instfol_match needs the {which} run: give --{which}-run FILE or --{which}-run-id ID")
    if path is not None:
        return trec_io.read_run(path), path
    return eval_runs.load_eval_run(db, run_id)["run"], f"eval run {run_id}"


def run_list(args) -> int:
    db = connect(args.db)
    pid = projects.get_project(db, args.project)["id"] if args.project else None
    rows = []
    for s in studies.list_studies(db, pid):
        rows.append({"id": s["id"], "name": s["name"], "questions": s["questions"], "annotators": s["annotators"],
                     **studies.item_counts(db, s["id"])})
    print(json.dumps(rows) if args.json else "\n".join(f"{r['id']}\t{r['name']}\t{','.join(r['questions'])}" for r in rows))
    return 0


def run_labels(args) -> int:
    sys.stdout.write(labels_csv(connect(args.db), args.study, raw=args.raw))
    return 0


def run_close(args) -> int:
    from annotation import study_lifecycle

    db = connect(args.db)
    (study_lifecycle.close if args.closed else study_lifecycle.reopen)(db, args.study)
    print(f"study {args.study} {'closed: no new screen is handed out' if args.closed else 'open again'}")
    return 0


def run_delete(args) -> int:
    from annotation import study_lifecycle

    backup = study_lifecycle.delete(connect(args.db), args.study, by=args.by, confirm=args.confirm)
    print(f"study {args.study} deleted; its rows are kept in backup {backup} (ifjudge study backup --id {backup})")
    return 0


def run_backup(args) -> int:
    db = connect(args.db)
    if args.id is not None:
        print(studies.study_backup(db, args.id))
        return 0
    for b in studies.study_backups(db):
        print(f"{b['id']}\tstudy {b['study_id']}\t{b['name']}\tdeleted {b['deleted_at']} by {b['deleted_by']}")
    return 0
