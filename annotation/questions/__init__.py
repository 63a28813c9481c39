"""The questions annotators answer: what a question is (``question_type``: one :class:`Question`
declares its wording, answers, keys, reason rule, what counts as positive, its estimand and how its
labels decide an outcome), the seven built-in declarations (``builtin``), a lead's own questions read
from a TOML or YAML file or the Set-up page (``own``), and the questions as a study asks them
(``study``: a study's snapshot, the annotators' instructions). See docs/questions.md.
"""
from annotation.package_face import lazy_face

#: each public name -> the module of this package that defines it (imported on first use:
#: :mod:`annotation.package_face`)
_WHERE = {
    "Question": "question_type",
    "BUILTIN_QUESTIONS": "builtin", "GUIDELINES": "builtin",
    "InvalidQuestion": "own", "assign_keys": "own", "declare": "own", "questions_from_text": "own",
    "read_questions": "own", "snapshot": "own",
    "INSTANCE_QUESTIONS": "study", "PROJECT_GOALS": "study", "labeler_instructions": "study",
    "question": "study", "screen_shortcuts": "study", "study_question": "study", "study_questions": "study",
}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_face(__name__, _WHERE)
