"""TREC files: topics, qrels and runs, read by :mod:`formats.readers.trec` and :mod:`formats.trec_io`."""
from __future__ import annotations

from pathlib import Path

from formats.bundle import Bundle, RunRow
from formats.writers._common import _token, _qrels_of


def write_trec_qrels(bundle: Bundle, path: Path, *, version: str = "original") -> Path:
    """Write the qrels of ``version`` as TREC qrels (``qid 0 docid rel``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as out:
        for q in _qrels_of(bundle, version):
            out.write(f"{_token(q.qid, 'query id')} 0 {_token(q.doc_id, 'document id')} {q.relevance}\n")
    return path


def write_trec_topics(bundle: Bundle, path: Path, *, variant: str = "og") -> Path:
    """Write every query as a TREC topic; the narrative is the query's :class:`Narrative` of
    ``variant`` (else its instance of that variant). The description is left empty.

    Examples
    --------
    >>> import tempfile
    >>> from formats.readers import parse
    >>> out = Path(tempfile.mkdtemp()) / "topics.txt"
    >>> bundle = parse("followir", [Path("tests/fixtures/published/followir_hub")])
    >>> text = write_trec_topics(bundle, out, variant="changed").read_text()
    >>> text.splitlines()[:3]
    ['<top>', '<num> Number: 303', '<title> transportation accidents with fatalities']
    """
    path = Path(path)
    narrative = {(i.query_id, i.variant): i.instruction for i in bundle.instances}
    narrative.update({(n.query_id, n.variant): n.text for n in bundle.narratives})
    blocks = []
    for q in bundle.queries:
        text = narrative.get((q.query_id, variant), "")
        if not text.strip():
            raise ValueError(f"query {q.query_id!r} has no {variant!r} narrative; a TREC topic needs one")
        blocks.append(
            f"<top>\n<num> Number: {_token(q.query_id, 'topic number')}\n<title> {q.text}\n"
            f"<desc> Description:\n\n<narr> Narrative:\n{text}\n</top>\n"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(blocks), encoding="utf-8", newline="\n")
    return path


def write_trec_run(rows: list[RunRow], path: Path, *, tag: str) -> Path:
    """Write run rows as a TREC run (``qid Q0 docid rank score tag``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as out:
        for r in rows:
            out.write(f"{_token(r.qid, 'query id')} Q0 {_token(r.doc_id, 'document id')} {r.rank} "
                      f"{r.score!r} {_token(tag, 'run tag')}\n")
    return path
