"""The BEIR layout (corpus.jsonl, queries.jsonl, qrels/<split>.tsv), read by :mod:`formats.readers.beir`."""
from __future__ import annotations

from pathlib import Path

from formats.bundle import Bundle
from formats.writers._common import BEIR_QRELS_HEADER, _write_jsonl, _write_qrels_tsv, _qrels_of, _write_corpus


def write_beir(bundle: Bundle, out_dir: Path, *, version: str = "original", split: str = "test") -> list[Path]:
    """Write the BEIR layout: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``.

    Qrels of ``version`` are written (the BEIR layout holds one version). A query that has an
    instance of the same id (group = query id, variant ``og``) gets an ``instruction`` field; any
    other instance cannot be expressed in BEIR and is refused.

    Examples
    --------
    >>> import tempfile
    >>> from formats.readers import parse
    >>> out = Path(tempfile.mkdtemp()) / "beir"
    >>> bundle = parse("beir", [Path("tests/fixtures/importers/beir")])
    >>> [p.relative_to(out).as_posix() for p in write_beir(bundle, out)]
    ['corpus.jsonl', 'queries.jsonl', 'qrels/test.tsv']
    >>> parse("beir", [out]).counts() == bundle.counts()
    True
    """
    out_dir = Path(out_dir)
    instruction: dict[str, str] = {}
    for inst in bundle.instances:
        if inst.instance_id != inst.query_id or inst.group_id != inst.query_id or inst.variant != "og":
            raise ValueError(
                f"instance {inst.instance_id!r} (query {inst.query_id!r}, variant {inst.variant!r}) cannot be "
                "written as BEIR; expected instances whose id and group equal their query id, variant 'og' "
                "(use write_instructir / write_followir / write_ifir for this bundle)"
            )
        instruction[inst.query_id] = inst.instruction
    written = _write_corpus(bundle, out_dir)
    records = []
    for q in bundle.queries:
        record = {"_id": q.query_id, "text": q.text}
        if q.query_id in instruction:
            record["instruction"] = instruction[q.query_id]
        records.append(record)
    written.append(_write_jsonl(out_dir / "queries.jsonl", records))
    qrels = _qrels_of(bundle, version)
    if qrels:
        written.append(_write_qrels_tsv(out_dir / "qrels" / f"{split}.tsv", qrels, BEIR_QRELS_HEADER))
    return written
