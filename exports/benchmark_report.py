"""The report a lead pastes into a paper: do the benchmark's conclusions survive?

Composed of named public pieces: :func:`annotation.estimates.benchmark.benchmark_estimates` (each study's
benchmark-wide shares with design-aware intervals and, with a judge's file, prediction-powered
ones), :func:`evaluation.leaderboard.leaderboard_change` (each project's leaderboard on the
published vs the validated qrels) and, first, :func:`exports.verdict.project_verdict` (the answer
in one paragraph of plain words, built from the two). :func:`benchmark_report` returns one
JSON-ready dict; :func:`to_markdown` writes it as the verdict, then Markdown tables with the
design, the methods and the counts.
"""
from __future__ import annotations

import math

from annotation.estimates.benchmark import benchmark_estimates, require_study
from annotation.survey.prediction_powered import LAM, method as ppi_design_method
from evaluation.leaderboard import INTERVAL_NAMES, MIN_QUERIES, MIN_SYSTEMS, leaderboard_change
from evaluation.undefined import UNDEFINED, is_undefined, show, show_why
from exports.verdict import project_verdict
from storage import projects, studies
from storage.db import Database

LEADERBOARD_METHOD = ("studentized (bootstrap-t) intervals over queries, Kendall tau's BCa (the same draw for every "
                      "system and both qrels versions); per "
                      "pair the one-sided bootstrap level (the share of replicates ordering it against the observed "
                      "order, not a probability that it swaps) and whether the validated qrels reverse the published "
                      "order, Holm-adjusted over the pairs; "
                      f"undefined below {MIN_QUERIES} queries, Kendall tau also below {MIN_SYSTEMS} systems; "
                      "every figure follows MTEB 2.26's evaluation protocol unless its system is marked "
                      "'(paper protocol)' (the benchmark paper's own code: docs/evaluation.md, Protocols)")
def ppi_method(weight: float | None = LAM) -> str:
    """The prediction-powered method as the report states it, for the judge's weight ``weight``
    (None: tuned, cross-fitted)."""
    return (ppi_design_method(weight) + ". One interval per method, fixed before the data: the design-aware one of "
            "the humans alone, and the prediction-powered one (the one to cite when a judge labelled every item)")


def _weight_name(weight: float | None) -> str:
    """How the judge's weight was set, in a row's name: ``lam = 0.5 fixed`` or ``tuned, cross-fitted``."""
    return "tuned, cross-fitted" if weight is None else f"lam = {weight:g} fixed"


def _weight_note(weight: float | None) -> str:
    """What the judge's weight means for the reader of the report."""
    if weight is None:
        return ("Its weight was tuned on other folds of query groups, never on the items it is applied to; with an "
                "uninformative judge it goes to 0 and the interval is the design-aware one above. With one or two "
                "disagreements in the sample a tuned weight covers more than 95% (docs/statistics.md).")
    return (f"Its weight lam = {weight:g} was fixed before the data: the estimate averages the humans' share and the "
            "judge's share corrected by the sample's disagreements. With a judge no better than chance (low Cohen "
            "kappa beside it) this interval is wider than the humans' alone: cite the design-aware one then.")


def benchmark_report(db: Database, study_ids: list[int], *, judge: dict | None = None, measure: str = "nDCG@10",
                     n_boot: int = 2000, seed: int = 0, alpha: float = 0.05, builds: dict | None = None,
                     judge_weight: float | None = LAM) -> dict:
    """``{"verdicts": [project_verdict per project], "studies": [benchmark_estimates...],
    "leaderboards": [leaderboard_change per project], "methods": {...}}`` for the studies named
    (their projects' leaderboards and verdicts, each once; a verdict states the shares of the
    named studies of its project; ``builds``: the qrels versions an export built, which the
    verdict's coverage describes, :func:`exports.verdict.project_verdict`; ``judge_weight``: the
    prediction-powered weight, fixed before the data, or None for the tuned one)."""
    for sid in study_ids:
        require_study(db, sid)
    out_studies = [benchmark_estimates(db, sid, judge=judge, alpha=alpha, judge_weight=judge_weight) for sid in study_ids]
    project_of = {sid: studies.get_study(db, sid)["project_id"] for sid in study_ids}
    project_ids = list(dict.fromkeys(project_of.values()))
    boards, verdicts = [], []
    for pid in project_ids:
        proj = projects.get_project_by_id(db, pid)
        board = leaderboard_change(db, proj, measure=measure, n_boot=n_boot, seed=seed, alpha=alpha)
        mine = [sid for sid in study_ids if project_of[sid] == pid]
        boards.append(board)
        verdicts.append(project_verdict(db, proj, study_ids=mine, boards=board, alpha=alpha, builds=builds,
                                        estimates=[e for sid, e in zip(study_ids, out_studies) if sid in mine]))
    return {"verdicts": verdicts, "studies": out_studies, "leaderboards": boards,
            "methods": {"estimates": out_studies[0]["method"] if out_studies else None,
                        "prediction_powered": ppi_method(judge_weight) if judge is not None else None,
                        "leaderboard": LEADERBOARD_METHOD, "confidence": 1 - alpha,
                        "bootstrap_replicates": n_boot, "seed": seed}}


