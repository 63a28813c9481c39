"""Humans where the judge is likely wrong: a study drawn stratified by a judge run's answers.

A judge run (:mod:`storage.judge_labels`) answered a Yes / No question over the benchmark. Each
query group of the project gets a **judge stratum** from its instances' answers:

- ``judge No``: the judge answered No for at least one of its instances;
- ``judge unsure``: otherwise, a score (the judge's probability of Yes, from log-probabilities)
  lies inside the band ``unsure = (low, high)`` the lead gave (none without a band);
- ``judge Yes``: every answered instance Yes;
- ``not judged``: no answer of the run (a group added after the run, an error).

Groups are then drawn per stratum at the stratum's own rate ``f_h``, exactly as per-domain rates
are (:func:`annotation.studies.sample_by_judge`: :func:`annotation.studies.sample_instances` with ``domain_fractions``: ``n_h = max(1,
round(f_h N_h))``, then up to ``per_group`` instances of each drawn group). The study's settings
keep the plan (``judge_strata``: the run, the group -> stratum map, the rates), and
:func:`annotation.estimates.sampling.study_design` reads the strata back, so every estimate weights a
group by ``N_h / n_h`` (:class:`annotation.survey.design.SampleDesign`): the stratified ratio
estimator stays unbiased however unequal the rates, and its variance is the stratified one.

**Allocation** (:func:`allocate`): explicit rates per stratum, or the study's total
``round(group_fraction * N)`` groups by Neyman allocation ``n_h ~ N_h sqrt(p_h (1 - p_h))``
(Neyman 1934; Cochran 1977, §5.5), where ``p_h`` is the share of Yes the humans are expected to
give in stratum h: measured on the project's human outcomes of the items the judge also answered
(a pilot: :func:`pilot_shares`, used where a stratum has at least :data:`PILOT_MIN` decided
items), else assumed (:data:`ASSUMED_SHARES`: half of the judge's No are wrong, 1% of its Yes).

**What it buys** (:func:`width_preview`): the 95% half-width ``1.96 sqrt(V)`` of the stratified
estimator against a plain random sample of the same number of groups, with groups as the units
(one share per group; clustering within groups and the per-group stage are the same in both
designs and left out)::

    V_strat = sum_h W_h^2 (1 - n_h/N_h) p_h (1 - p_h) / n_h,      W_h = N_h / N
    V_plain = (1 - n/N) p (1 - p) / n,                            p = sum_h W_h p_h

Shares are clipped to [0.01, 0.99] so that a stratum assumed unanimous still gets groups.

Examples
--------
>>> sizes = {"judge No": 60, "judge Yes": 1940}
>>> shares = {"judge No": 0.5, "judge Yes": 0.99}
>>> allocate(sizes, group_fraction=0.1, shares=shares)
{'judge No': 27, 'judge Yes': 173}
>>> p = width_preview(sizes, {"judge No": 27, "judge Yes": 173}, shares)
>>> round(p["half_width"], 4), round(p["plain_half_width"], 4)
(0.0144, 0.0204)
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict

from annotation.judges.strata_map import NO, NOT_JUDGED, STRATA, UNSURE, YES, stratum_of
from annotation.questions.builtin import BUILTIN_QUESTIONS
from annotation.studies import domain_sample_sizes, sample_by_judge
from storage import judge_labels as store
from storage import projects, studies
from storage.db import Database
from storage.errors import IFJudgeError

__all__ = ["NO", "UNSURE", "YES", "NOT_JUDGED", "STRATA", "ASSUMED_SHARES", "stratum_of", "stratum_name",
           "group_strata", "stratifying_runs", "pilot_shares", "expected_shares", "allocate", "width_preview", "plan", "preview_text",
           "sample_by_judge", "planned_sizes", "describe"]
#: assumed share of human Yes per stratum when no pilot measures it
ASSUMED_SHARES = {NO: 0.5, UNSURE: 0.8, YES: 0.99, NOT_JUDGED: 0.95}
#: decided items a stratum needs before its pilot share replaces the assumed one
PILOT_MIN = 10
Z = 1.959963984540054


def stratum_name(text: str) -> str:
    """A judge stratum from what a lead types: ``No``, ``unsure``, ``Yes``, ``not judged`` (or the
    full names, case-insensitive).

    >>> stratum_name("no"), stratum_name("judge Yes"), stratum_name("not judged")
    ('judge No', 'judge Yes', 'not judged')
    """
    key = text.strip().lower()
    for h in STRATA:
        if key in (h.lower(), h.lower().removeprefix("judge ")):
            return h
    raise IFJudgeError(f"no judge stratum {text!r}; the strata are No, unsure, Yes and not judged")


def group_strata(db: Database, run_id: int, *, unsure: tuple[float, float] | None = None) -> dict[str, str]:
    """Query group -> judge stratum for every instructed instance's group of the run's project
    (module docstring). Raises for a run whose answers are not Yes / No."""
    from evaluation.judges.questions import judge_question

    run = store.get_run(db, run_id)
    q = judge_question(run["question"])
    answers: dict[str, list[tuple[str, float | None]]] = defaultdict(list)
    for lab in store.labels(db, run_id, with_raw=False):
        if lab["value"] is not None:
            answers[lab["instance_id"]].append((q.estimand(lab["value"], lab["payload"]), lab["score"]))
    values = {v for a in answers.values() for v, _ in a}
    if values - {"Yes", "No"}:
        raise IFJudgeError(f"judge run {run_id} answers {run['question']} with {', '.join(sorted(values - {'Yes', 'No'}))}: "
                           "a study is stratified by a judge's Yes / No answers (validity, naturalness Yes/No, "
                           "best_passage, condition)")
    if not answers:
        raise IFJudgeError(f"judge run {run_id} has no answer yet: run it first (ifjudge judge run)")
    rank = {NO: 0, UNSURE: 1, YES: 2, NOT_JUDGED: 3}
    out: dict[str, str] = {}
    for inst in _pool(db, run["project_id"]):
        here = NOT_JUDGED
        for value, score in answers.get(inst["instance_id"], ()):
            s = NO if value == "No" else (UNSURE if unsure and score is not None and unsure[0] <= score <= unsure[1]
                                          else YES)
            here = min(here, s, key=rank.get)
        g = inst["group_id"]
        out[g] = min(out.get(g, NOT_JUDGED), here, key=rank.get)
    return dict(sorted(out.items()))


def stratifying_runs(db: Database, project_id: int) -> list[dict]:
    """The project's judge runs a study can be stratified by: with answers, of an instance question
    answered Yes / No (validity, naturalness on Yes / No, best passage), newest first.

    >>> from storage.db import connect
    >>> from annotation.demo import load_demo
    >>> db = connect(":memory:"); _ = load_demo(db)
    >>> stratifying_runs(db, 1)
    []
    """
    return [r for r in store.list_runs(db, project_id) if r["answers"] and stratifies(r["question"], r["parameters"])]


def stratifies(question_id: str, parameters: dict) -> bool:
    """Whether a judge run of ``question_id`` asked with ``parameters`` can stratify a study: the
    question's declaration estimates a share of instances (asked per instance, or per instance among
    its candidate passages) and the run's form of it is answered by category (Yes / No, a passage),
    not on a scale.

    >>> stratifies("validity", {}), stratifies("naturalness", {"scale": "likert"}), stratifies("condition", {})
    (True, False, False)
    """
    q = BUILTIN_QUESTIONS.get(question_id)
    if q is None or q.asked_per not in ("instance", "candidates") or q.estimand_rule != "positive":
        return False
    form = dict(q.forms).get(parameters.get("scale"), q)
    return form.scale == "nominal"


def _pool(db: Database, project_id: int) -> list[dict]:
    """The instances a study samples from (instructed ones where the project has any)."""
    pool = projects.instances(db, project_id)
    return [i for i in pool if i["instruction"].strip()] if any(i["instruction"].strip() for i in pool) else pool


def pilot_shares(db: Database, run_id: int, group_stratum: dict[str, str]) -> dict[str, tuple[int, int]]:
    """Per judge stratum ``(human Yes, decided items)`` over the project's studies that ask the
    run's question: the humans' outcomes of the items in the stratum's groups."""
    from annotation.judges.agreement import paired_items

    run = store.get_run(db, run_id)
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    seen: set[tuple[str, str]] = set()
    for s in studies.list_studies(db, run["project_id"]):
        if run["question"] not in s["questions"]:
            continue
        for r in paired_items(db, s["id"], run)["rows"]:
            key = (r["instance_id"], r["doc_id"])
            if r["human"] not in ("Yes", "No") or key in seen:
                continue
            seen.add(key)
            c = counts[group_stratum.get(r["group"], NOT_JUDGED)]
            c[0] += r["human"] == "Yes"
            c[1] += 1
    return {h: (c[0], c[1]) for h, c in counts.items()}


