"""Survey estimators, pure: a sample's design (weights, the linearised covariance of totals:
``design``), the intervals of a share from a complex sample (design Wilson, Korn-Graubard, MOVER:
``intervals``; per stratum combined by MOVER: ``stratified_wilson``) and the prediction-powered share
of a judge corrected by the humans' sample (``prediction_powered``). Reads no storage and knows no
study: :mod:`annotation.estimates` reads a study and calls these (tests/test_layers.py holds it to
that). See docs/statistics.md.
"""
from annotation.package_face import lazy_face

#: each public name -> the module of this package that defines it (imported on first use:
#: :mod:`annotation.package_face`)
_WHERE = {
    "SampleDesign": "design",
    "agresti_min_floor": "intervals", "effective_size": "intervals", "korn_graubard": "intervals",
    "mover": "intervals", "wilson_design": "intervals",
    "mover_wilson": "stratified_wilson",
    "group_folds": "prediction_powered", "prediction_powered_share": "prediction_powered",
    "weight_noise": "prediction_powered",
}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_face(__name__, _WHERE)
