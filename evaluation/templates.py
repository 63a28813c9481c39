"""How an instruction and a query become the text a retriever encodes.

A template has a query side (instruction + query -> text) and a document side (title + text ->
text). The names are stored with every eval run, so a run can be reproduced and compared.

================== ==================================================== ======================================
name               query side                                           document side
================== ==================================================== ======================================
``query``          ``{query}`` (the instruction is ignored)             ``{title} {text}``
``instruction_query`` ``{instruction} {query}``                         ``{title} {text}``
``query_instruction`` ``{query} {instruction}``                         ``{title} {text}``
``sep``            ``{instruction} [SEP] {query}``                      ``{title} {text}``
``instructor``     ``Represent the question for retrieving supporting   ``Represent the document for
                   documents: {instruction} {query}``                   retrieval: {title} {text}``
================== ==================================================== ======================================

**Defaults are MTEB's** (:func:`default_template`): MTEB 2.26 joins a query and its instruction as
``query + " " + instruction`` for every retrieval task with an instruction
(``mteb/_create_dataloaders.py``, ``_combine_queries_with_instruction_text``: FollowIR's
``*InstructionRetrieval`` / ``*InstructionReranking``, ``InstructIR``, the ``IFIR*`` tasks and any
retrieval dataset with an ``instruction`` column), so ``query_instruction`` is the default of every
project kind; a query without instruction is the query alone (MTEB's datasets hold ``""`` there;
IFJudge squashes the trailing space, which no tokenizer sees). MTEB has no InfoSearch task: its
default follows the same rule. INSTRUCTOR prompts are used only when ``instructor`` is asked for.

``sep`` is InstructIR's main query format (Oh et al., 2024; the benchmark's
``analysis_prompt_sensitivity/og_queries.jsonl`` holds ``"<instruction> [SEP] <query>"``, the text
its evaluation code encodes as it is), and ``query_instruction`` its order-swapped variant
(``analysis_order_sensitivity``). ``sep`` joins the two texts exactly as those files hold them
(the instruction, `` [SEP] ``, the query; inner spacing kept), and is the InstructIR default of
the ``paper`` protocol (:mod:`evaluation.protocols`).

``instructor`` follows INSTRUCTOR (Su et al., 2023, "One Embedder, Any Task"), whose instructions
have the unified form "REPRESENT THE (DOMAIN) TEXT TYPE FOR TASK OBJECTIVE:" (§2.2) and, for
open-domain retrieval (Natural Questions, Table 1), read *query instruction* "Represent the
Wikipedia question for retrieving supporting documents:" and *doc instruction* "Represent the
Wikipedia document for retrieval:". The domain is optional in that format, so IFJudge drops it
(the benchmarks here are not all Wikipedia) and places the benchmark's own instruction after the
prompt, before the query. INSTRUCTOR models take the prompt as a separate input; for an ordinary
sentence-transformers model the prompt is prepended to the text, which is what this module does.
"""
from __future__ import annotations

from dataclasses import dataclass

from storage.errors import IFJudgeError

INSTRUCTOR_QUERY_PROMPT = "Represent the question for retrieving supporting documents: "
INSTRUCTOR_DOCUMENT_PROMPT = "Represent the document for retrieval: "


class UnknownTemplate(IFJudgeError):
    """A template name that is not one of :data:`TEMPLATES`."""


@dataclass(frozen=True)
class Template:
    """A named pair of formats: ``query_format`` uses ``{instruction}`` and ``{query}``,
    ``document_format`` uses ``{title}`` and ``{text}``."""

    name: str
    query_format: str
    document_format: str = "{title} {text}"
    squash: bool = True  # False: the texts joined as they are (only edge spaces of an empty side squashed)

    def query(self, query: str, instruction: str = "") -> str:
        """The text encoded for a query under this template.

        Examples
        --------
        >>> get_template("sep").query("best pizza", "I am a chef.")
        'I am a chef. [SEP] best pizza'
        >>> get_template("sep").query("best  pizza", "I am  a chef."), get_template("sep").query("pizza")
        ('I am  a chef. [SEP] best  pizza', '[SEP] pizza')
        """
        text = self.query_format.format(query=query, instruction=instruction)
        return text if not self.squash and instruction.strip() and query.strip() else _squash(text)

    def document(self, text: str, title: str = "") -> str:
        """The text encoded for a document under this template.

        Examples
        --------
        >>> get_template("instructor").document("Dough needs yeast.", "Pizza")
        'Represent the document for retrieval: Pizza Dough needs yeast.'
        """
        return _squash(self.document_format.format(title=title, text=text))


def _squash(s: str) -> str:
    # An empty instruction or title must not leave doubled or edge spaces.
    return " ".join(s.split())


DEFAULT_TEMPLATE = "query_instruction"
# The template whose figures equal MTEB's, per project kind (all MTEB task families use one rule).
DEFAULT_TEMPLATES: dict[str, str] = {kind: DEFAULT_TEMPLATE for kind in
                                     ("followir", "instructir", "ifir", "infosearch", "generic")}


def default_template(kind: str | None = None) -> str:
    """The default template of a project kind: the one MTEB uses (``query_instruction``).

    Examples
    --------
    >>> default_template("followir"), default_template("instructir"), default_template()
    ('query_instruction', 'query_instruction', 'query_instruction')
    """
    return DEFAULT_TEMPLATES.get(kind or "generic", DEFAULT_TEMPLATE)


TEMPLATES: dict[str, Template] = {
    t.name: t
    for t in (
        Template("query", "{query}"),
        Template("instruction_query", "{instruction} {query}"),
        Template("query_instruction", "{query} {instruction}"),
        Template("sep", "{instruction} [SEP] {query}", squash=False),
        Template(
            "instructor",
            INSTRUCTOR_QUERY_PROMPT + "{instruction} {query}",
            INSTRUCTOR_DOCUMENT_PROMPT + "{title} {text}",
        ),
    )
}


def get_template(name: str) -> Template:
    """The template called ``name``.

    Raises
    ------
    UnknownTemplate
        When ``name`` is not known; the message lists the known names.

    Examples
    --------
    >>> get_template("instruction_query").query("q", "i")
    'i q'
    """
    try:
        return TEMPLATES[name]
    except KeyError:
        raise UnknownTemplate(
            f"unknown template {name!r}; known templates: {', '.join(TEMPLATES)}"
        ) from None
