"""A lead's own question, declared without code: from a TOML or YAML file
(``ifjudge study create --question-file FILE``) or the Set-up page, validated on load, and stored
with the study that asks it (its snapshot: later edits of the file never change what the study's
labels meant).

The fields (docs/questions.md; worked examples in ``docs/examples/``):

========================  ====================================================================
``id``                    required; lower case letters, digits and ``_`` (not a built-in id)
``wording``               required; the question as annotators read it
``name``                  the short name tables print (default: the id in words)
``guidelines``            shown beside the question and before the first item
``categories``            the answers: a list (at least two), or ``"yes-no"``
``scale``                 instead of ``categories``: ``[low, high]``, whole numbers (an ordinal
                          scale, e.g. ``[1, 5]``)
``ordinal``               ``true`` when the listed answers are ordered (agreement then uses
                          ordinal coefficients: Krippendorff's ordinal alpha, weighted Cohen)
``keys``                  one key per answer (single letters or digits, none of s b n g a);
                          default: free digits of its screen
``reason_required_for``   answers that need a reason
``positive``              the answers that count as positive (Table 7's share, the estimates);
                          default ``["Yes"]`` for ``yes-no``, required otherwise
``asked_per``             ``instance`` (default), ``passage`` (each passage the original qrels
                          judge relevant to the instance) or ``target`` (the instance's target)
``on_outcome``            what a decided answer does to the validated qrels: per instance
                          ``drop instance`` / ``keep``; per passage ``relevant`` /
                          ``not relevant`` / ``unchanged`` (default: nothing, only measured)
``estimand``              the benchmark-wide estimate's name (default: ``<name>: <positive>``)
========================  ====================================================================

>>> q = declare({"id": "harmful", "wording": "Is the instruction harmful?", "categories": "yes-no",
...              "reason_required_for": ["Yes"], "on_outcome": {"Yes": "drop instance"}})
>>> q.categories, q.positive, q.drop_reason("Yes"), q.scale
(('Yes', 'No'), ('Yes',), 'harmful: Yes', 'nominal')
>>> declare({"id": "x", "wording": "?", "categories": []})
Traceback (most recent call last):
...
annotation.questions.own.InvalidQuestion: question 'x', field 'categories': no answer declared: give at least two (a list), "yes-no" or a scale [low, high]
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping

from annotation.questions.builtin import ALPHA_ORDINAL, BUILTIN_QUESTIONS, MEAN_SCORE, RANDOLPH, YES_NO
from annotation.questions.question_type import (INSTANCE_ACTIONS, OWN_ASKED_PER, PASSAGE_ACTIONS, RESERVED_KEYS, Question)
from storage.errors import IFJudgeError, ImportFailure

FIELDS = ("id", "wording", "name", "guidelines", "categories", "scale", "ordinal", "keys", "reason_required_for",
          "positive", "asked_per", "on_outcome", "estimand")
ID = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
#: ids no lead's question may take: the built-in questions and the FollowIR expert's edit
TAKEN_IDS = (*BUILTIN_QUESTIONS, "narrative_edit")
MAX_SCALE = 11  # answers on one scale (0-10)
#: the keys a question without declared keys gets, the first free ones of its screen
KEY_POOL = tuple("1234567890cdefhijklmopqrtuvwxyz")


#: YAML 1.1 reads an unquoted Yes / No as true / false
_UNQUOTED = 'an unquoted Yes or No in YAML reads as true or false: quote the answer ("Yes")'


class InvalidQuestion(ImportFailure):
    """A question declaration was refused; names the file and line (for a file) and the field."""


def declare(fields: Mapping, *, source: str | None = None, lines=None) -> Question:
    """The :class:`~annotation.questions.question_type.Question` a lead declares with ``fields`` (the
    table above), validated: refused with :class:`InvalidQuestion` naming the field (and, with
    ``source``, the file and the line: ``lines.line_of(field)``,
    :class:`formats.question_file.DeclaredQuestion`)."""
    qid = fields.get("id")

    def fail(name: str, message: str):
        named = isinstance(qid, str) and bool(qid)
        if source:
            raise InvalidQuestion(source, lines.line_of(name) if lines is not None else None, name,
                                  (f"question {qid!r}: " if named else "") + message)
        raise InvalidQuestion(f"question {qid!r}" if named else "the question", None, name, message)

    unknown = [k for k in fields if k not in FIELDS]
    if unknown:
        fail(str(unknown[0]), f"not a field of a question declaration; the fields are {', '.join(FIELDS)}")
    if not isinstance(qid, str) or not qid:
        fail("id", "a question needs an id (lower case letters, digits and _), e.g. id = \"negation\"")
    if not ID.match(qid):
        fail("id", f"{qid!r}: an id is lower case letters, digits and _, starting with a letter, at most 40 characters")
    if qid in TAKEN_IDS:
        fail("id", f"{qid!r} is a built-in question; choose another id")
    wording = _text(fields, "wording", fail, required=True)
    name = _text(fields, "name", fail)
    guidelines = _text(fields, "guidelines", fail)
    categories, scale, numeric = _categories(fields, fail)
    keys = _answers(fields, "keys", fail, categories=None)
    if keys:
        if len(keys) != len(categories):
            fail("keys", f"{len(keys)} key(s) for {len(categories)} answers: give one key per answer, in the answers' order")
        for k in keys:
            if len(k) != 1 or not (k.isdigit() or ("a" <= k <= "z")):
                fail("keys", f"key {k!r}: a key is one lower case letter or one digit")
            if k in RESERVED_KEYS:
                fail("keys", f"key {k!r} is the annotate screen's own ({', '.join(RESERVED_KEYS)}: skip, back, next, "
                             "guidelines, acknowledge)")
        twice = sorted({k for k in keys if keys.count(k) > 1})
        if twice:
            fail("keys", f"key {twice[0]!r} is given to two answers")
    reasons = _answers(fields, "reason_required_for", fail, categories=categories)
    if "positive" in fields:
        positive = _answers(fields, "positive", fail, categories=categories)
        if not positive:
            fail("positive", "no answer counts as positive: name at least one of " + ", ".join(categories))
    elif categories == YES_NO:
        positive = ("Yes",)
    else:
        fail("positive", "say which answers count as positive (Table 7's share and the estimates), e.g. "
                         f"positive = [{categories[0]!r}]")
    if len(positive) == len(categories):
        fail("positive", "every answer counts as positive: the share would always be 1")
    asked_per = fields.get("asked_per", "instance")
    if asked_per not in OWN_ASKED_PER:
        fail("asked_per", f"{asked_per!r}; a question is asked per {', '.join(repr(a) for a in OWN_ASKED_PER)}")
    on_outcome = _on_outcome(fields, fail, categories, asked_per)
    title = name or qid.replace("_", " ")[:1].upper() + qid.replace("_", " ")[1:]
    estimand = _text(fields, "estimand", fail) or f"{title}: {' or '.join(positive)}"
    share = (f"Proportion of {' or '.join(positive)} response", "positive_share")
    if scale == "ordinal":
        rows = (ALPHA_ORDINAL, *((MEAN_SCORE,) if numeric else ()), share)
        reported = ("declared ordinal: agreement as IFIR reports its scales", ("krippendorff_alpha_ordinal", "positive_share"))
    else:
        rows = (RANDOLPH, share)
        reported = ("as InstructIR Table 7", ("randolph_kappa", "positive_share"))
    return Question(
        qid, wording, categories, reasons, keys, guidelines=guidelines, name=title, short=title, monitor_prompt=wording,
        monitor_rows=rows, reported=reported, scale=scale, numeric=numeric, positive=positive, estimand=estimand,
        summary=(("", f"{title} (mean score)"),) if numeric else (), asked_per=asked_per,
        qrels="answers" if on_outcome else "none", on_outcome=on_outcome, builtin=False)


def _text(fields: Mapping, name: str, fail, *, required: bool = False) -> str:
    value = fields.get(name, "")
    if not isinstance(value, str):
        fail(name, f"expected text, got {type(value).__name__} {value!r}")
    if required and not value.strip():
        fail(name, f"the question needs its {name}: the text annotators read")
    return value.strip()


def _categories(fields: Mapping, fail) -> tuple[tuple[str, ...], str, bool]:
    """(answers, ``nominal`` / ``ordinal``, numeric)."""
    if "categories" in fields and "scale" in fields:
        fail("scale", "give the answers once: categories (a list or \"yes-no\") or scale [low, high], not both")
    ordinal = fields.get("ordinal", False)
    if not isinstance(ordinal, bool):
        fail("ordinal", f"expected true or false, got {ordinal!r}")
    if "scale" in fields:
        scale = fields["scale"]
        if (not isinstance(scale, (list, tuple)) or len(scale) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in scale)):
            fail("scale", f"expected [low, high], two whole numbers, got {scale!r}")
        low, high = scale
        if not low < high or high - low + 1 > MAX_SCALE:
            fail("scale", f"[{low}, {high}]: low below high, at most {MAX_SCALE} answers")
        return tuple(str(v) for v in range(low, high + 1)), "ordinal", True
    cats = fields.get("categories")
    if cats is None:
        fail("categories", "no answer declared: give at least two (a list), \"yes-no\" or a scale [low, high]")
    if isinstance(cats, str):
        if cats.strip().lower().replace(" ", "") not in ("yes-no", "yes/no", "yesno"):
            fail("categories", f"{cats!r}: a list of answers, \"yes-no\", or a scale [low, high]")
        if ordinal:
            fail("ordinal", "Yes / No answers are not ordered")
        return YES_NO, "nominal", False
    if not isinstance(cats, (list, tuple)) or not cats:
        fail("categories", "no answer declared: give at least two (a list), \"yes-no\" or a scale [low, high]")
    values = []
    for c in cats:
        if isinstance(c, bool):
            fail("categories", f"answer {c!r}: {_UNQUOTED}")
        if not isinstance(c, (str, int)) or not str(c).strip():
            fail("categories", f"answer {c!r}: an answer is a non-empty text")
        values.append(str(c).strip())
    if len(values) < 2:
        fail("categories", f"one answer ({values[0]!r}): give at least two")
    twice = sorted({v for v in values if values.count(v) > 1})
    if twice:
        fail("categories", f"answer {twice[0]!r} is listed twice")
    numeric = all(v.lstrip("-").isdigit() for v in values)
    return tuple(values), "ordinal" if ordinal else "nominal", numeric and bool(ordinal)


def _answers(fields: Mapping, name: str, fail, *, categories) -> tuple[str, ...]:
    value = fields.get(name, [])
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, (list, tuple)):
        fail(name, f"expected a list, got {type(value).__name__} {value!r}")
    if any(isinstance(v, bool) for v in value):
        fail(name, f"{value!r}: {_UNQUOTED}")
    out = tuple(str(v).strip() for v in value)
    if categories is not None:
        bad = [v for v in out if v not in categories]
        if bad:
            fail(name, f"{bad[0]!r} is not one of the answers ({', '.join(categories)})")
    return out


def _on_outcome(fields: Mapping, fail, categories, asked_per) -> tuple[tuple[str, str], ...]:
    table = fields.get("on_outcome", {})
    if not isinstance(table, Mapping):
        fail("on_outcome", f"expected a table answer -> action, got {type(table).__name__} {table!r}")
    actions = INSTANCE_ACTIONS if asked_per == "instance" else PASSAGE_ACTIONS
    out = []
    for answer, action in table.items():
        if isinstance(answer, bool):
            fail("on_outcome", f"answer {answer!r}: {_UNQUOTED}")
        answer = str(answer)
        if answer not in categories:
            fail(f"on_outcome.{answer}", f"{answer!r} is not one of the answers ({', '.join(categories)})")
        if action not in actions:
            fail(f"on_outcome.{answer}", f"action {action!r}; asked per {asked_per}, an answer can "
                                         f"{' / '.join(repr(a) for a in actions)}")
        out.append((answer, action))
    if asked_per == "instance" and out and all(a == "drop instance" for _, a in out) and len(out) == len(categories):
        fail("on_outcome", "every answer drops the instance: no instance would stay")
    return tuple(sorted(out, key=lambda p: categories.index(p[0])))


def read_questions(path: str | Path) -> list[Question]:
    """The questions a TOML or YAML file declares (:func:`formats.question_file.read_question_file`),
    each validated (:func:`declare`): a refusal names the file, the line and the field. Two
    questions of one file with the same id are refused."""
    from formats.question_file import read_question_file

    return _declared(read_question_file(path), str(path))


def questions_from_text(text: str, kind: str, source: str = "the declaration") -> list[Question]:
    """The questions ``text`` declares in ``kind`` (``toml`` / ``yaml``), as the Set-up page reads
    what a lead types: validated like a file's (:func:`read_questions`).

    >>> [q.id for q in questions_from_text('id = "harmful"\\nwording = "Harmful?"\\ncategories = "yes-no"', "toml")]
    ['harmful']
    """
    from formats.question_file import parse_questions

    return _declared(parse_questions(text, kind, source), source)


def _declared(found, source: str) -> list[Question]:
    out: list[Question] = []
    for d in found:
        q = declare(d.fields, source=source, lines=d)
        if any(o.id == q.id for o in out):
            raise InvalidQuestion(source, d.line_of("id"), "id", f"question {q.id!r} is declared twice")
        out.append(q)
    return out


# ------------------------------------------------------------------------------ stored with a study

def snapshot(q: Question) -> dict:
    """The declaration of a lead's question as a study stores it (the fields of the table above;
    :func:`from_snapshot` reads it back to the same question).

    >>> q = declare({"id": "m", "wording": "Match?", "scale": [1, 5], "positive": [4, 5]})
    >>> from_snapshot(snapshot(q)) == q
    True
    """
    if q.builtin:
        raise IFJudgeError(f"{q.id} is a built-in question: a study stores its id, not its declaration")
    out: dict = {"id": q.id, "wording": q.prompt, "name": q.title, "guidelines": q.guidelines}
    if q.numeric and q.scale == "ordinal" and _consecutive(q.categories):
        out["scale"] = [int(q.categories[0]), int(q.categories[-1])]
    else:
        out["categories"] = list(q.categories)
        if q.scale == "ordinal":
            out["ordinal"] = True
    out.update({"keys": list(q.keys), "reason_required_for": list(q.reason_required_for), "positive": list(q.positive),
                "asked_per": q.asked_per, "on_outcome": dict(q.on_outcome), "estimand": q.estimand})
    return out


def from_snapshot(fields: Mapping) -> Question:
    """The question a study stored (:func:`snapshot`)."""
    return declare(fields, source=f"question {fields.get('id')!r} as stored with its study")


def _consecutive(values) -> bool:
    try:
        nums = [int(v) for v in values]
    except ValueError:
        return False
    return nums == list(range(nums[0], nums[0] + len(nums)))


# ------------------------------------------------------------------------------ keys on one screen

def screen_group(q: Question) -> str:
    """Which screens a question shares (its keys must differ from the others'): the instance's
    screen, or the screen of one passage."""
    return "passage" if q.about_document else "instance"


def assign_keys(questions: list[Question]) -> list[Question]:
    """The questions of a new study with the keys their screens use: a lead's question with
    declared keys is refused (:class:`InvalidQuestion`, field ``keys``) when a key is already
    another question's on the same screen; one without gets the first free keys of
    :data:`KEY_POOL` (none when too few are free: answered by click). Built-in questions keep
    theirs (:func:`annotation.questions.study.screen_shortcuts` decides their collisions as before).

    >>> from annotation.questions.builtin import VALIDITY
    >>> own = declare({"id": "harm", "wording": "Harmful?", "categories": "yes-no"})
    >>> [q.keys for q in assign_keys([VALIDITY, own])]
    [('1', '2'), ('3', '4')]
    >>> assign_keys([VALIDITY, own.with_keys(("2", "9"))])
    Traceback (most recent call last):
    ...
    annotation.questions.own.InvalidQuestion: question 'harm', field 'keys': key '2' is already validity's on the same screen (the instance's screen): choose other keys
    """
    used: dict[str, dict[str, str]] = {}
    for q in questions:
        if q.builtin or q.keys:
            for k in q.keys:
                used.setdefault(screen_group(q), {}).setdefault(k, q.id)
    out = []
    for q in questions:
        taken = used.setdefault(screen_group(q), {})
        if not q.builtin and q.keys:
            clash = next((k for k in q.keys if taken.get(k) not in (None, q.id)), None)
            if clash is not None:
                raise InvalidQuestion(f"question {q.id!r}", None, "keys",
                                      f"key {clash!r} is already {taken[clash]}'s on the same screen (the "
                                      f"{screen_group(q)}'s screen): choose other keys")
        elif not q.builtin:
            free = [k for k in KEY_POOL if k not in taken][:len(q.categories)]
            if len(free) == len(q.categories):
                q = q.with_keys(tuple(free))
                for k in free:
                    taken[k] = q.id
        out.append(q)
    return out
