"""Whose protocol an evaluation follows: MTEB's (the default) or the benchmark paper's own code.

Each benchmark has two published ways of turning a retriever's output into its headline figures:
MTEB 2.26's task class (what a researcher runs today) and the paper's own evaluation code (what
its tables were made with). ``ifjudge eval run --protocol mteb|paper`` picks one; every stored
eval run records the protocol it followed (``settings["protocol"]``) and the options it resolved
to. An option given explicitly (``--template``, ``--ties``) overrides the protocol's and is stored
as given.

============  =====================================================  ==========================================================
benchmark     ``mteb`` (default)                                     ``paper``
============  =====================================================  ==========================================================
InstructIR    query, a space, the instruction; Robustness@10         ``instruction [SEP] query`` (the benchmark's query files,
              groups the instances by their group id (MTEB's         read as written by ``eval/eval_instructir_*.py``);
              ``robustness_at_10``: the id prefix before ``_``)      Robustness@10 groups the instances by their query text
                                                                     (``eval/robust_eval.py``: ``split('[SEP]')``, group per
                                                                     query); a document whose id is the query id is dropped
                                                                     from the run (``ignore_identical_ids``)
FollowIR      ties of p-MRR by doc id descending (MTEB 2.26's        a score-only stable sort (FollowIR's code): equal scores
              ``get_rank_from_dict``, trec_eval)                     keep the order of the query's candidate list
InfoSearch    ties by doc id descending; WISE as the paper's eq. 7;  ties by a score-only stable sort (its evaluator's
              Robustness@10 per mode over the instances that         ``get_rank_from_dict``); WISE as the paper's eq. 7
              share a query text (Table 2; MTEB has no InfoSearch
              task)
IFIR          instructed queries only, query + " " + instruction,    the same: IFIR's paper (App. A.2) and its BEIR script
              each domain against its own corpus, the mean over       (``beir/eval_with_faiss.py``) are what MTEB's IFIR tasks
              domains; bare queries ``<q>_0`` are the baseline        reproduce
generic       MTEB's                                                  MTEB's
============  =====================================================  ==========================================================

WISE's reward has two published forms: the paper's eq. 7, ``(1 - (R_ori - R_ins) / K) / sqrt(R_ins)``,
and the newest official evaluator's ``(1 - sqrt(R_ori - R_ins) / K) / sqrt(R_ins)``
(``mteb_infosearch/mteb/evaluation/evaluators/utils.py``, ``WISE_score``). Both protocols use eq. 7;
``--wise-version evaluator`` names the other (stored as ``WISE(version='evaluator')``).

References
----------
Oh et al. (2024), InstructIR (github.com/kaistAI/InstructIR, ``eval/robust_eval.py``); Weller et al.
(2024), FollowIR; Zhou et al. (2025), InfoSearch (github.com/EIT-NLP/InfoSearch); Song et al. (2025),
IFIR (github.com/SighingSnow/IFIR); Enevoldsen et al. (2025), MMTEB.
"""
from __future__ import annotations

from dataclasses import dataclass

from evaluation.templates import default_template
from storage.errors import IFJudgeError

PROTOCOLS = ("mteb", "paper")
DEFAULT_PROTOCOL = "mteb"
WISE_VERSIONS = ("paper", "evaluator")


@dataclass(frozen=True)
class Protocol:
    """The evaluation rules of one protocol for one project kind.

    ``template`` is the default template (:mod:`evaluation.templates`), ``ties`` the default tie
    rule of p-MRR / WISE / SICR (``run-order`` of a run over candidate lists ranks equal scores in
    candidate-list order), ``robustness_groups`` how Robustness@k groups instances (``group``: the
    instance's group id; ``query-text``: its query's text), ``robustness_singletons`` whether it is
    reported when every group has one instance (InfoSearch's Table 2: then it is nDCG@k),
    ``ignore_identical_ids`` whether a
    document whose id is the query's is dropped from the run, ``source`` where the rules come from.
    """

    name: str
    kind: str
    template: str = "query_instruction"
    ties: str = "docid"
    robustness_groups: str = "group"
    robustness_singletons: bool = False
    ignore_identical_ids: bool = False
    source: str = "MTEB 2.26"

    def record(self, *, template: str, ties: str) -> dict:
        """What an eval run stores of its protocol: the name, and which options it set or were
        given over it.

        >>> resolve("instructir", "paper").record(template="sep", ties="docid")
        {'name': 'paper', 'source': "InstructIR's eval/robust_eval.py", 'robustness_groups': 'query-text', 'ignore_identical_ids': True, 'overridden': []}
        >>> resolve("followir", "mteb").record(template="sep", ties="docid")["overridden"]
        ['template']
        """
        overridden = [name for name, value in (("template", template), ("ties", ties)) if value != getattr(self, name)]
        return {"name": self.name, "source": self.source, "robustness_groups": self.robustness_groups,
                "ignore_identical_ids": self.ignore_identical_ids, "overridden": overridden}


# rules of a kind under both protocols: MTEB has no InfoSearch task; its Robustness@10 (Table 2,
# per mode) is InstructIR's over the conditions of one core query (instances sharing its text)
_BOTH = {"infosearch": dict(robustness_groups="query-text", robustness_singletons=True)}
_PAPER = {
    "instructir": dict(template="sep", robustness_groups="query-text", ignore_identical_ids=True,
                       source="InstructIR's eval/robust_eval.py"),
    "followir": dict(ties="run-order", source="FollowIR's evaluation code (score-only stable sort)"),
    "infosearch": dict(ties="run-order", source="InfoSearch's evaluator (score-only stable sort; WISE eq. 7)"),
    "ifir": dict(source="IFIR's paper (App. A.2) and beir/eval_with_faiss.py (as MTEB)"),
    "generic": dict(source="MTEB 2.26 (a generic project has no paper)"),
}


def resolve(kind: str | None, protocol: str | None = None) -> Protocol:
    """The rules of ``protocol`` (default ``mteb``) for a project of ``kind``.

    Examples
    --------
    >>> resolve("instructir", "paper").template, resolve("instructir").template
    ('sep', 'query_instruction')
    >>> resolve("followir", "paper").ties, resolve("ifir", "paper").template
    ('run-order', 'query_instruction')
    """
    name = protocol or DEFAULT_PROTOCOL
    if name not in PROTOCOLS:
        raise IFJudgeError(f"unknown protocol {name!r}; expected one of {', '.join(PROTOCOLS)}")
    kind = kind or "generic"
    both = {"template": default_template(kind), **_BOTH.get(kind, {})}  # MTEB's template (evaluation.templates)
    if name == "mteb":
        return Protocol("mteb", kind, **both)
    return Protocol("paper", kind, **{**both, **_PAPER.get(kind, _PAPER["generic"])})


def check_wise_version(version: str) -> str:
    """``version`` when it names a WISE form (:data:`WISE_VERSIONS`); refused otherwise."""
    if version not in WISE_VERSIONS:
        raise IFJudgeError(f"unknown WISE version {version!r}; expected one of {', '.join(WISE_VERSIONS)} "
                           "(paper: eq. 7; evaluator: the official evaluator's sqrt(R_ori - R_ins) form)")
    return version