def expected_shares(sizes: dict[str, int], pilot: dict[str, tuple[int, int]] | None = None,
                    assumed: dict[str, float] | None = None) -> tuple[dict[str, float], dict[str, str]]:
    """``(p_h, source_h)``: the lead's assumed share where given, else the pilot's where it has
    :data:`PILOT_MIN` decided items, else :data:`ASSUMED_SHARES`."""
    unknown = sorted(set(assumed or {}) - set(STRATA))
    if unknown:
        raise IFJudgeError(f"no judge stratum {', '.join(map(repr, unknown))}; the strata are {', '.join(STRATA)}")
    p, src = {}, {}
    for h in sizes:
        yes, n = (pilot or {}).get(h, (0, 0))
        if assumed and h in assumed:
            p[h], src[h] = float(assumed[h]), "given"
        elif n >= PILOT_MIN:
            p[h], src[h] = yes / n, f"pilot: {yes} Yes of {n} human outcomes"
        else:
            p[h], src[h] = ASSUMED_SHARES[h], "assumed" + (f"; the pilot has only {n} outcomes" if n else "")
        if not 0 <= p[h] <= 1:
            raise IFJudgeError(f"the share of Yes in {h} must be in [0, 1], got {p[h]}")
    return p, src


def _clip(p: float) -> float:
    return min(max(p, 0.01), 0.99)


