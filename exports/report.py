"""The validation report of a study as Markdown, CSV and LaTeX (like InstructIR's Table 7), with
the benchmark-wide estimates (design-aware intervals, the naive independent one beside them for
comparison) and the leaderboard change on the validated qrels
(:func:`exports.benchmark_report.benchmark_report`, computed once and written in each format)."""
from __future__ import annotations

from pathlib import Path

from annotation.monitoring.monitor import table7
from annotation.monitoring.scales import scale_summary
from exports.benchmark_report import (CSV_HEADER, md_cell, benchmark_report, csv_rows, latex_escape, latex_tables,
                                      markdown_sections, md_text, verdict_section)
from evaluation.undefined import UNDEFINED, show_why
from formats.bundle import VALIDATES
from formats.spreadsheet import csv_writer
from storage import studies
from storage.db import Database

BOOTSTRAP = 1000


def _fmt(v, pct: bool = False) -> str:
    if v is None:
        return UNDEFINED
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    return f"{100 * v:.1f}%" if pct else f"{v:.4f}"


def _is_share(statistic: str) -> bool:
    return statistic.startswith(("Proportion", "Top-1", "Percent"))


def write_report(db: Database, study_id: int, out: Path, *, n_boot: int = BOOTSTRAP,
                 builds: dict | None = None, raw_csv: bool = False, study: dict | None = None) -> list[Path]:
    """report.md, report.csv, report.tex of one study: Table 7 rows (with top-1 accuracy excluding
    ties and the number of ties for best_passage; Randolph, Fleiss and percent agreement for
    re-judging), the study's completeness (labelled / planned), the benchmark-wide estimates and
    the leaderboard change (:func:`exports.benchmark_report.benchmark_report`: ``n_boot`` bootstrap
    replicates over queries, the study's seed; the leaderboards read the project's stored eval
    runs), and for each qrels version built (``builds``) the studies it comes from and its
    provenance counts. Names (the study's, the systems') are escaped in the Markdown and the LaTeX;
    CSV cells a spreadsheet would run as formulas get an apostrophe unless ``raw_csv``. ``study``:
    the study's row when the caller has read it (an export reads it once)."""
    from annotation.outcomes.qrels_builds import describe_studies, study_completeness

    study = study or studies.get_study(db, study_id)
    done = study_completeness(db, study_id, study=study)
    seed = int(study["settings"].get("seed", 0))
    rows = table7(db, study_id, n_boot=n_boot, seed=seed)
    bench = benchmark_report(db, [study_id], n_boot=n_boot, seed=seed, builds=builds)
    out = Path(out)
    csv_path = out / "report.csv"
    with csv_path.open("w", newline="", encoding="utf-8") as f:
        w = csv_writer(f, raw=raw_csv, lineterminator="\n")
        w.writerow(CSV_HEADER)
        bench_rows = csv_rows(bench)
        w.writerows(r for r in bench_rows if r[0] == "verdict")  # the answer first, as in report.md
        for r in rows:
            w.writerow([r["question"], r["statistic"], "" if r["value"] is None else repr(r["value"]),
                        "" if r["low"] is None else repr(r["low"]), "" if r["high"] is None else repr(r["high"]),
                        r["band"] or "", r["undefined_reason"] or "", ""])
        w.writerows(r for r in bench_rows if r[0] != "verdict")
    md = [f"# Human verification: study {study_id} ({md_text(study['name'])})", "", *verdict_section(bench),
          "## Agreement (InstructIR Table 7)", "",
          f"Completeness: {done['labelled']} of {done['planned']} planned labels"
          f"{'' if done['complete'] else ' (the study is not finished)'}.", "",
          "| | value | 95% CI | band |", "|---|---|---|---|"]
    tex = [rf"% Human verification: study {study_id} ({latex_escape(' '.join(study['name'].split()))})",
           *[rf"\paragraph{{Verdict.}} {latex_escape(' '.join(v['text'].split()))}" for v in bench["verdicts"]], "",
           r"\begin{tabular}{lrr}", r"\toprule", r" & value & 95\% CI \\", r"\midrule"]
    last_q = None
    for r in rows:
        pct = _is_share(r["statistic"])
        ci = "" if r["low"] is None else f"[{_fmt(r['low'], pct)}, {_fmt(r['high'], pct)}]"
        if r["question"] != last_q:
            md.append(f"| *{md_cell(r['question'])}* | | | |")
            tex.append(rf"\multicolumn{{3}}{{l}}{{\textit{{{latex_escape(r['question'])}}}}} \\")
            last_q = r["question"]
        value = _fmt(r["value"], pct) if r["value"] is not None else show_why(None, r["undefined_reason"])
        md.append(f"| {md_cell(r['statistic'])} | {md_cell(value)} | {ci} | {r['band'] or ''} |")
        tex.append(rf"{latex_escape(r['statistic'])} & {latex_escape(_fmt(r['value'], pct))} & {latex_escape(ci)} \\")
    tex += [r"\bottomrule", r"\end{tabular}"]
    resampled = next((r["resampled"] for r in rows if r.get("resampled")), None)
    if resampled:
        md += ["", f"95% CI: bootstrap percentile interval, {resampled}."]
        tex.append(f"% 95% CI: bootstrap percentile interval, {latex_escape(resampled)}")
    tex += latex_tables(bench)
    md += ["", *markdown_sections(bench)]
    md += scale_section(db, study_id, n_boot=n_boot, seed=study["settings"].get("seed", 0))
    for version, b in (builds or {}).items():
        md += build_section(version, b, md_text(describe_studies(b.studies)))
    md_path, tex_path = out / "report.md", out / "report.tex"
    md_path.write_text("\n".join(md) + "\n", encoding="utf-8")
    tex_path.write_text("\n".join(tex) + "\n", encoding="utf-8")
    return [md_path, csv_path, tex_path]


