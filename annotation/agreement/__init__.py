"""Agreement among annotators: the coefficients of one question's labels and their intervals
(docs/statistics.md; InstructIR Table 7), and the one majority rule every decision from labels goes
through. Reads no storage: it takes label tables and count matrices, never a study
(tests/test_layers.py holds it to that).

Modules: ``report`` (the agreement report of one question, the entry point of ``ifjudge agreement``,
the Monitor page and the exports), ``stats`` (the coefficients), ``kernels`` (their vectorised
per-item sums), ``bootstrap`` (seeded percentile and BCa intervals), ``data`` (a long label table
encoded as count matrices), ``majority`` (the majority rule).
"""
from annotation.package_face import lazy_face

#: each public name -> the module of this package that defines it (imported on first use:
#: :mod:`annotation.package_face`)
_WHERE = {
    "agreement_report": "report",
    "cohen_kappa": "stats", "cohen_kappa_table": "stats", "fleiss_kappa": "stats", "gwet_ac1": "stats",
    "interval_values": "stats", "krippendorff_alpha": "stats", "landis_koch_band": "stats",
    "majority_vote": "stats", "percent_agreement": "stats", "randolph_kappa": "stats",
    "cohen_from_tables": "kernels", "kappa_from_sums": "kernels", "summed_features": "kernels",
    "bootstrap_statistics": "bootstrap", "cluster_draws": "bootstrap", "observed_statistics": "bootstrap",
    "percentile_interval": "bootstrap",
    "DuplicateLabel": "data", "EncodedLabels": "data", "MissingValue": "data", "UnknownLabel": "data",
    "encode_labels": "data", "encoded": "data",
    "decide": "majority", "majority_index": "majority",
}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_face(__name__, _WHERE)