def md_cell(value) -> str:
    """A Markdown table cell: numbers to 3 decimals, None as an em dash, text with ``|`` and line
    breaks escaped (names and labels are data, shown literally).

    >>> md_cell(0.12345), md_cell(None), md_cell("a|b\\nc")
    ('0.123', '—', 'a\\\\|b c')
    """
    if is_undefined(value):
        return UNDEFINED
    if isinstance(value, float):
        return show(value, ".3f")
    return md_text(value)


def md_text(value) -> str:
    """Text (a name, a label, a reason) for Markdown, shown as typed: line breaks become spaces and
    every character that could start emphasis, code, a link, an image, HTML, a heading, a table cell
    or maths is backslash-escaped.

    >>> print(md_text("![x](http://evil/) <b>*n*</b> | $1"))
    \\!\\[x\\](http://evil/) \\<b\\>\\*n\\*\\</b\\> \\| \\$1
    """
    text = " ".join(str(value).splitlines())
    for ch in "\\|*_`[]<>#!~$":
        text = text.replace(ch, "\\" + ch)
    return text


def _ci(d: dict | None) -> str:
    if not d or d.get("low") is None:
        return show_why(None, (d or {}).get("undefined"))
    return f"[{md_cell(d['low'])}, {md_cell(d['high'])}]"