def allocate(sizes: dict[str, int], *, group_fraction: float, shares: dict[str, float]) -> dict[str, int]:
    """Neyman allocation of ``round(group_fraction * N)`` groups: ``n_h ~ N_h sqrt(p_h (1 - p_h))``
    (shares clipped), each stratum at least one group and at most all of them (largest remainder;
    :func:`annotation.studies.domain_sample_sizes`)."""
    return domain_sample_sizes(sizes, group_fraction=group_fraction, allocation="neyman",
                               anticipated_shares={h: _clip(shares[h]) for h in sizes})


def width_preview(sizes: dict[str, int], sample: dict[str, int], shares: dict[str, float]) -> dict:
    """The 95% half-width of the judge-stratified estimate and of a plain sample of the same
    number of groups (module docstring), and their ratio."""
    N = sum(sizes.values())
    n = sum(sample.get(h, 0) for h in sizes)
    if N == 0 or n == 0:
        raise IFJudgeError("no group to sample")
    p = {h: _clip(shares[h]) for h in sizes}
    v_st = sum((Nh / N) ** 2 * (1 - sample[h] / Nh) * p[h] * (1 - p[h]) / sample[h]
               for h, Nh in sizes.items() if Nh > 0)
    pbar = sum(Nh / N * p[h] for h, Nh in sizes.items())
    v_plain = (1 - n / N) * pbar * (1 - pbar) / n
    hw, plain = Z * math.sqrt(v_st), Z * math.sqrt(v_plain)
    return {"groups": n, "population_groups": N, "expected_share": pbar, "half_width": hw,
            "plain_half_width": plain, "width_ratio": hw / plain if plain > 0 else float("nan"),
            "plain_groups_for_same_width": (math.ceil(1 / (v_st / (pbar * (1 - pbar)) + 1 / N)) if v_st > 0 else N)}


