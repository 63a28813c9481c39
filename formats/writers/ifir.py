"""The IFIR release layout (one folder per domain), read by :mod:`formats.readers.ifir`."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from formats.bundle import BARE, Bundle, Instance, Qrel, Query
from formats.corpus import corpus_ids
from formats.writers._common import BEIR_QRELS_HEADER, _write_jsonl, _write_qrels_tsv, _qrels_of


def write_ifir(bundle: Bundle, out_dir: Path, *, version: str = "original") -> list[Path]:
    """Write the IFIR release layout, one folder per domain (``Query.subset``)::

        <s>/<s>-corpus.jsonl   {"_id", "title", "text"}
        <s>/<s>-query.jsonl    "<qid>_0": the bare query; "<qid>_<k>": query + " " + instruction
        <s>/<s>-qrel.tsv       query-id, corpus-id, score for "<qid>_0" and "<qid>_<k>"
        <s>/test_data.json     [{"_id", "text", "corpus": [...], "instructions": [{"instruction",
                                 "level", "rel"}]}]

    The shape :mod:`formats.readers.ifir` reads: per query ``<qid>`` (group = query), the bare
    instance ``<qid>_0`` (empty instruction, variant ``bare``) whose judgments in ``version`` (falling back to
    ``original``) are the item's candidate corpus, instances ``<qid>_<k>`` of variant ``level<k>``
    and ``<qid>_inst`` (a level-0 instruction, variant ``og``) whose relevant documents in
    ``version`` are the gold passages (``rel``). A level-0 instruction appears only in
    ``test_data.json``. Ids prefixed with their domain (``fiqa/12``, as a several-domain import
    stores them) are written without the prefix; with several domains each domain's folder holds its
    own corpus (``Bundle.subset_documents``, else the documents whose id carries its prefix); a
    document of no domain is refused.

    Examples
    --------
    >>> import tempfile
    >>> from formats.readers import parse
    >>> out = Path(tempfile.mkdtemp()) / "ifir"
    >>> bundle = parse("ifir", [Path("tests/fixtures/published/ifir")])
    >>> [p.relative_to(out).as_posix() for p in write_ifir(bundle, out)][:4]
    ['fiqa/fiqa-corpus.jsonl', 'fiqa/fiqa-query.jsonl', 'fiqa/fiqa-qrel.tsv', 'fiqa/test_data.json']
    >>> parse("ifir", [out]).counts() == bundle.counts()
    True
    """
    out_dir = Path(out_dir)
    domains = ifir_domains(bundle)
    bundle = replace(bundle, documents=list(bundle.documents))  # a streamed corpus read once (the items need texts)
    documents = _documents_by_domain(bundle, domains)
    judged, fallback = _relevant(bundle, version), _relevant(bundle, "original")
    by_group: dict[str, list[Instance]] = {}
    for inst in bundle.instances:
        if inst.group_id != inst.query_id:
            raise ValueError(f"instance {inst.instance_id!r} cannot be written as IFIR; expected its group to be "
                             "its query id")
        by_group.setdefault(inst.query_id, []).append(inst)
    doc_by_id = {d.doc_id: d for d in bundle.documents}
    written: list[Path] = []
    for domain, queries in domains.items():
        folder = out_dir / domain
        corpus_records = [{"_id": _local(d.doc_id, domain), "title": d.title, "text": d.text}
                          for d in documents[domain]]
        written.append(_write_jsonl(folder / f"{domain}-corpus.jsonl", corpus_records))
        items, query_rows, qrel_rows = [], [], []
        for q in queries:
            item, rows, qrels = _item(q, domain, by_group.get(q.query_id, []), judged, fallback, doc_by_id)
            items.append(item)
            query_rows += rows
            qrel_rows += qrels
        written.append(_write_jsonl(folder / f"{domain}-query.jsonl", query_rows))
        if qrel_rows:
            written.append(_write_qrels_tsv(folder / f"{domain}-qrel.tsv", qrel_rows, BEIR_QRELS_HEADER))
        test_data = folder / "test_data.json"
        test_data.write_text(json.dumps(items, ensure_ascii=False, indent=4) + "\n", encoding="utf-8", newline="\n")
        written.append(test_data)
    return written


def _local(value: str, domain: str) -> str:
    """An id without its ``<domain>/`` prefix."""
    return value[len(domain) + 1:] if value.startswith(domain + "/") else value


def ifir_domains(bundle: Bundle) -> dict[str, list[Query]]:
    """domain -> its queries; a query without a domain is refused (``ValueError``): the first check of
    :func:`write_ifir`, on the queries only (a caller can run it before loading the corpus)."""
    domains: dict[str, list] = {}
    for q in bundle.queries:
        if not q.subset:
            raise ValueError(f"query {q.query_id!r} has no domain (subset); the IFIR layout is one folder per "
                             "domain: import with --subset or give every query its domain")
        domains.setdefault(q.subset, []).append(q)
    return domains


def domain_documents(bundle: Bundle, domains: dict[str, list]) -> dict[str, str]:
    """doc id -> its domain (``Bundle.subset_documents``, else by id prefix; with one domain every
    document is its); reads no text. With several domains, a document of none is refused
    (``ValueError``)."""
    several = len(domains) > 1
    owner_of = {doc_id: d for d, ids in bundle.subset_documents.items() if d in domains for doc_id in ids}
    out = {}
    for doc_id in corpus_ids(bundle.documents):
        owner = owner_of.get(doc_id) or next((d for d in domains if doc_id.startswith(d + "/")), None)
        if owner is None and several:
            raise ValueError(f"document {doc_id!r} has no domain prefix ('<domain>/<id>'); with several "
                             f"domains ({', '.join(domains)}) each document id must say which corpus it belongs to")
        out[doc_id] = owner or next(iter(domains))
    return out


def _documents_by_domain(bundle: Bundle, domains: dict[str, list]) -> dict[str, list]:
    """domain -> its documents (:func:`domain_documents`)."""
    owner = domain_documents(bundle, domains)
    documents: dict[str, list] = {d: [] for d in domains}
    for doc in bundle.documents:
        documents[owner[doc.doc_id]].append(doc)
    return documents


def _relevant(bundle: Bundle, version: str) -> dict[str, list[Qrel]]:
    """qrels id -> its relevant judgments (label > 0) in ``version``."""
    out: dict[str, list[Qrel]] = {}
    for q in _qrels_of(bundle, version):
        if q.relevance > 0:
            out.setdefault(q.qid, []).append(q)
    return out


def _instructions(q: Query, group: list[Instance], judged: dict, corpus: list[str]) -> list[tuple]:
    """(level, instruction, gold judgments) of each instruction of query ``q``; the gold passages
    are appended to the item's ``corpus``. An instance of another shape is refused."""
    bare_id = f"{q.query_id}_0"
    instructions = []
    for inst in group:
        if inst.instance_id == bare_id:
            if inst.instruction or inst.variant not in (BARE, "og"):  # og: stored before bare queries had a variant
                raise ValueError(f"instance {bare_id!r} is the bare query in the IFIR layout; expected "
                                 f"an empty instruction and variant {BARE!r}")
            continue
        if inst.instance_id == q.query_id + "_inst" and inst.variant == "og":
            level = 0
        elif (inst.variant in ("level1", "level2", "level3")
              and inst.instance_id == f"{q.query_id}_{inst.variant[-1]}"):
            level = int(inst.variant[-1])
        else:
            raise ValueError(f"instance {inst.instance_id!r} (variant {inst.variant!r}) cannot be written as "
                             f"IFIR; expected '{q.query_id}_<k>' of variant 'level<k>' (k = 1..3), "
                             f"'{q.query_id}_inst' of variant 'og' or the bare query '{bare_id}'")
        gold = judged.get(inst.instance_id, [])
        for r in gold:
            if r.doc_id not in corpus:
                corpus.append(r.doc_id)
        instructions.append((level, inst.instruction, gold))
    return instructions