def estimates_table(est: dict) -> list[str]:
    """One study's estimates as Markdown lines (a table plus the design and method)."""
    lines = [f"### Study {est['study']['id']}: {md_cell(est['study']['name'])}", "",
             f"Design: {md_cell(est['design']['description'])}.", "",
             *[line for n in est["design"].get("notes") or [] for line in (f"Note: {md_cell(n)}.", "")],
             f"Method: {est['method']}; {round((1 - est['alpha']) * 100)}% intervals.", "",
             "| estimate | share | 95% CI (design) | naive independent CI (Wilson) | deff | effective n | decided items | "
             "groups | further labels to halve the CI |", "|---|---|---|---|---|---|---|---|---|"]
    for e in est["estimates"]:
        naive = e.get("naive_independent")
        ci = _ci(e) if e.get("undefined") is None else show_why(None, md_cell(e['undefined']))
        lines.append(f"| {md_cell(e['estimand'])} | {md_cell(e['share'])} | {ci} | {_ci(naive)} | {md_cell(e['deff'])} | "
                     f"{md_cell(e['n_effective'])} | {e['n_items']} | {e['n_groups']} | "
                     f"{md_cell(e['to_halve']['further_labels'])} |")
    ppi = [e for e in est["estimates"] if "ppi_design" in e]
    if ppi:
        lines += ["", "Prediction-powered (the judge labelled every item; the humans' sample corrects its bias): "
                  f"{md_cell(est.get('ppi_method') or '')}. With a judge, this is the interval to cite. "
                  + _weight_note(est.get("judge_weight", LAM)), "",
                  "| estimate | prediction-powered share | 95% CI (prediction-powered) | 95% CI (design, humans only) | "
                  "lam | judge's share | judge agreement | Cohen kappa | judged items |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for e in ppi:
            d = e["ppi_design"]
            a = d.get("judge_agreement") or {}
            if d.get("undefined"):
                lines.append(f"| {md_cell(e['estimand'])} | {show_why(None, md_cell(d['undefined']))} | | | | | "
                             f"{md_cell(a.get('agreement'))} | {md_cell(a.get('cohen_kappa'))} | {d.get('n_judged', UNDEFINED)} |")
                continue
            lines.append(f"| {md_cell(e['estimand'])} | {md_cell(d['share'])} | {_ci(d)} | {_ci(d['human_only'])} | "
                         f"{md_cell(d['lam'])} | {md_cell(d['judge_share'])} | {md_cell(a.get('agreement'))} | "
                         f"{md_cell(a.get('cohen_kappa'))} | {d['n_judged']} |")
        for e in ppi:
            for n in e["ppi_design"].get("notes") or []:
                lines += ["", f"Note ({md_cell(e['estimand'])}, prediction-powered): {md_cell(n)}."]
    return lines


def judge_runs_table(runs: list[dict]) -> list[str]:
    """The judge runs behind the prediction-powered estimates as Markdown lines: who judged (model,
    prompt version and hash) and its measured agreement with the humans on each study (Cohen
    kappa with its group-bootstrap interval; :func:`annotation.judges.agreement.measured_runs`).

    >>> judge_runs_table([{"id": 2, "question": "validity", "judge": "chat", "model": "m", "prompt_version": "v1",
    ...     "prompt_hash": "ab", "agreement": [{"study": 1, "n_items": 8, "kappa": 0.6, "kappa_low": 0.1,
    ...     "kappa_high": 1.0, "band": "moderate", "agreement": 0.875, "undefined": None}]}])[6]
    '| 2 | validity | chat m | v1 (ab) | study 1 | 0.600 [0.100, 1.000] (moderate) | 0.875 | 8 |'
    """
    if not runs:
        return []
    lines = ["### The judge", "", "Its labels are never shown to annotators nor counted as human labels; its agreement "
             "is measured on the items the humans decided (Cohen kappa, 95% interval over resampled query groups).", "",
             "| judge run | question | judge | prompt version (hash) | measured on | Cohen kappa [95% CI] | agreement | "
             "items both judged |", "|---|---|---|---|---|---|---|---|"]
    for r in runs:
        for a in r["agreement"] or [{"study": None}]:
            kappa = (UNDEFINED if a.get("study") is None else show_why(None, md_cell(a['undefined'])) if a.get("undefined")
                     else f"{md_cell(a['kappa'])} [{md_cell(a['kappa_low'])}, {md_cell(a['kappa_high'])}] "
                          f"({md_cell(a['band'])})")
            lines.append(f"| {r['id']} | {md_cell(r['question'])} | {md_cell(r['judge'])} {md_cell(r['model'])} | "
                         f"{md_cell(r['prompt_version'] or '(default)')} ({md_cell(r['prompt_hash'])}) | "
                         f"{'study ' + str(a['study']) if a.get('study') is not None else 'no study of the report asks it'} | "
                         f"{kappa} | {md_cell(a.get('agreement'))} | {a.get('n_items', UNDEFINED)} |")
    return lines + [""]


def leaderboard_tables(board: dict) -> list[str]:
    """One project's leaderboard comparison as Markdown lines."""
    lines = [f"### Leaderboard of {md_cell(board['project'])} ({md_cell(board['measure'])})", ""]
    if board.get("undefined"):
        return lines + [f"Undefined: {md_cell(board['undefined'])}.", ""]
    for c in board["comparisons"]:
        coverage = (c.get("coverage") or {}).get("note")
        lines += [f"{md_cell(c['published'])} ({c['n_queries_published']} queries) vs {md_cell(c['validated'])} "
                  f"({c['n_queries_validated']} queries), {c['n_systems']} systems, {c['n_boot']} bootstrap replicates "
                  f"(seed {c['seed']}), {INTERVAL_NAMES.get(c.get('interval'), '')} intervals."
                  + (f" Note: {md_cell(coverage)}." if coverage else ""), "",
                  "| system | published | 95% CI | rank | validated | 95% CI | rank |", "|---|---|---|---|---|---|---|"]
        for r in c["systems"]:
            lines.append(f"| {md_cell(r['system'])} | {md_cell(r['published']['value'])} | {_ci(r['published'])} | "
                         f"{r['rank_published']} | {md_cell(r['validated']['value'])} | {_ci(r['validated'])} | "
                         f"{r['rank_validated']} |")
        lines += ["", "| a | b | a - b published | 95% CI | a - b validated | 95% CI | one-sided bootstrap level "
                  "published | one-sided bootstrap level validated | replicates ordered differently | order changed "
                  "(Holm p) |", "|---|---|---|---|---|---|---|---|---|---|"]
        for p in c["pairs"]:
            ch = p.get("order_changed") or {}
            changed = (UNDEFINED if not ch else f"{'yes' if ch.get('changed') else 'no'} ({md_cell(ch.get('p_holm'))})")
            lines.append(f"| {md_cell(p['a'])} | {md_cell(p['b'])} | {md_cell(p['difference_published']['value'])} | "
                         f"{_ci(p['difference_published'])} | {md_cell(p['difference_validated']['value'])} | "
                         f"{_ci(p['difference_validated'])} | {md_cell(p['one_sided_level_published'])} | "
                         f"{md_cell(p['one_sided_level_validated'])} | {md_cell(p['replicates_ordered_differently'])} | "
                         f"{changed} |")
        coverage = (c.get("coverage") or {}).get("note")
        beside = f" ({md_cell(coverage)})" if coverage else ""
        v = c.get("order_changed") or {}
        verdict = ("the order of " + ", ".join(f"{md_cell(a)} and {md_cell(b)}" for a, b in v["pairs"]) + " changed"
                   if v.get("any") else "no pair's order changed")
        t = c["kendall_tau"]
        lines += ["", f"Verdict: {verdict} ({md_cell(v.get('method', ''))}){beside}.", "",
                  "Kendall tau (published vs validated): " + (
                      show_why(None, md_cell(t['undefined'])) if t["undefined"] else f"{md_cell(t['value'])} {_ci(t)}")
                  + f"{beside}.", ""]
    return lines


def markdown_sections(report: dict) -> list[str]:
    """The report's sections as Markdown lines under level-2 headings (methods, benchmark-wide
    estimates, leaderboard change): the body of :func:`to_markdown`, and what the validation report
    (:func:`exports.report.write_report`) appends after its Table 7."""
    m = report["methods"]
    lines = ["## Methods", "",
             f"- Benchmark-wide shares: {m['estimates'] or UNDEFINED}.",
             f"- Leaderboards: {m['leaderboard']}; {m['bootstrap_replicates']} replicates, seed {m['seed']}."]
    if m.get("prediction_powered"):
        lines.append(f"- With the automatic judge: {m['prediction_powered']}.")
    lines += ["", "## Benchmark-wide estimates", ""]
    for est in report["studies"]:
        lines += estimates_table(est) + [""]
    lines += judge_runs_table(report.get("judge_runs") or [])
    lines += ["## Does the leaderboard change?", ""]
    for board in report["leaderboards"]:
        lines += leaderboard_tables(board)
    return lines


def verdict_section(report: dict) -> list[str]:
    """The verdict as Markdown lines under a level-2 heading: one paragraph per project (its
    names escaped: they are data)."""
    lines = ["## Verdict", ""]
    many = len(report.get("verdicts") or []) > 1
    for v in report.get("verdicts") or []:
        lines += [(f"**{md_cell(v['project'])}.** " if many else "") + md_cell(v["text"]), ""]
    return lines


def to_markdown(report: dict) -> str:
    """The report as Markdown: the verdict first, then the tables (design, methods and counts
    stated)."""
    lines = ["# Do the benchmark's conclusions survive?", "", *verdict_section(report), *markdown_sections(report)]
    return "\n".join(lines).rstrip() + "\n"


def _num(value) -> str:
    """A CSV cell: ``repr`` of a number (full precision), empty when undefined."""
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else repr(value)


CSV_HEADER = ["question", "statistic", "value", "ci_low", "ci_high", "band", "undefined_reason", "note"]


def csv_rows(report: dict) -> list[list[str]]:
    """The report as rows of the validation report's CSV (``question, statistic, value, ci_low,
    ci_high, band, undefined_reason, note``): first the verdict of each project (``question``
    "verdict", ``statistic`` the project, the paragraph in ``note``), then per estimate its design-aware share and interval, the naive
    independent (Wilson) one for comparison, the design effect, the effective n, the decided items,
    the sampled groups and the further labels to halve the interval; per leaderboard comparison each
    system's published and validated score, each pair's P(order differs) and Kendall tau (or why the
    comparison is undefined)."""
    rows = [["verdict", v["project"], "", "", "", "", "", v["text"]] for v in report.get("verdicts") or []]
    for est in report["studies"]:
        for e in est["estimates"]:
            q = f"benchmark-wide: {e['estimand']}"
            naive = e.get("naive_independent") or {}
            rows += [[q, "share (design-aware, Wilson at the effective size)", _num(e["share"]), _num(e["low"]),
                      _num(e["high"]), "", e.get("undefined") or ""],
                     [q, "share (naive independent, Wilson; comparison)", _num(naive.get("share")), _num(naive.get("low")),
                      _num(naive.get("high")), "", "" if naive else "no decided item yet"],
                     [q, "design effect", _num(e["deff"]), "", "", "", ""],
                     [q, "effective sample size", _num(e["n_effective"]), "", "", "", ""],
                     [q, "decided items", str(e["n_items"]), "", "", "", ""],
                     [q, "sampled groups", str(e["n_groups"]), "", "", "", ""],
                     [q, "further labels to halve the CI", _num(e["to_halve"]["further_labels"]), "", "", "", ""]]
            if "ppi_design" in e:
                d = e["ppi_design"]
                rows.append([q, f"share (prediction-powered, {_weight_name(est.get('judge_weight', LAM))})", _num(d.get("share")), _num(d.get("low")),
                             _num(d.get("high")), "", d.get("undefined") or ""])
    for board in report["leaderboards"]:
        if board.get("undefined"):
            rows.append([f"leaderboard {board['project']}", f"{board['measure']} published vs validated", "", "", "", "",
                         board["undefined"]])
        for c in board["comparisons"]:
            q = f"leaderboard {board['project']}: {c['published']} vs {c['validated']} ({board['measure']})"
            for r in c["systems"]:
                for side in ("published", "validated"):
                    d = r[side]
                    rows.append([q, f"{r['system']} on {c[side]} (rank {r[f'rank_{side}']})", _num(d["value"]),
                                 _num(d["low"]), _num(d["high"]), "", d["undefined"] or ""])
            note = (c.get("coverage") or {}).get("note") or ""
            for p in c["pairs"]:
                rows.append([q, f"replicates ordered differently {p['a']} vs {p['b']}",
                             _num(p["replicates_ordered_differently"]), "", "", "", p["undefined"] or ""])
                ch = p.get("order_changed") or {}
                rows.append([q, f"order changed {p['a']} vs {p['b']} (Holm-adjusted one-sided p)", _num(ch.get("p_holm")),
                             "", "", "", p["undefined"] or note])
            t = c["kendall_tau"]
            rows.append([q, "Kendall tau (published vs validated)", _num(t["value"]), _num(t["low"]), _num(t["high"]), "",
                         t["undefined"] or note])
    return [r + [""] * (len(CSV_HEADER) - len(r)) for r in rows]


def latex_escape(text: str) -> str:
    r"""Text for a LaTeX table cell, its special characters escaped.

    >>> latex_escape("50% of a_b & c")
    '50\\% of a\\_b \\& c'
    """
    for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("$", r"\$"), ("#", r"\#"),
                 ("_", r"\_"), ("{", r"\{"), ("}", r"\}"), ("~", r"\textasciitilde{}"), ("^", r"\textasciicircum{}")):
        text = text.replace(a, b)
    return text


