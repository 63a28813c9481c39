"""What a question is: one value that declares everything the tool knows about it.

A :class:`Question` holds what annotators read (wording, guidelines, answers, keys, when a reason
is required) and what the rest of the tool would otherwise branch on by the question's id: which
answers count as positive (InstructIR Table 7's "Proportion of Yes response", the benchmark-wide
estimates, the naive extrapolation), the estimate's and the tables' names, whether agreement is
nominal or ordinal, what an item is about (``asked_per``: the instance, each of its passages, the
target, a choice among passages, ...), what a decided answer does to the validated qrels, the
Monitor's rows and the figures the benchmark's paper reports. Behaviour that is truly one
question's own (drawing the best passage's candidates, FollowIR's re-judging rounds, IFIR's
median match score) is a named strategy (``asked_per``, ``qrels``) that the module doing that
work dispatches on.

The seven built-in questions are declared in :mod:`annotation.questions.builtin`; a lead's own
question is declared in a study's set-up (:mod:`annotation.questions.own`) and stored with the
study. Like :data:`evaluation.measure_registry.IF_MEASURES`, the declaration is data: nothing
here reads storage.

>>> q = Question("harmful", "Is the instruction harmful?", ("Yes", "No"), positive=("Yes",),
...              on_outcome=(("Yes", "drop instance"),), qrels="answers", builtin=False)
>>> q.is_positive("Yes"), q.drop_reason("Yes"), q.drop_reason("No")
(True, 'harmful: Yes', None)
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from storage.errors import IFJudgeError, InvalidAnswer

#: what one item of a question is about, and so how a study builds its items. The first three
#: are the ones a lead's own question may use; the others are the built-in questions' strategies,
#: named where they are implemented (``annotation.studies.ITEM_BUILDERS``,
#: ``annotation.judges.items.JUDGE_ITEMS``)
ASKED_PER = {
    "instance": "the instance: one item per sampled instance, on the instance's screen",
    "passage": "each passage the original qrels judge relevant to the instance: one screen per passage",
    "target": "the instance's target passage (its first relevant passage): one screen",
    "candidates": "a choice among the target and passages of other instances of its group (best passage)",
    "gold-and-excluded": "each gold passage and each passage the instruction excludes (IFIR passage match)",
    "ranked-passages": "the top-k passages of a bare-query and an instructed run (IFIR INSTFOL)",
    "condition-documents": "each originally relevant document under the changed and the reversed instruction "
                           "(InfoSearch)",
    "narrative-documents": "each originally relevant document under a modified narrative (FollowIR re-judging)",
}
#: what a lead's own question may be asked about
OWN_ASKED_PER = ("instance", "passage", "target")
#: what a decided answer does to the qrels its study validates (``annotation.outcomes.qrels_builds``)
QRELS_EFFECTS = {
    "none": "nothing: the answers are measured, the qrels are not changed",
    "answers": "what ``on_outcome`` says for the decided answer (a lead's own question)",
    "drop-instance": "an instance whose decided answer is not positive is left out (a rule the lead can switch off)",
    "match-score": "IFIR's passage rule on the median match score (gold -> not relevant, excluded -> relevant)",
    "condition-modes": "Yes / No set the document's relevance in the changed- / reversed-validated qrels",
    "rejudged": "FollowIR's re-judging rounds set the changed- / edited-validated qrels",
}
#: the actions of ``on_outcome``, per what the question is asked about
INSTANCE_ACTIONS = ("drop instance", "keep")
PASSAGE_ACTIONS = ("relevant", "not relevant", "unchanged")
#: how an answer counts as positive
POSITIVE_RULES = ("answers", "at-least", "target")
SCALES = ("nominal", "ordinal")
#: the keys the annotate screen keeps for itself (skip, back, next, guidelines, acknowledge)
RESERVED_KEYS = ("s", "b", "n", "g", "a")
#: the qrels version a question's outcomes are built into (``annotation.outcomes.qrels_builds``)
QRELS_BUILDS = ("validated", "condition", "rejudged", "")

_STUDY_OF_ITS_OWN = ("ranked-passages", "condition-documents", "narrative-documents")
_ABOUT_A_DOCUMENT = ("passage", "target", "gold-and-excluded", "ranked-passages", "condition-documents",
                     "narrative-documents")


@dataclass(frozen=True)
class Question:
    """One question type, as declared. Only ``id``, ``prompt`` and ``categories`` are required;
    the defaults describe a nominal question about the instance that changes no qrels.

    What annotators read and answer
        ``prompt`` (the wording), ``categories`` (the declared answers, never inferred),
        ``reason_required_for`` (answers that need a reason), ``keys`` (one key per answer, or
        per passage shown), ``guidelines`` (the default text; a study may override it).
    What the tables call it
        ``name`` (short: headings, columns of the glossary), ``short`` (the Monitor's annotator
        column), ``monitor_prompt`` (Table 7's question column), ``monitor_rows`` ((statistic
        as printed, key of the agreement report), ...), ``reported`` ((source, keys): the
        figures the benchmark's own paper reports), ``benchmark`` (the benchmarks whose
        protocol asks it: the Monitor's heading), ``extrapolation`` (its key in the naive
        extrapolation, "" for none).
    What counts, how it is measured
        ``scale`` (``nominal`` / ``ordinal``: the agreement coefficients), ``numeric`` (answers
        are numbers: means), ``positive`` with ``positive_rule`` (``answers``: the answers
        listed; ``at-least``: a number >= ``threshold``; ``target``: the chosen passage is the
        dataset's target), ``estimand`` (the benchmark-wide estimate's name, ``{k}`` the
        threshold; "" for none), ``estimand_rule`` (``positive``, or ``agrees-with-changed``:
        the re-judgment agrees with the published changed qrels), ``estimand_part`` (how a part
        of its items is named: ``{part} passages``), ``summary`` ((part, statistic): its mean
        scores, IFIR Table 2) and ``summary_reversed`` ((part, statistic): the same mean read
        the other way round, ``max + 1 - mean``).
    What it is asked about, what its outcome does
        ``asked_per`` (:data:`ASKED_PER`), ``qrels_build`` (:data:`QRELS_BUILDS`), ``qrels``
        (:data:`QRELS_EFFECTS`), ``on_outcome`` ((answer, action), ...: a lead's own question),
        ``drop_rule`` (the switch of :class:`annotation.outcomes.items.ValidationRules` that turns
        ``drop-instance`` off), ``dropped_as`` (why an instance was left out, in words),
        ``threshold_option`` (the option that sets the ``at-least`` threshold: a field of
        ``ValidationRules`` such as ``likert_threshold``, or an estimate's ``match_threshold``).
    Variants a study chooses
        ``form_setting`` (the study setting that chooses a form, e.g. ``naturalness``) and
        ``forms`` ((setting value, Question), ...): the question as asked on each scale.
    """

    id: str
    prompt: str
    categories: tuple[str, ...]
    reason_required_for: tuple[str, ...] = ()
    keys: tuple[str, ...] = field(default=())
    guidelines: str = ""
    name: str = ""
    short: str = ""
    monitor_prompt: str = ""
    monitor_rows: tuple[tuple[str, str], ...] = ()
    reported: tuple[str, tuple[str, ...]] = ("", ())
    benchmark: tuple[str, ...] = ()
    extrapolation: str = ""
    scale: str = "nominal"
    numeric: bool = False
    positive: tuple[str, ...] = ()
    positive_rule: str = "answers"
    threshold: int | None = None
    estimand: str = ""
    estimand_rule: str = "positive"
    estimand_part: str = ""
    summary: tuple[tuple[str, str], ...] = ()
    summary_reversed: tuple[tuple[str, str], ...] = ()
    asked_per: str = "instance"
    qrels_build: str = "validated"
    qrels: str = "none"
    on_outcome: tuple[tuple[str, str], ...] = ()
    drop_rule: str = ""
    dropped_as: str = ""
    threshold_option: str = ""
    form_setting: str = ""
    forms: tuple[tuple[str, "Question"], ...] = field(default=(), compare=False, hash=False, repr=False)
    builtin: bool = True

    # ------------------------------------------------------------------ what annotators see

    def label(self, value: str) -> str:
        """How an answer reads on its button (``not relevant`` -> ``Not relevant``); the stored
        value is unchanged."""
        return value[:1].upper() + value[1:]

    def check(self, value: str, reason: str, *, categories: tuple[str, ...] | None = None) -> None:
        """Refuse a value outside the declared categories, or a missing reason where one is required."""
        allowed = categories or self.categories
        if value not in allowed:
            raise InvalidAnswer(
                f"{self.id}: answer {value!r} is not one of {', '.join(allowed)}"
            )
        if value in self.reason_required_for and not (reason or "").strip():
            raise InvalidAnswer(f"{self.id}: a reason is required when the answer is {value}")

    @property
    def title(self) -> str:
        """The short name the tables print (``name``, else the id made readable)."""
        return self.name or (self.id.replace("_", " ")[:1].upper() + self.id.replace("_", " ")[1:])

    # ------------------------------------------------------------------ what its items are

    @property
    def answers_are_passages(self) -> bool:
        """An answer is one of the passages shown (the best passage): the item's candidates are
        its answers, shuffled per annotator, coded by position for agreement."""
        return self.asked_per == "candidates"

    @property
    def about_document(self) -> bool:
        """An item is about one document (shown beside the instruction and query)."""
        return self.asked_per in _ABOUT_A_DOCUMENT

    @property
    def needs_documents(self) -> bool:
        """Its items show passages: a project without documents cannot ask it."""
        return self.about_document or self.answers_are_passages

    @property
    def on_instance_screen(self) -> bool:
        """Asked on the instance's own screen (beside the other instance questions)."""
        return self.asked_per in ("instance", "candidates")

    @property
    def study_of_its_own(self) -> bool:
        """Asked in a study of its own, built by its own module (INSTFOL, condition, re-judging)."""
        return self.asked_per in _STUDY_OF_ITS_OWN

    @property
    def design(self) -> str:
        """How a study of it samples the benchmark (:func:`annotation.estimates.sampling.study_design`):
        ``instances`` (query groups, then instances), ``condition`` (queries) or ``relevance``
        (the documents of re-judged queries)."""
        return {"condition-documents": "condition", "narrative-documents": "relevance"}.get(self.asked_per, "instances")

    # ------------------------------------------------------------------ what counts

    def is_positive(self, value: str | None, *, gold: str | None = None, threshold: int | None = None) -> bool | None:
        """Whether a decided answer counts as positive (None: it cannot tell, e.g. a passage
        chosen for an item without a target, or no answer).

        >>> Question("m", "?", ("1", "2", "3"), positive_rule="at-least", threshold=2).is_positive("3")
        True
        >>> Question("b", "?", (), positive_rule="target").is_positive("d1", gold=None) is None
        True
        """
        if value is None:
            return None
        if self.positive_rule == "target":
            return None if not gold else value == gold
        if self.positive_rule == "at-least":
            cut = self.threshold if threshold is None else threshold
            return value.lstrip("-").isdigit() and int(value) >= cut
        return value in self.positive

    def threshold_in(self, options) -> int | None:
        """The ``at-least`` threshold ``options`` set for this question (an object's attribute or
        a mapping's key named ``threshold_option``), None when they do not set it."""
        if not self.threshold_option or options is None:
            return None
        if isinstance(options, dict):
            return options.get(self.threshold_option)
        return getattr(options, self.threshold_option, None)

    @property
    def positive_words(self) -> str:
        """The positive answers in words, as a table names its share (``Yes``, ``A or B``)."""
        return " or ".join(self.positive) if self.positive else "positive"

    def drop_reason(self, value: str | None, *, gold: str | None = None, rules=None) -> str | None:
        """Why a decided answer leaves its instance out of the validated qrels (None: it stays).
        ``rules``: :class:`annotation.outcomes.items.ValidationRules` (its switch ``drop_rule`` and its
        threshold ``threshold_option``)."""
        if value is None:
            return None
        if self.qrels == "answers":
            return f"{self.id}: {value}" if dict(self.on_outcome).get(value) == "drop instance" else None
        if self.qrels != "drop-instance" or (self.drop_rule and not getattr(rules, self.drop_rule, True)):
            return None
        threshold = self.threshold_in(rules)
        if self.is_positive(value, gold=gold, threshold=threshold) is not False:
            return None
        return self.dropped_as or f"{self.id}: not {self.positive_words}"

    def can_drop(self, rules=None) -> bool:
        """Whether an outcome of this question can leave an instance out under ``rules``."""
        if self.qrels == "answers":
            return any(a == "drop instance" for _, a in self.on_outcome)
        return self.qrels == "drop-instance" and (not self.drop_rule or bool(getattr(rules, self.drop_rule, True)))

    def passage_action(self, value: str | None) -> str:
        """What a decided answer does to the judged passage (``relevant``, ``not relevant`` or
        ``unchanged``): a lead's own per-passage question's ``on_outcome``."""
        return dict(self.on_outcome).get(value, "unchanged") if self.qrels == "answers" else "unchanged"

    @property
    def changes_passages(self) -> bool:
        """A decided answer can change a passage's judgment (a lead's own per-passage question)."""
        return self.qrels == "answers" and self.about_document and any(a != "unchanged" for _, a in self.on_outcome)

    # ------------------------------------------------------------------ variants

    def form(self, settings: dict | None = None) -> "Question":
        """The question as a study asks it: the form its settings choose (``naturalness``:
        ``yesno`` | ``likert``), itself when it has no forms.

        >>> from annotation.questions.builtin import NATURALNESS
        >>> NATURALNESS.form({"naturalness": "likert"}).categories
        ('1', '2', '3', '4', '5')
        """
        if not self.forms:
            return self
        forms = dict(self.forms)
        chosen = (settings or {}).get(self.form_setting, self.forms[0][0])
        if chosen not in forms:
            raise IFJudgeError(f"{self.form_setting} must be {' or '.join(repr(f) for f in forms)}, got {chosen!r}")
        return forms[chosen]

    def with_keys(self, keys: tuple[str, ...]) -> "Question":
        return replace(self, keys=tuple(keys))
