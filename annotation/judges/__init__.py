"""An automatic judge beside the humans: the items it answers, built by a study's rules
(``items``), starting and finishing a judge run (``runs``), its answers read from a file and turned
into an estimate's 1 / 0 (``labels``), the judge measured against the human outcomes (``agreement``),
INSTFOL scored by a judge run (``instfol``), and a study drawn stratified by a judge run's answers
(``strata``; the strata as the sampler reads them: ``strata_map``).
"""
from annotation.package_face import lazy_face

#: each public name -> the module of this package that defines it (imported on first use:
#: :mod:`annotation.package_face`)
_WHERE = {
    "judge_items": "items", "study_items": "items",
    "fit_threshold": "runs", "judge_settings": "runs", "prepare_run": "runs", "save_judge_settings": "runs",
    "judge_yes": "labels", "read_judge_labels": "labels",
    "judge_report": "agreement", "measured_runs": "agreement", "paired_items": "agreement",
    "provenance": "agreement", "runs_for_study": "agreement",
    "instfol_from_judge": "instfol",
    "describe": "strata", "group_strata": "strata", "plan": "strata", "planned_sizes": "strata",
    "stratifying_runs": "strata",
    "STRATA": "strata_map", "as_domains": "strata_map", "stratum_of": "strata_map",
}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_face(__name__, _WHERE)
