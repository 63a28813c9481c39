"""The InstructIR layout (only_instruction_queries.jsonl, only_queries.jsonl, qrels/test.tsv,
corpus.jsonl), read by :mod:`formats.readers.instructir`."""
from __future__ import annotations

from pathlib import Path

from formats.bundle import Bundle
from formats.writers._common import INSTRUCTIR_QRELS_HEADER, _write_jsonl, _write_qrels_tsv, _qrels_of, _write_corpus


def write_instructir(bundle: Bundle, out_dir: Path, *, version: str = "original") -> list[Path]:
    """Write the InstructIR split layout: ``only_instruction_queries.jsonl`` (with
    ``metadata.origin_query``), ``only_queries.jsonl``, ``qrels/test.tsv`` (header ``qid pid score``)
    and ``corpus.jsonl`` when the bundle has documents.

    Instances must be ``<qid>_<j>`` with query and group ``<qid>``.
    """
    out_dir = Path(out_dir)
    query_text = {q.query_id: q.text for q in bundle.queries}
    records = []
    for inst in bundle.instances:
        group = inst.instance_id.partition("_")[0]
        if "_" not in inst.instance_id or inst.query_id != group or inst.group_id != group:
            raise ValueError(
                f"instance {inst.instance_id!r} (query {inst.query_id!r}, group {inst.group_id!r}) cannot be "
                "written as InstructIR; expected id '<qid>_<j>' with query and group '<qid>'"
            )
        records.append({"_id": inst.instance_id, "text": inst.instruction,
                        "metadata": {"origin_query": query_text[inst.query_id]}})
    written = _write_corpus(bundle, out_dir)
    written.append(_write_jsonl(out_dir / "only_instruction_queries.jsonl", records))
    written.append(_write_jsonl(out_dir / "only_queries.jsonl",
                                ({"_id": q.query_id, "text": q.text, "metadata": {}} for q in bundle.queries)))
    qrels = _qrels_of(bundle, version)
    if qrels:
        written.append(_write_qrels_tsv(out_dir / "qrels" / "test.tsv", qrels, INSTRUCTIR_QRELS_HEADER))
    return written
