"""The one registry of measure names: what IFJudge accepts, how each name is written, the defaults.

Two kinds of measures share one vocabulary:

- **standard measures**: every measure ir-measures names and an installed ir-measures provider
  computes (``nDCG@10``, ``AP@1000``, ``RR@10``, ``R@100``, ``P@5``, ``Rprec``, ``Bpref``,
  ``Success@10``, ``Judged@10``, ``infAP``, ``IPrec@0.1``, ``SetF``, ``NumRet``, ``NumRel``,
  ``NumQ``, ``P(rel=2)@5``, ``nDCG(judged_only=True)@10``, ...). A name is parsed as ir-measures
  parses it, also case-insensitively (``ndcg@10``, ``map``, ``MRR@10``) and in trec_eval's own
  spelling (``map``, ``P_30``, ``ndcg_cut_10``, ``recip_rank``, ``success_10``, ``num_ret``);
  its canonical name is the one ir-measures prints. They are computed by
  :func:`evaluation.measures.evaluate`.
- **instruction-following measures**: ``Robustness@k`` (InstructIR), ``p-MRR`` (FollowIR),
  ``WISE`` and ``SICR`` (InfoSearch), ``INSTFOL`` (IFIR), with their own parameters, written
  like ir-measures names (``WISE(K=30)``, ``p-MRR(ties='run-order')``); each needs more than
  one run and qrels and is computed by its own module (see :data:`IF_MEASURES`). The paired
  measures (p-MRR, WISE, SICR) compare the ``original`` qrels with a changed-side version:
  ``qrels`` names it when it is not the evaluated version's own (``p-MRR(qrels='changed-validated')``),
  as an evaluation stores each one (:mod:`evaluation.results`).

:func:`parse` reads any name; :func:`parse_measure` / :func:`parse_measures` only standard ones
(what :func:`evaluation.measures.evaluate` computes). An unknown name is refused with
:class:`UnknownMeasure`, whose message lists the known ones. :func:`default_measures` gives each
project kind's default list (:data:`DEFAULT_MEASURES_BY_KIND`: the benchmark's headline measures);
:data:`GENERIC_MEASURES` is a generic project's, :data:`DEFAULT_STANDARD` its standard part.

References
----------
MacAvaney, Macdonald & Ounis (2022), "Streamlining Evaluation with ir-measures", ECIR.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Iterable

import ir_measures
from ir_measures.measures.base import SumAgg

from formats.errors import IFJudgeError

__all__ = [
    "GENERIC_MEASURES", "DEFAULT_MEASURES_BY_KIND", "DEFAULT_STANDARD", "IF_MEASURES", "IFMeasure", "IFMeasureSpec", "Measure",
    "TIES", "UnknownMeasure", "default_measures", "known_measures", "parse", "parse_all", "parse_measure", "parse_measures",
]


class UnknownMeasure(IFJudgeError, ValueError):
    """A measure name IFJudge does not know (or cannot compute here); the message lists the known ones."""


def _providers() -> list:
    return [p for p in ir_measures.providers.registry.values() if p.NAME != "runtime"]


def _supports(provider, measure) -> bool:
    try:
        return provider.supports(measure)
    except Exception:  # ir-measures validates parameters with assert
        return False


@dataclass(frozen=True)
class Measure:
    """A standard measure: an ir-measures family, its ``@`` value and its other parameters.

    ``str()`` is the canonical name ir-measures prints; it keys every result. ``cutoff`` is the
    value after ``@`` (the ranking cut-off; for ``IPrec`` the recall level), ``params`` the
    other parameters that differ from their defaults, sorted by name.

    Examples
    --------
    >>> str(Measure("nDCG", 10)), str(Measure("Rprec")), str(Measure("P", 5, (("rel", 2),)))
    ('nDCG@10', 'Rprec', 'P(rel=2)@5')
    >>> Measure("AP", None).trec_key
    'map'
    """

    name: str
    cutoff: int | float | None = None
    params: tuple[tuple[str, Any], ...] = ()

    kind = "standard"

    def __str__(self) -> str:
        return self.canonical

    @cached_property
    def canonical(self) -> str:
        """The canonical name, as ir-measures prints it."""
        return str(self.ir)

    @cached_property
    def ir(self):
        """The ir-measures measure object (built once per :class:`Measure`)."""
        base = ir_measures.measures.registry[self.name]
        m = base(**dict(self.params)) if self.params else base
        return m if self.cutoff is None else m @ self.cutoff

    @property
    def aggregate(self) -> str:
        """``"mean"`` over queries, or ``"sum"`` (``NumQ``, ``NumRet``, ``NumRel``: trec_eval
        prints their totals)."""
        return "sum" if isinstance(self.ir.aggregator(), SumAgg) else "mean"

    @property
    def trec_family(self) -> str | None:
        """The trec_eval measure of the five classic families (``RR@k`` uses ``recip_rank``)."""
        if self.params:
            return None
        if self.name == "nDCG":
            return "ndcg" if self.cutoff is None else "ndcg_cut"
        if self.name == "AP":
            return "map" if self.cutoff is None else "map_cut"
        return {"RR": "recip_rank", "R": "recall", "P": "P"}.get(self.name)

    @property
    def trec_key(self) -> str | None:
        """The per-query key pytrec_eval returns for the five classic families
        (``RR@k``: ``recip_rank`` of the cut run)."""
        family = self.trec_family
        if family is None or self.cutoff is None or self.name == "RR":
            return family
        return f"{family}_{self.cutoff}"


@dataclass(frozen=True)
class IFMeasureSpec:
    """An instruction-following measure: its parameters, where it comes from, what computes it.

    ``at`` names the parameter written after ``@`` (None: no ``@``); ``params`` maps each
    parameter to ``(type, default, allowed values or None)``; a default of None means "unset".
    """

    name: str
    at: str | None
    params: dict[str, tuple[type, Any, tuple | None]]
    source: str
    computed_by: str
    command: str
    aliases: tuple[str, ...] = ()
    summary: str = ""

    def usage(self) -> str:
        """How the name is written, e.g. ``Robustness@k`` or ``WISE(K=20)``."""
        shown = [p for p in self.params if p != self.at and self.params[p][1] is not None]
        text = self.name
        if shown:
            text += "(" + ",".join(f"{p}={_value_repr(self.params[p][1])}" for p in shown) + ")"
        if self.at:
            text += f"@{self.at}"
        return text


#: the tie rules of the rank-based measures: doc id descending (trec_eval's) or the run's own order
TIES = ("docid", "run-order")


def _value_repr(value) -> str:
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


IF_MEASURES: dict[str, IFMeasureSpec] = {
    spec.name: spec for spec in (
        IFMeasureSpec(
            "Robustness", "k", {"k": (int, 10, None)},
            "Oh et al. (2024), InstructIR", "evaluation.robustness.robustness", "ifjudge eval robustness",
            summary="minimum nDCG@k over the instances of a group, mean over groups",
        ),
        IFMeasureSpec(
            "p-MRR", None, {"qrels": (str, None, None), "ties": (str, "docid", ("docid", "run-order"))},
            "Weller et al. (2024), FollowIR, eq. 1", "evaluation.pmrr.p_mrr", "ifjudge eval pmrr",
            aliases=("pmrr",), summary="rank change of the documents whose label changed",
        ),
        IFMeasureSpec(
            "WISE", None, {"K": (int, 20, None), "qrels": (str, None, None), "ties": (str, "docid", ("docid", "run-order")),
                           "version": (str, "paper", ("paper", "evaluator"))},
            "Zhou et al. (2025), InfoSearch, §2.3", "evaluation.infosearch.infosearch_metrics",
            "ifjudge eval infosearch", summary="rank-weighted reward of instructed and reversed runs",
        ),
        IFMeasureSpec(
            "SICR", None, {"qrels": (str, None, None), "ties": (str, "docid", ("docid", "run-order"))},
            "Zhou et al. (2025), InfoSearch, §2.3", "evaluation.infosearch.infosearch_metrics",
            "ifjudge eval infosearch", summary="share of positives ordered instructed > original > reversed",
        ),
        IFMeasureSpec(
            "INSTFOL", "k", {"k": (int, None, None), "max": (float, 3.0, None)},
            "IFIR (2025), INSTFOL", "evaluation.instfol.instfol", "ifjudge eval instfol",
            summary="normalised gain of judge scores with the instruction",
        ),
    )
}
_IF_LOWER = {alias.lower(): spec for spec in IF_MEASURES.values() for alias in (spec.name, *spec.aliases)}


@dataclass(frozen=True)
class IFMeasure:
    """A parsed instruction-following measure; ``str()`` is its canonical name (defaults omitted).

    ``values`` holds every parameter (defaults included) in the order of its spec.

    Examples
    --------
    >>> str(parse("robustness@10")), str(parse("WISE")), str(parse("WISE(K=30)"))
    ('Robustness@10', 'WISE', 'WISE(K=30)')
    >>> parse("pmrr").params["ties"]
    'docid'
    >>> str(parse("p-MRR(ties=run-order, qrels=changed)"))
    "p-MRR(qrels='changed',ties='run-order')"
    """

    name: str
    values: tuple[tuple[str, Any], ...] = ()

    kind = "instruction-following"

    @property
    def spec(self) -> IFMeasureSpec:
        return IF_MEASURES[self.name]

    @property
    def params(self) -> dict:
        out = {p: default for p, (_, default, _) in self.spec.params.items()}
        out.update(self.values)
        return out

    @property
    def cutoff(self):
        return self.params.get(self.spec.at) if self.spec.at else None

    def __str__(self) -> str:
        spec, params = self.spec, self.params
        shown = [(p, v) for p, v in params.items() if p != spec.at and v != spec.params[p][1]]
        text = self.name
        if shown:
            text += "(" + ",".join(f"{p}={_value_repr(v)}" for p, v in shown) + ")"
        if spec.at and params.get(spec.at) is not None:
            text += f"@{params[spec.at]}"
        return text


# The one default list: what the Evaluate page offers, the CLI and the runner compute by default
# (the runner adds each instruction-following measure when the project has what it needs).
GENERIC_MEASURES: tuple[str, ...] = (
    "nDCG@10", "AP@100", "RR@10", "R@100", "P@5", "Robustness@10", "p-MRR", "WISE", "SICR",
)

# Each benchmark's headline measures (its paper's tables), nDCG@10 in every list so that runs of
# different kinds share a measure: FollowIR (Weller et al., 2024, Table 2) MAP@1000 for Robust04 /
# Core17, nDCG@5 for News21, p-MRR; IFIR nDCG@20 (INSTFOL needs judge scores: `ifjudge eval
# instfol`); InfoSearch (Zhou et al., 2025) Table 2's nDCG@10, Robustness@10, p-MRR, WISE, SICR
# (nDCG@10 and Robustness@10 in each mode: the runner's Table 2) and the appendix's MRR@1;
# InstructIR (Oh et al., 2024) nDCG@10, Robustness@10. A generic project gets GENERIC_MEASURES.
DEFAULT_MEASURES_BY_KIND: dict[str, tuple[str, ...]] = {
    "followir": ("nDCG@10", "AP@1000", "nDCG@5", "p-MRR"),
    "ifir": ("nDCG@10", "nDCG@20"),
    "infosearch": ("nDCG@10", "Robustness@10", "RR@1", "p-MRR", "WISE", "SICR"),
    "instructir": ("nDCG@10", "Robustness@10"),
    "generic": GENERIC_MEASURES,
}


def default_measures(kind: str | None = None) -> tuple[str, ...]:
    """The measures an evaluation of a project of ``kind`` computes unless told otherwise.

    Examples
    --------
    >>> default_measures("followir")
    ('nDCG@10', 'AP@1000', 'nDCG@5', 'p-MRR')
    >>> [str(parse(m)) for m in default_measures("infosearch")][:2]
    ['nDCG@10', 'Robustness@10']
    """
    return DEFAULT_MEASURES_BY_KIND.get(kind or "generic", GENERIC_MEASURES)


_IF_PATTERN = re.compile(r"^\s*([A-Za-z][A-Za-z_-]*)\s*(?:\((.*)\))?\s*(?:@\s*([^\s@]+))?\s*$")
_TREC_HINT = "trec_eval names such as map, P_30, ndcg_cut_10, recip_rank, success_10 are accepted too"


def known_measures() -> str:
    """One line naming the accepted vocabulary (used in every refusal).

    Examples
    --------
    >>> "Bpref" in known_measures() and "p-MRR" in known_measures()
    True
    """
    return (
        "standard (ir-measures names): " + ", ".join(_standard_usages())
        + f" ({_TREC_HINT}); instruction-following: "
        + ", ".join(spec.usage() for spec in IF_MEASURES.values())
    )


def _standard_usages() -> list[str]:
    out = []
    for name, base in sorted(ir_measures.measures.registry.items(), key=lambda x: x[0].lower()):
        if name != base.NAME:  # an alias
            continue
        if not any(_supports_family(p, base) for p in _providers() if p.is_available()):
            continue
        at = base.SUPPORTED_PARAMS.get(base.AT_PARAM)
        if at is None:
            out.append(name)
        else:
            out.append(f"{name}@{'k' if base.AT_PARAM == 'cutoff' else base.AT_PARAM}"
                       if at.required else f"{name}[@k]")
    return out


def _supports_family(provider, base) -> bool:
    return any(getattr(supported, "NAME", None) == base.NAME for supported in provider.SUPPORTED_MEASURES)


def _refuse(text, why: str = "") -> UnknownMeasure:
    lead = f"unknown measure {text!r}" if not why else f"measure {text!r}: {why}"
    return UnknownMeasure(f"{lead}; known measures: {known_measures()}")


def _from_ir(measure, text) -> Measure:
    """Our :class:`Measure` from an ir-measures object, validated and checked computable."""
    try:
        measure.validate_params()
    except AssertionError as exc:
        detail = str(exc)
        if "invalid param" in detail and "object object" in detail:  # a required parameter unset
            param = detail.split("invalid param ", 1)[1].split("=", 1)[0]
            hint = f"e.g. {measure.NAME}@10" if param == "cutoff" else f"{measure.NAME}({param}=...)"
            raise _refuse(text, f"needs its {param!r} parameter ({hint})") from None
        raise _refuse(text, detail) from None
    if "gains" in measure.params:
        # ir-measures 0.4.3 names custom gains lossily (nDCG(gains={2:3})) and, beside another
        # nDCG, returns one's values under the other's name: refused rather than mislabelled
        raise _refuse(text, "custom gains are not supported (nDCG uses the label as its gain)")
    at = measure.params.get(measure.AT_PARAM)
    if measure.AT_PARAM == "cutoff" and at is not None and at < 1:
        raise _refuse(text, "the cut-off must be >= 1")
    defaults = measure.SUPPORTED_PARAMS
    params = tuple(sorted(
        (k, v) for k, v in measure.params.items() if k != measure.AT_PARAM and v != defaults[k].default
    ))
    out = Measure(measure.NAME, at, params)
    ir = out.ir
    if not (measure.NAME == "RR" and at is not None) and not any(
        p.is_available() and _supports(p, ir) for p in _providers()
    ):
        needs = [p for p in _providers() if _supports(p, ir) or any(
            getattr(s, "NAME", None) == measure.NAME for s in p.SUPPORTED_MEASURES)]
        how = "; ".join(f"{p.NAME}: {p.install_instructions()}" for p in needs) or "no ir-measures provider"
        raise _refuse(text, f"ir-measures names it but none of its installed providers computes it ({how})")
    return out


def _ir_parse(text: str):
    try:
        return ir_measures.parse_measure(text)
    except (ValueError, NameError, SyntaxError, TypeError, AttributeError):
        return None


def _parse_standard(text: str) -> Measure | None:
    """A standard measure, or None when the text is not an ir-measures or trec_eval name."""
    text = text.strip()
    parsed = _ir_parse(text)
    if parsed is not None:
        return _from_ir(parsed, text)
    head = re.match(r"^([A-Za-z_α]\w*)(.*)$", text, re.S)
    if head:
        lower = {k.lower(): k for k in ir_measures.measures.registry}
        name = lower.get(head.group(1).lower())
        if name is not None:
            parsed = _ir_parse(name + head.group(2))
            if parsed is not None:
                return _from_ir(parsed, text)
    try:
        found = ir_measures.parse_trec_measure(text)
    except (ValueError, NameError, KeyError, TypeError):
        return None
    if len(found) == 1:
        return _from_ir(found[0], text)
    if len(found) > 1:
        raise _refuse(text, "names several measures in trec_eval; give one, e.g. " + str(found[0]))
    return None


def _parse_if(text: str) -> IFMeasure | None:
    match = _IF_PATTERN.match(text)
    if not match or match.group(1).lower() not in _IF_LOWER:
        return None
    spec = _IF_LOWER[match.group(1).lower()]
    params = {p: default for p, (_, default, _) in spec.params.items()}
    given: list[tuple[str, str]] = []
    if match.group(2) is not None and match.group(2).strip():
        for part in match.group(2).split(","):
            if "=" not in part:
                raise _refuse(text, f"parameters are written name=value, got {part.strip()!r}")
            k, v = part.split("=", 1)
            given.append((k.strip(), v.strip()))
    if match.group(3) is not None:
        if spec.at is None:
            raise _refuse(text, f"{spec.name} takes no @ value; write {spec.usage()}")
        given.append((spec.at, match.group(3)))
    for k, raw in given:
        if k not in spec.params:
            raise _refuse(text, f"{spec.name} has no parameter {k!r}; write {spec.usage()}")
        typ, _, allowed = spec.params[k]
        raw = raw.strip("'\"")
        try:
            value = typ(raw)
        except ValueError:
            raise _refuse(text, f"{k} must be a {typ.__name__}, got {raw!r}") from None
        if allowed is not None and value not in allowed:
            raise _refuse(text, f"{k} must be one of {', '.join(allowed)}, got {raw!r}")
        if typ in (int, float) and value <= 0:
            raise _refuse(text, f"{k} must be > 0, got {raw!r}")
        params[k] = value
    return IFMeasure(spec.name, tuple(params.items()))


def parse(text: "str | Measure | IFMeasure") -> "Measure | IFMeasure":
    """Parse any measure name: a standard :class:`Measure` or an :class:`IFMeasure`.

    Raises
    ------
    UnknownMeasure
        A name neither ir-measures nor the instruction-following registry knows, a missing or
        invalid parameter, or an ir-measures measure no installed provider computes. The message
        lists the known measures.

    Examples
    --------
    >>> [str(parse(t)) for t in ("ndcg@10", "map", "P_30", "Rprec", "success_10", "SICR")]
    ['nDCG@10', 'AP', 'P@30', 'Rprec', 'Success@10', 'SICR']
    """
    if isinstance(text, IFMeasure):
        return text
    if isinstance(text, Measure):  # built by hand: checked and normalised like a typed name
        if text.name not in ir_measures.measures.registry:
            raise _refuse(text.name)
        return _from_ir(text.ir, str(text))
    if not isinstance(text, str) or not text.strip():
        raise _refuse(text, "empty name")
    found = _parse_if(text) or _parse_standard(text)
    if found is None:
        raise _refuse(text.strip())
    return found


def _split(measures) -> list:
    items = measures.split(",") if isinstance(measures, str) else list(measures)
    return [m for m in items if not (isinstance(m, str) and not m.strip())]


def parse_all(measures: "str | Iterable[str | Measure | IFMeasure]") -> list:
    """Parse a comma-separated string or a list of names of either kind; duplicates dropped.

    Parameters: ``(...)`` of a name may hold commas (``SetF(beta=0.5)``); the string is split on
    the commas outside parentheses.

    Examples
    --------
    >>> [str(m) for m in parse_all("nDCG@10,Robustness@10,p-MRR")]
    ['nDCG@10', 'Robustness@10', 'p-MRR']
    """
    if isinstance(measures, str):
        measures = _split_outside_parens(measures)
    out: list = []
    for item in _split(measures):
        m = parse(item)
        if m not in out:
            out.append(m)
    if not out:
        raise UnknownMeasure(f"no measure given; known measures: {known_measures()}")
    return out


def _split_outside_parens(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return parts


def parse_measure(text: "str | Measure") -> Measure:
    """Parse a standard measure name into a :class:`Measure` (what ``evaluate`` computes).

    Accepted: every ir-measures name an installed provider computes, case-insensitively, and
    trec_eval's names (see the module docstring). Aliases: ``MAP`` -> ``AP``, ``MRR`` -> ``RR``,
    ``Recall`` -> ``R``, ``Precision`` -> ``P``. ``P``, ``R`` and ``Success`` need a cut-off.

    Raises
    ------
    UnknownMeasure (a ValueError)
        Unknown name, missing or non-positive cut-off, or an instruction-following measure
        (computed by its own command, which the message names).

    Examples
    --------
    >>> str(parse_measure("ndcg@10")), str(parse_measure("MAP@1000")), str(parse_measure("AP"))
    ('nDCG@10', 'AP@1000', 'AP')
    >>> str(parse_measure("bpref")), str(parse_measure("Judged@10")), str(parse_measure("num_rel_ret"))
    ('Bpref', 'Judged@10', 'NumRet(rel=1)')
    """
    m = parse(text)
    if isinstance(m, IFMeasure):
        raise UnknownMeasure(
            f"{str(m)!r} is an instruction-following measure ({m.spec.source}); it needs more than a "
            f"run and qrels: use `{m.spec.command}` ({m.spec.computed_by})"
        )
    return m


def parse_measures(measures: "str | Iterable[str | Measure]") -> list[Measure]:
    """Parse a comma-separated string or a list of standard names; duplicates dropped, order kept.

    Examples
    --------
    >>> [str(m) for m in parse_measures("map, P_30, Rprec, bpref")]
    ['AP', 'P@30', 'Rprec', 'Bpref']
    """
    out = parse_all(measures)
    for m in out:
        parse_measure(m)
    return out


# the names that are no instruction-following measure, told apart without ir-measures' providers (which
# load pytrec_eval and numpy) so that `ifjudge eval --help` is quick; each parses as a Measure
DEFAULT_STANDARD: tuple[str, ...] = tuple(n for n in GENERIC_MEASURES if _parse_if(n) is None)
