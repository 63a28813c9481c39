"""From labels to decisions: each item's outcome and provenance (``items``, computed over arrays by
``table`` for large studies), what a lead settles (``adjudication``, with the named policies of
``resolution``) and the validated qrels versions built from the studies a lead names, with provenance
per judgment (``qrels_builds``). See docs/protocol.md, "Adjudication".
"""
from annotation.package_face import lazy_face

#: each public name -> the module of this package that defines it (imported on first use:
#: :mod:`annotation.package_face`)
_WHERE = {
    "ValidationRules": "items", "instance_decisions": "items", "item_outcomes": "items",
    "labels_frame": "items", "question_labels": "items", "validated_qrels": "items",
    "OutcomeTable": "table", "outcome_table": "table",
    "ItemView": "adjudication", "item_view": "adjudication", "next_in_queue": "adjudication",
    "queue": "adjudication", "queue_counts": "adjudication", "record": "adjudication",
    "SHOW": "resolution", "UNRESOLVED_POLICIES": "resolution",
    "IncompleteStudy": "qrels_builds", "UnresolvedJudgments": "qrels_builds", "build_rejudged": "qrels_builds",
    "build_validated": "qrels_builds", "build_versions": "qrels_builds", "describe_studies": "qrels_builds",
    "store_build": "qrels_builds", "store_validated_qrels": "qrels_builds", "store_versions": "qrels_builds",
    "study_completeness": "qrels_builds",
}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_face(__name__, _WHERE)
