"""Benchmark-wide estimates from a study's sample: how the study sampled the benchmark, read back
from its settings (``sampling``), what each question's estimate is a share of (``estimands``) and
the shares with intervals that follow the design (``benchmark``), computed by the pure estimators of
:mod:`annotation.survey`.
"""
from annotation.package_face import lazy_face

#: each public name -> the module of this package that defines it (imported on first use:
#: :mod:`annotation.package_face`)
_WHERE = {
    "benchmark_estimates": "benchmark", "design_estimate": "benchmark", "estimate_json": "benchmark",
    "labels_to_halve": "benchmark", "require_study": "benchmark",
    "Estimand": "estimands", "estimand_name": "estimands", "estimand_rows": "estimands",
    "study_design": "sampling",
}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_face(__name__, _WHERE)