def latex_tables(report: dict) -> list[str]:
    """The benchmark-wide estimates and each leaderboard comparison as LaTeX tabulars (booktabs)."""
    def tex(value) -> str:
        if value is None or isinstance(value, float):
            return latex_escape(md_cell(value))
        return latex_escape(" ".join(str(value).splitlines()))

    def ci(d) -> str:
        return latex_escape(UNDEFINED if not d or d.get("low") is None else f"[{md_cell(d['low'])}, {md_cell(d['high'])}]")

    lines = []
    for est in report["studies"]:
        judged = any("ppi_design" in e for e in est["estimates"])
        lines += ["", rf"% benchmark-wide estimates, study {est['study']['id']}: {tex(est['method'])}",
                  r"\begin{tabular}{lrrrrr" + ("rr" if judged else "") + "}", r"\toprule",
                  r"estimate & share & 95\% CI (design) & naive CI (Wilson) & deff & effective $n$"
                  + (r" & prediction-powered & 95\% CI (PP)" if judged else "") + r" \\", r"\midrule"]
        for e in est["estimates"]:
            pp = e.get("ppi_design") or {}
            lines.append(rf"{tex(e['estimand'])} & {tex(e['share'])} & {ci(e)} & {ci(e.get('naive_independent'))} & "
                         rf"{tex(e['deff'])} & {tex(e['n_effective'])}"
                         + (rf" & {tex(pp.get('share'))} & {ci(pp)}" if judged else "") + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}"]
    for board in report["leaderboards"]:
        for c in board["comparisons"]:
            t = c["kendall_tau"]
            v = c.get("order_changed") or {}
            note = (c.get("coverage") or {}).get("note")
            lines += ["", rf"% {tex(board['project'])}: {c['published']} vs {c['validated']} ({tex(board['measure'])}); "
                      rf"Kendall tau {tex(t['value']) if t['undefined'] is None else tex(t['undefined'])}; "
                      + ("order changed: " + tex(", ".join(f"{a}/{b}" for a, b in v["pairs"])) if v.get("any")
                         else "no pair's order changed (Holm)")
                      + (f"; {tex(note)}" if note else ""),
                      r"\begin{tabular}{lrrrr}", r"\toprule",
                      rf"system & {tex(c['published'])} & rank & {tex(c['validated'])} & rank \\", r"\midrule"]
            for r in c["systems"]:
                lines.append(rf"{tex(r['system'])} & {tex(r['published']['value'])} & {r['rank_published']} & "
                             rf"{tex(r['validated']['value'])} & {r['rank_validated']} \\")
            lines += [r"\bottomrule", r"\end{tabular}"]
    return lines
