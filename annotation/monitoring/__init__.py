"""What the lead watches while a study runs: the InstructIR Table 7 view, per-annotator progress and
agreement, disagreements and reasons (``monitor``), the same as the Monitor page's readable tables
(``view``), every study's progress on the lead's landing view (``overview``), the mean scores of the
1-5 questions in the shape of IFIR's Table 2 (``scales``) and each annotator's habits
(``habits``). The benchmark-wide estimates are :mod:`annotation.estimates`.
"""
from annotation.package_face import lazy_face

#: each public name -> the module of this package that defines it (imported on first use:
#: :mod:`annotation.package_face`)
_WHERE = {
    "decision_inputs": "monitor", "item_groups": "monitor", "study_monitor": "monitor", "table7": "monitor",
    "disagreement_page": "view", "page_slice": "view", "reason_page": "view", "table7_rows": "view",
    "study_progress": "overview", "unresolved_counts": "overview",
    "mean_interval": "scales", "scale_summary": "scales",
    "annotator_habits": "habits", "others_agreement": "habits",
}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_face(__name__, _WHERE)
