"""The judge strata of a stored plan as the per-domain sampler reads them: names, and a plan's
groups and rates in the shape of :func:`annotation.studies.sample_instances`' ``subsets`` and
``domain_fractions`` (the plan itself: :mod:`annotation.judges.strata`, which imports the sampler;
this module does not, so that the sampler can import it)."""
from __future__ import annotations

NO, UNSURE, YES, NOT_JUDGED = "judge No", "judge unsure", "judge Yes", "not judged"
STRATA = (NO, UNSURE, YES, NOT_JUDGED)


def stratum_of(judge_strata: dict, group: str) -> str:
    """The judge stratum a stored plan gives ``group`` (a group the judge run did not see: ``not judged``).

    >>> stratum_of({"group_stratum": {"q1": NO}}, "q1"), stratum_of({"group_stratum": {}}, "q2")
    ('judge No', 'not judged')
    """
    return judge_strata["group_stratum"].get(group, NOT_JUDGED)


def as_domains(pool: list[dict], judge_strata: dict) -> tuple[list[dict], dict[str, str], dict[str, float]]:
    """``(instances, subsets, domain_fractions)`` for :func:`annotation.studies.sample_instances`:
    each instance's ``query_id`` replaced by its group (a group's stratum is its own, whatever its
    first query), ``subsets`` group -> judge stratum, and the plan's rate of each stratum present.

    >>> insts = [{"instance_id": "a_1", "group_id": "a", "query_id": "qa"}]
    >>> as_domains(insts, {"group_stratum": {"a": NO}, "fractions": {NO: 1.0, YES: 0.1}})[1:]
    ({'a': 'judge No'}, {'judge No': 1.0})
    """
    subsets = {i["group_id"]: stratum_of(judge_strata, i["group_id"]) for i in pool}
    rates = {h: judge_strata["fractions"][h] for h in sorted(set(subsets.values()))}
    return [{**i, "query_id": i["group_id"]} for i in pool], subsets, rates