def build_heading(version: str, build) -> str:
    """The Markdown heading of one built qrels version, naming what it validates: the published
    version it corrects (``validated`` -> ``original``, ``changed-validated`` -> ``changed``,
    ``reversed-validated`` -> ``reversed``), or for ``edited-validated`` a new instruction version.

    >>> from annotation.outcomes.qrels_builds import QrelsBuild
    >>> build_heading("changed-validated", QrelsBuild("changed-validated", "changed", {}, [], [], {}))
    '## Qrels version `changed-validated` (validates the published `changed`)'
    >>> build_heading("edited-validated", QrelsBuild("edited-validated", "original", {}, [], [], {}))
    '## Qrels version `edited-validated` (a new instruction version: expert-edited narratives re-judged; starts from `original`, corrects no published version)'
    """
    if version in VALIDATES:
        return f"## Qrels version `{version}` (validates the published `{VALIDATES[version]}`)"
    return (f"## Qrels version `{version}` (a new instruction version: expert-edited narratives re-judged; "
            f"starts from `{build.base_version}`, corrects no published version)")


def build_section(version: str, b, studies_text: str) -> list[str]:
    """Markdown lines of one built qrels version: heading, studies, provenance counts, what the
    control documents of a re-judging show, and the IFIR passage-match changes."""
    c = b.counts
    md = ["", build_heading(version, b), "",
          f"Built from {studies_text}; unresolved judgments: {c['unresolved']} "
          f"(treated as: {b.settings.get('unresolved') or 'none needed'}).", "",
          "| judgments | queries | left out | changed | unanimous | majority | adjudicated | unresolved | not checked |",
          "|---|---|---|---|---|---|---|---|---|",
          f"| {c['judgments']} | {c['queries']} | {c['left_out']} | {c['changed']} | {c.get('provenance_unanimous', 0)} "
          f"| {c.get('provenance_majority', 0)} | {c.get('provenance_adjudicated', 0)} | {c.get('provenance_unresolved', 0)} "
          f"| {c.get('provenance_not checked', 0)} |"]
    ctrl = b.settings.get("controls")
    if ctrl and ctrl.get("documents"):
        under = "the published changed instruction" if b.settings.get("kind") == "published" else "the edited narratives"
        md += ["", f"Controls: {ctrl['judged_relevant']} of {ctrl['documents']} control documents (non-relevant under "
                   f"the original narrative) judged relevant under {under} ({ctrl['resolved']} resolved). Controls are "
                   "not written into the qrels, so they are never p-MRR changed documents."]
    pm = b.settings.get("passage_match")
    if pm:
        n = pm["counts"]
        md += ["", f"Passage-match rule ({pm['rule']}):", "",
               "| gold -> not relevant | excluded -> relevant | unchanged | undecided |", "|---|---|---|---|",
               f"| {n['gold_to_not_relevant']} | {n['excluded_to_relevant']} | {n['unchanged']} | {n['undecided']} |"]
    return md


def scale_section(db: Database, study_id: int, *, n_boot: int, seed: int) -> list[str]:
    """Markdown lines of the 1-5 / 0-3 scale questions' means (IFIR Table 2), none without labels."""
    t = scale_summary(db, study_id, n_boot=n_boot, seed=seed)
    if t.empty:
        return []
    md = ["", "## Mean scores (IFIR Table 2; bootstrap 95% intervals)", "",
          "| statistic | by | group | mean | 95% CI | items | labels |", "|---|---|---|---|---|---|---|"]
    for r in t.itertuples():
        ci = "" if r.ci_low is None or r.ci_low != r.ci_low else f"[{r.ci_low:.2f}, {r.ci_high:.2f}]"
        group = md_text(r.group)
        md.append(f"| {r.statistic} | {r.by} | {group} | {r.mean:.2f} | {ci} | {r.items} | {r.labels} |")
    return md