def plan(db: Database, *, project: dict, run_id: int, group_fraction: float, fractions: dict[str, float] | None = None,
         assumed_shares: dict[str, float] | None = None, unsure: tuple[float, float] | None = None) -> dict:
    """The judge-stratified sample of ``project`` (its row, :func:`storage.projects.get_project`) before it is drawn: ``{"settings"`` (the
    ``judge_strata`` of :class:`annotation.studies.StudySettings`), ``"strata"`` (per stratum its
    groups ``N``, the groups to draw ``n``, the rate, the expected share and where it comes from),
    ``"preview"`` (:func:`width_preview`), ``"text"`` (the same in sentences)``}``.

    ``fractions``: the rate of each stratum (as ``--domain-fractions``); without them, the
    study's ``round(group_fraction * N)`` groups by Neyman allocation (:func:`allocate`).
    """
    run = store.get_run(db, run_id)
    if run["project_id"] != project["id"]:
        raise IFJudgeError(f"judge run {run_id} judged another project, not {project['name']!r}")
    if unsure is not None and not 0 <= unsure[0] <= unsure[1] <= 1:
        raise IFJudgeError(f"the unsure band must be LOW,HIGH with 0 <= LOW <= HIGH <= 1, got {unsure}")
    gs = group_strata(db, run_id, unsure=unsure)
    sizes = {h: n for h in STRATA if (n := Counter(gs.values())[h])}
    shares, source = expected_shares(sizes, pilot_shares(db, run_id, gs), assumed_shares)
    if fractions is not None:
        unknown = sorted(set(fractions) - set(STRATA))
        if unknown:
            raise IFJudgeError(f"no judge stratum {', '.join(map(repr, unknown))}; the strata are {', '.join(STRATA)}")
        missing = sorted(set(sizes) - set(fractions))
        if missing:
            raise IFJudgeError(f"a rate is needed for every judge stratum the project has; none for {', '.join(missing)}")
        n_h = domain_sample_sizes(sizes, group_fraction=1.0, domain_fractions={h: fractions[h] for h in sizes})
        rates = {h: float(fractions[h]) for h in sizes}
    else:
        if not 0 < group_fraction <= 1:
            raise IFJudgeError(f"group fraction must be in (0, 1], got {group_fraction}")
        n_h = allocate(sizes, group_fraction=group_fraction, shares=shares)
        rates = {h: n_h[h] / sizes[h] for h in sizes}
    preview = width_preview(sizes, n_h, shares)
    settings = {"run": run_id, "question": run["question"], "model": run["model"],
                "prompt_version": run["prompt_version"], "unsure": list(unsure) if unsure else None,
                "fractions": {h: rates.get(h, group_fraction) for h in STRATA},
                "allocation": "rates" if fractions is not None else "neyman",
                "shares": {h: shares[h] for h in sizes}, "group_stratum": gs}
    strata = [{"stratum": h, "groups": sizes[h], "sampled": n_h[h], "rate": rates[h], "share": shares[h],
               "share_source": source[h]} for h in sizes]
    return {"settings": settings, "strata": strata, "preview": preview, "text": preview_text(strata, preview)}


def preview_text(strata: list[dict], preview: dict) -> str:
    """The plan and what it buys, in sentences (for the CLI and the set-up page)."""
    parts = "; ".join(f"{s['stratum']}: {s['sampled']} of {s['groups']} groups (expected share of Yes "
                      f"{s['share']:.2f}, {s['share_source']})" for s in strata)
    return (f"Judge-stratified sample: {parts}. Expected 95% interval ±{preview['half_width'] * 100:.1f} points, "
            f"against ±{preview['plain_half_width'] * 100:.1f} for a plain random sample of the same "
            f"{preview['groups']} groups (width ratio {preview['width_ratio']:.2f}; a plain sample would need about "
            f"{preview['plain_groups_for_same_width']} groups for the same width). Analytic, groups as units, at the "
            "expected shares; every estimate weights each stratum by groups over sampled groups.")


def planned_sizes(judge_strata: dict, sizes: dict[str, int]) -> dict[str, int]:
    """The groups the stored plan draws from strata of ``sizes`` groups."""
    return domain_sample_sizes(sizes, group_fraction=1.0,
                               domain_fractions={h: judge_strata["fractions"][h] for h in sizes})


def describe(judge_strata: dict) -> str:
    """How the groups were drawn, in words (the design's description)."""
    rates = ", ".join(f"{h} {f:.3g}" for h, f in judge_strata["fractions"].items() if h in judge_strata["shares"])
    how = "Neyman allocation at expected shares" if judge_strata["allocation"] == "neyman" else "the lead's rates"
    return (f"query groups per judge stratum of judge run {judge_strata['run']} ({judge_strata['question']}, model "
            f"{judge_strata['model']}, prompt {judge_strata['prompt_version'] or '(default)'}) at its own rate "
            f"({rates}; {how}); intervals: each stratum's design Wilson interval combined by MOVER")
