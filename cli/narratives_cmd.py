"""``ifjudge narrative show|edit|rejudge-published|rejudge-summary`` and ``ifjudge export-followir``:
the FollowIR workflow (Weller et al., 2024, §3) from the command line; the same calls as
pages/narratives.py."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from annotation.narratives import versions as narrative_versions
from annotation.outcomes.resolution import UNRESOLVED_POLICIES
from annotation.narratives.diff import diff_rows, diff_text, word_diff
from storage import narratives as store
from storage import projects
from storage.db import connect
from storage.errors import IFJudgeError, NotFound
from cli.options import add_db, add_json, add_project
from cli.output import fmt_value
from evaluation.undefined import UNDEFINED


def _csv_list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def register(sub) -> None:
    p = sub.add_parser(
        "narrative", help="FollowIR: narrative versions, expert edits that create re-judging, qrels_changed",
        description="Experts modify a query's narrative (more specific, or a negation); each save is a new "
                    "version and creates a re-judging round of the documents relevant under the original qrels.",
    )
    ns = p.add_subparsers(dest="narrative_command", required=True, metavar="ACTION")
    for add in (_add_show, _add_edit, _add_rejudge_published, _add_summary):
        add(ns)
    _add_export(sub)


def _with_db_and_project(p) -> None:
    add_db(p)
    add_project(p)


def _round_args(p, *, controls: str, relevance: str) -> None:
    """The options of a new re-judging round: overlap, controls, relevance scale, seed."""
    p.add_argument("--overlap", type=int, help="annotators per document (default: the study's, first time 3)")
    p.add_argument("--controls", type=int, default=0, help=controls)
    p.add_argument("--relevance", choices=("binary", "graded"), help=relevance)
    p.add_argument("--seed", type=int, help="seed of the assignment and the control sample (default: the study's, 0)")


def _add_show(ns) -> None:
    s = ns.add_parser("show", help="list the queries with narratives, or one query's versions and diffs")
    _with_db_and_project(s)
    s.add_argument("--query", help="show this query's versions (default: list the queries)")
    s.add_argument("--version", type=int, help="print this version's text and its word diff against the original")
    add_json(s)
    s.set_defaults(func=run_show)


def _add_edit(ns) -> None:
    e = ns.add_parser("edit", help="save a modified narrative as a new version and create its re-judging items")
    _with_db_and_project(e)
    e.add_argument("--query", required=True)
    e.add_argument("--author", required=True, help="user name of the expert or lead making the edit")
    text = e.add_mutually_exclusive_group(required=True)
    text.add_argument("--text", help="the modified narrative")
    text.add_argument("--file", type=Path, help="read the modified narrative from this UTF-8 file")
    e.add_argument("--parent", type=int, help="version the edit starts from (default: the newest)")
    e.add_argument("--annotators", type=_csv_list,
                   help="comma-separated annotators who re-judge (default: the re-judging study's)")
    _round_args(e, controls="also re-judge this many originally non-relevant documents as controls (seeded; default 0)",
                relevance="relevance scale of the re-judging study (set on its first save; default binary)")
    add_json(e)
    e.set_defaults(func=run_edit)


def _add_rejudge_published(ns) -> None:
    pp = ns.add_parser(
        "rejudge-published", help="re-judge the PUBLISHED changed instruction (no edit): validates the 'changed' qrels",
        description="Start the re-judging of the published instruction_changed as imported: the documents relevant "
                    "under the original qrels (plus optional controls) are judged under it. Its outcome is qrels "
                    "'changed-validated', compared with the published 'changed' qrels judgment by judgment.")
    _with_db_and_project(pp)
    pp.add_argument("--author", required=True, help="user name of the lead starting it")
    pp.add_argument("--annotators", type=_csv_list, required=True, help="comma-separated annotators who re-judge")
    _round_args(pp, controls="also judge this many originally non-relevant documents per query as controls (seeded; "
                             "default 0); they are reported, never written into the changed qrels",
                relevance="relevance scale (first time; default binary)")
    pp.add_argument("--query", action="append", default=[],
                    help="re-judge this query (repeat; default: every query with a published changed narrative "
                         "and no round yet)")
    add_json(pp)
    pp.set_defaults(func=run_rejudge_published)


def _add_summary(ns) -> None:
    r = ns.add_parser("rejudge-summary",
                      help="changed relevance per document, flips per query, agreement, unresolved documents")
    _with_db_and_project(r)
    r.add_argument("--query", help="only this query")
    r.add_argument("--documents", action="store_true", help="also list every re-judged document")
    r.add_argument("--kind", choices=narrative_versions.KINDS,
                   help="which re-judging: of the published changed instruction, or of expert edits (default: "
                        "the one the project has; required when it has both)")
    r.add_argument("--store", action="store_true",
                   help="store the human outcome with provenance per judgment: kind published as qrels "
                        "'changed-validated' (validates the published 'changed'), kind edit as 'edited-validated' "
                        "(a new instruction version); the published qrels are never overwritten")
    _unresolved_args(r)
    add_json(r)
    r.set_defaults(func=run_summary)


def _add_export(sub) -> None:
    x = sub.add_parser(
        "export-followir", help="export the FollowIR/MTEB layout (qrels_og, qrels_changed from the re-judging)",
        description="Write queries.jsonl (instruction_og = original narrative, instruction_changed = newest "
                    "version), corpus.jsonl, qrels_og/test.tsv, qrels_changed/test.tsv and top_ranked.jsonl. "
                    "qrels_changed of a re-judged query is the human outcome (qrels 'changed-validated', as "
                    "`narrative rejudge-summary --store` stores it); other queries use the published 'changed' qrels.",
    )
    _with_db_and_project(x)
    x.add_argument("--out", required=True, type=Path, help="output directory")
    x.add_argument("--all-documents", action="store_true",
                   help="write the whole corpus (default: the documents the qrels and top_ranked name)")
    _unresolved_args(x)
    add_json(x)
    x.set_defaults(func=run_export)


def _unresolved_args(p) -> None:
    p.add_argument("--unresolved", choices=UNRESOLVED_POLICIES, default=None,
                   help="how to treat re-judged documents without a majority (required when there are some)")
    p.add_argument("--allow-incomplete", action="store_true",
                   help="confirm using a re-judging round whose assignments are not all labelled")


def _fmt(v) -> str:
    return fmt_value(v, digits=3)


def run_show(args) -> int:
    db = connect(args.db)
    pid = projects.get_project(db, args.project)["id"]
    if args.query is None:
        if args.version is not None:
            raise IFJudgeError("--version needs --query")
        rows = []
        for q in store.narrative_queries(db, pid):
            vs = store.versions(db, pid, q)
            rows.append({"query_id": q, "versions": len(vs), "newest": vs[-1]["id"], "newest_author": vs[-1]["author"]})
        if args.json:
            print(json.dumps(rows))
        else:
            for r in rows:
                print(f"{r['query_id']}\t{r['versions']} version(s)\tnewest v{r['newest']} by {r['newest_author']}")
        return 0
    state = narrative_versions.narrative_state(db, projects.get_project(db, args.project), args.query)
    root = state["original"]
    if args.version is not None:
        v = next((v for v in state["versions"] if v["id"] == args.version), None)
        if v is None:
            raise NotFound(f"query {args.query!r} has no version {args.version}; versions: "
                           f"{', '.join(str(v['id']) for v in state['versions'])}")
        spans = word_diff(root["text"], v["text"])
        if args.json:
            print(json.dumps({**v, "diff": diff_rows(spans), "diff_text": diff_text(spans)}))
        else:
            print(v["text"])
            print()
            print(f"diff against the original (v{root['id']}): [-removed-] {{+added+}}")
            print(diff_text(spans))
        return 0
    if args.json:
        print(json.dumps({k: state[k] for k in ("query_id", "query", "versions", "relevant")}))
        return 0
    print(f"query {state['query_id']}: {state['query']}")
    print(f"relevant under the original qrels: {len(state['relevant'])}")
    for v in state["versions"]:
        tag = " (original)" if v["id"] == root["id"] else ""
        parent = f"v{v['parent_id']}" if v["parent_id"] else UNDEFINED  # as the Narratives page's "started from"
        print(f"v{v['id']}{tag}\t{v['variant']}\tparent {parent}\t{v['author']}\t{v['created_at']}"
              f"\t+{v['added']} -{v['removed']}")
    return 0


def run_edit(args) -> int:
    text = args.file.read_text(encoding="utf-8") if args.file else args.text
    db = connect(args.db)
    result = narrative_versions.save_narrative(
        db, project=projects.get_project(db, args.project), query_id=args.query, text=text, author=args.author,
        base_version_id=args.parent, annotators=args.annotators, overlap=args.overlap, controls=args.controls,
        relevance=args.relevance, seed=args.seed,
    )
    if args.json:
        print(json.dumps(result))
    elif not result["created"]:
        print(f"unchanged: {result['reason']}")
    else:
        print(f"version {result['version_id']} (parent v{result['parent_id']}, +{result['added']} -{result['removed']} "
              f"tokens against the original); re-judging study {result['study_id']}"
              f"{' (created)' if result['study_created'] else ''}: {result['items']} items "
              f"({result['documents']} documents, {result['controls']} controls), {result['assignments']} assignments")
        for n in result["notes"]:
            print(f"  note: {n}", file=sys.stderr)
    return 0


def run_rejudge_published(args) -> int:
    db = connect(args.db)
    result = narrative_versions.rejudge_published(
        db, project=projects.get_project(db, args.project), author=args.author, annotators=args.annotators,
        query_ids=args.query or None, overlap=args.overlap, controls=args.controls, relevance=args.relevance,
        seed=args.seed)
    if args.json:
        print(json.dumps(result))
    else:
        print(f"re-judging of the published changed instruction, study {result['study_id']}"
              f"{' (created)' if result['study_created'] else ''}: {len(result['queries'])} queries, "
              f"{result['items']} items ({result['documents']} documents, {result['controls']} controls), "
              f"{result['assignments']} assignments")
    for n in result["notes"]:
        print(f"  note: {n}", file=sys.stderr)
    return 0


def _kind(db, project: str, kind: str | None) -> str:
    """The re-judging kind asked for, else the one the project has (edit when it has none)."""
    from annotation.narratives import rejudging

    if kind is not None:
        return kind
    pid = projects.get_project(db, project)["id"]
    have = [k for k in rejudging.KINDS if store.rejudge_study_id(db, pid, rejudging.PURPOSES[k]) is not None]
    if len(have) > 1:
        raise IFJudgeError("the project re-judges both the published changed instruction and expert edits: "
                           "choose one with --kind published|edit")
    return have[0] if have else "edit"


def run_summary(args) -> int:
    from annotation.narratives import rejudging
    from annotation.outcomes import qrels_builds

    db = connect(args.db)
    kind = _kind(db, args.project, args.kind)
    summary = rejudging.rejudge_summary(db, projects.get_project(db, args.project), query_id=args.query, kind=kind)
    store_fn = qrels_builds.store_changed_qrels if kind == "published" else qrels_builds.store_edited_qrels
    stored = store_fn(db, projects.get_project(db, args.project), unresolved=args.unresolved, allow_incomplete=args.allow_incomplete,
                      created_by="cli") if args.store else None
    if args.json:
        out = {k: summary[k] for k in ("study_id", "kind", "scale", "queries", "overall", "qrels_changed")}
        if args.documents:
            out["documents"] = summary["documents"]
        if stored is not None:
            out["stored"] = stored
        print(json.dumps(out))
        return 0
    if summary["study_id"] is None:
        print("no re-judging yet: start one (`ifjudge narrative rejudge-published`) or save a modified narrative "
              "(`ifjudge narrative edit`)")
        return 0
    print("query\tversion\trelevant_og\trejudged\tresolved\tflipped\tshare_flipped\tunresolved\tcontrols\tpercent_agreement"
          + ("\tagree_published\tdisagree_published" if kind == "published" else ""))
    for q in [*summary["queries"], {**summary["overall"], "query_id": "ALL", "version_id": "-"}]:
        print(f"{q['query_id']}\t{q['version_id']}\t{q['relevant_original']}\t{q['rejudged']}\t{q['resolved']}"
              f"\t{q['flipped']}\t{_fmt(q['share_flipped'])}\t{q['unresolved']}\t{q['controls']}"
              f"\t{_fmt(q['agreement']['percent_agreement'])}"
              + (f"\t{q['agree_published']}\t{q['disagree_published']}" if kind == "published" else ""))
    ov = summary["overall"]
    if ov["controls"]:
        print(f"controls: {ov['controls_judged_relevant']} of {ov['controls']} control documents judged relevant under "
              f"the {'published changed' if kind == 'published' else 'edited'} instruction (not written into the qrels)")
    if args.documents:
        print()
        print("query\tdoc_id\tcontrol\toriginal\tlabels\tstatus\tchanged" + ("\tpublished" if kind == "published" else ""))
        for d in summary["documents"]:
            labels = ",".join(f"{a}={v}" for a, v in sorted(d["labels"].items())) or "-"
            changed = "unresolved" if d["changed"] is None else d["changed"]
            print(f"{d['query_id']}\t{d['doc_id']}\t{'yes' if d['control'] else 'no'}\t{d['original']}\t{labels}"
                  f"\t{d['status']}\t{changed}" + (f"\t{d['published']}" if kind == "published" else ""))
    if stored is not None:
        print(f"stored qrels '{stored['version']}': {stored['rows']} rows for {stored['queries']} re-judged queries "
              f"(build {stored['build_id']}, {stored['changed']} differ from the published label, "
              f"{stored['unresolved']} unresolved: {args.unresolved or 'none'})")
    return 0


def run_export(args) -> int:
    from exports import followir

    db = connect(args.db)
    result = followir.export_followir(db, projects.get_project(db, args.project), args.out, all_documents=args.all_documents,
                                      unresolved=args.unresolved, allow_incomplete=args.allow_incomplete)
    if args.json:
        print(json.dumps(result))
    else:
        c = result["counts"]
        print(f"wrote {len(result['files'])} files to {args.out}: {c['queries']} queries, {c['documents']} documents, "
              f"{c.get('qrels_original', 0)} qrels_og rows, {c.get('qrels_changed', 0)} qrels_changed rows")
        for n in result["notes"]:
            print(f"  note: {n}", file=sys.stderr)
    return 0