def _item(q: Query, domain: str, group: list[Instance], judged: dict, fallback: dict,
          doc_by_id: dict) -> tuple[dict, list[dict], list[Qrel]]:
    """(the test_data.json item, the query-file rows, the qrels rows) of one query."""
    qid = _local(q.query_id, domain)
    bare_id = f"{q.query_id}_0"
    bare = judged.get(bare_id) or fallback.get(bare_id, [])
    corpus = [r.doc_id for r in bare]
    instructions = _instructions(q, group, judged, corpus)
    missing = [d for d in corpus if d not in doc_by_id]
    if missing:
        raise ValueError(f"query {q.query_id!r} is judged on document {missing[0]!r}, which the bundle "
                         "does not hold; the IFIR item corpus needs every passage's text")
    item = {
        "_id": qid, "text": q.text,
        "corpus": [{"_id": _local(d, domain), "title": doc_by_id[d].title, "text": doc_by_id[d].text}
                   for d in corpus],
        "instructions": [{"instruction": text, "level": level, "rel": [corpus.index(r.doc_id) for r in gold]}
                         for level, text, gold in instructions],
    }
    query_rows = [{"_id": f"{qid}_0", "text": q.text}]
    qrel_rows = [Qrel(f"{qid}_0", _local(r.doc_id, domain), r.relevance) for r in bare]
    for level, text, gold in instructions:
        if level:
            query_rows.append({"_id": f"{qid}_{level}", "text": f"{q.text} {text}"})
            qrel_rows += [Qrel(f"{qid}_{level}", _local(r.doc_id, domain), r.relevance) for r in gold]
    return item, query_rows, qrel_rows


def ifir_level(inst: Instance) -> int | None:
    """The IFIR level of an instruction instance (``<q>_<k>`` of variant ``level<k>``, or ``<q>_inst``
    of variant ``og`` for level 0), None for any other instance."""
    if inst.group_id != inst.query_id:
        return None
    if inst.variant in ("level1", "level2", "level3") and inst.instance_id == f"{inst.query_id}_{inst.variant[-1]}":
        return int(inst.variant[-1])
    if inst.variant == "og" and inst.instance_id == f"{inst.query_id}_inst":
        return 0
    return None


def is_bare(inst: Instance) -> bool:
    """True for the bare query of an IFIR group: ``<q>_0``, empty instruction, variant ``bare``
    (``og`` in a project stored before bare queries had their own variant)."""
    return (inst.instance_id == f"{inst.query_id}_0" and not inst.instruction and inst.group_id == inst.query_id
            and inst.variant in (BARE, "og"))


def is_ifir_shaped(bundle: Bundle) -> bool:
    """True when the bundle has IFIR instructions (levels 1-3 or a level-0 ``<q>_inst``) and every
    other instance is a bare query ``<q>_0`` (empty instruction)."""
    levels = [ifir_level(i) for i in bundle.instances]
    if not any(level is not None for level in levels):
        return False
    return all(level is not None or is_bare(i) for i, level in zip(bundle.instances, levels))
