"""The Hugging Face hub layout shared by FollowIR and InfoSearch (queries with instruction_og /
_changed / _reversed, qrels_* folders, top_ranked.jsonl) and its dataset card."""
from __future__ import annotations

from pathlib import Path

from formats.bundle import Bundle
from formats.writers._common import (
    BEIR_QRELS_HEADER,
    _write_jsonl,
    _cell,
    _write_qrels_tsv,
    _qrels_of,
    _write_corpus,
    _instances_by_query,
    _write_qrels_jsonl,
    write_jsonl_rows,
)


def _hub_card(out_dir: Path, configs: list[tuple[str, str, str]], *, title: str, pretty_name: str = "") -> Path:
    """A Hugging Face dataset card whose ``configs`` point at the files, as the published sets have:
    ``datasets.load_dataset(<folder>, "qrels_og")["test"]`` (how MTEB 1.x loads them) then works
    on the folder as on the hub repository."""
    lines = ["---"] + ([f"pretty_name: {pretty_name}"] if pretty_name else []) + ["configs:"]
    for name, split, path in configs:
        lines += [f"- config_name: {name}", "  data_files:", f"  - split: {split}", f"    path: {path}"]
    lines += ["---", "", f"# {pretty_name or title}", "",
              f"{title}, written by IFJudge in the layout of the published hub datasets.", ""]
    path = out_dir / "README.md"
    path.write_text("\n".join(lines), encoding="utf-8", newline="\n")
    return path


def hub_queries(bundle: Bundle, *, infosearch: bool) -> tuple[list[dict], list[str]]:
    """The ``queries.jsonl`` records of the hub layout (FollowIR, or InfoSearch with
    ``instruction_reversed``) and the queries' subsets; a bundle the layout cannot hold is refused
    with a ``ValueError``, before anything is written. Reads no document and no qrels, so a caller
    can check a project's shape before loading its corpus."""
    name = "InfoSearch" if infosearch else "FollowIR"
    by_query = _instances_by_query(bundle)
    variants = ("og", "changed", "reversed") if infosearch else ("og", "changed")
    for inst in bundle.instances:
        expected = f"{inst.query_id}-{inst.variant}"
        if inst.variant not in variants or inst.instance_id != expected or inst.group_id != inst.query_id:
            raise ValueError(
                f"instance {inst.instance_id!r} cannot be written to the {name} "
                f"layout; expected id '<qid>-<variant>' with variant in {variants} and group = query id"
            )
    subsets = sorted({q.subset for q in bundle.queries})
    if infosearch and len(subsets) > 1:
        raise ValueError(
            f"the InfoSearch layout holds one dimension per dataset; this bundle has queries of "
            f"{len(subsets)} ({', '.join(repr(s) for s in subsets)}); expected queries of one dimension"
        )
    records = []
    for q in bundle.queries:
        record = {"_id": q.query_id, "text": q.text}
        for variant in variants:
            inst = by_query.get((q.query_id, variant))
            if inst is None:
                raise ValueError(f"query {q.query_id!r} has no {variant!r} instance; expected one per variant {variants}")
            record[f"instruction_{variant}"] = inst.instruction
        records.append(record)
    return records, subsets


def _write_mteb(bundle: Bundle, out_dir: Path, versions: dict[str, str], split: str, *, infosearch: bool) -> list[Path]:
    """The hub layout shared by FollowIR and InfoSearch (see :func:`write_followir`)."""
    out_dir = Path(out_dir)
    name = "InfoSearch" if infosearch else "FollowIR"
    records, subsets = hub_queries(bundle, infosearch=infosearch)
    written = _write_corpus(bundle, out_dir)
    configs = [("corpus", "corpus", "corpus.jsonl")] if written else []
    written.append(_write_jsonl(out_dir / "queries.jsonl", records))
    configs.append(("queries", "queries", "queries.jsonl"))
    # the hub's score types: FollowIR float64 (2.0), InfoSearch strings ("3"); MTEB casts both to float, then int
    score = str if infosearch else float
    for dirname, version in versions.items():
        qrels = _qrels_of(bundle, version)
        if qrels:
            written.append(_write_qrels_tsv(out_dir / dirname / f"{split}.tsv", qrels, BEIR_QRELS_HEADER))
            written.append(_write_qrels_jsonl(out_dir / dirname / f"{split}.jsonl", qrels, score))
            configs.append((dirname, split, f"{dirname}/{split}.jsonl"))
    if bundle.top_ranked:  # one {"qid", "pid"} row per pair, grouped by query, candidates in order
        written.append(write_jsonl_rows(out_dir / "top_ranked.jsonl", ("qid", "pid"), (
            (_cell(qid, "query id"), _cell(doc_id, "document id"))
            for qid, docs in bundle.top_ranked.items() for doc_id in docs)))
        configs.append(("top_ranked", "top_ranked", "top_ranked.jsonl"))
    pretty = f"{subsets[0]}-v1" if infosearch and subsets and subsets[0] else ""
    written.append(_hub_card(out_dir, configs, title=f"{name} instruction retrieval set", pretty_name=pretty))
    return written
