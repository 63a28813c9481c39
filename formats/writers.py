"""Writers of a :class:`formats.bundle.Bundle` to the file layouts the importers read.

Every writer produces files that :func:`formats.readers.parse` reads back into an equal Bundle
(apart from ``source_files``), for a Bundle of that layout's shape:

============================  ==========================================  ==================
writer                        files                                        import format
============================  ==========================================  ==================
:func:`write_beir`            corpus.jsonl, queries.jsonl, qrels/<split>.tsv  ``beir``
:func:`write_instructir`      only_instruction_queries.jsonl, only_queries.jsonl,
                              qrels/test.tsv, corpus.jsonl                  ``instructir``
:func:`write_followir`        queries.jsonl (instruction_og/_changed), corpus.jsonl,
                              qrels_og/ and qrels_changed/ (.tsv and .jsonl),
                              top_ranked.jsonl ({qid, pid} per pair), README.md  ``followir``
:func:`write_infosearch`      the above plus instruction_reversed, qrels_reversed/  ``infosearch``
:func:`write_ifir`            <s>/<s>-corpus.jsonl, -query.jsonl, -qrel.tsv,
                              test_data.json per domain                     ``ifir``
:func:`write_mteb`            MTEB v2 parquet configs (corpus, queries, instruction,
                              default qrels, qrel_diff, top_ranked) + README.md  ``mteb``
:func:`write_trec_topics`     one TREC topics file                          ``trec``
:func:`write_trec_qrels`      one TREC qrels file                           ``trec``
:func:`write_trec_run`        one TREC run file                             ``trec``
============================  ==========================================  ==================

A Bundle that a layout cannot express (e.g. InstructIR instances written as BEIR) is refused with
a ``ValueError`` saying what the layout needs, rather than written lossily.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

from formats.bundle import Bundle, Instance, Qrel, Query, RunRow

BEIR_QRELS_HEADER = "query-id\tcorpus-id\tscore"
INSTRUCTIR_QRELS_HEADER = "qid\tpid\tscore"


def _write_jsonl(path: Path, records: Iterable[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


def _cell(value: str, what: str) -> str:
    if not value or any(c in value for c in "\t\r\n"):
        raise ValueError(f"{what} {value!r} cannot be written to a TSV cell; expected a non-blank id without tabs or line breaks")
    return value


def _token(value: str, what: str) -> str:
    if not value or any(c.isspace() for c in value):
        raise ValueError(f"{what} {value!r} cannot be written to a TREC file; expected a non-blank id without whitespace")
    return value


def _write_qrels_tsv(path: Path, qrels: list[Qrel], header: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as out:
        out.write(header + "\n")
        for q in qrels:
            out.write(f"{_cell(q.qid, 'query id')}\t{_cell(q.doc_id, 'document id')}\t{q.relevance}\n")
    return path


def _qrels_of(bundle: Bundle, version: str) -> list[Qrel]:
    return [q for q in bundle.qrels if q.version == version]


def _write_corpus(bundle: Bundle, out_dir: Path) -> list[Path]:
    if not bundle.documents:
        return []
    records = ({"_id": d.doc_id, "title": d.title, "text": d.text} for d in bundle.documents)
    return [_write_jsonl(out_dir / "corpus.jsonl", records)]


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


def _instances_by_query(bundle: Bundle) -> dict[tuple[str, str], Instance]:
    return {(i.query_id, i.variant): i for i in bundle.instances}


def _write_qrels_jsonl(path: Path, qrels: list[Qrel], score: Callable[[int], object]) -> Path:
    return _write_jsonl(path, ({"query-id": _cell(q.qid, "query id"), "corpus-id": _cell(q.doc_id, "document id"),
                                "score": score(q.relevance)} for q in qrels))


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


def _write_mteb(bundle: Bundle, out_dir: Path, versions: dict[str, str], split: str, *, infosearch: bool) -> list[Path]:
    """The hub layout shared by FollowIR and InfoSearch (see :func:`write_followir`)."""
    out_dir = Path(out_dir)
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
        written.append(_write_jsonl(out_dir / "top_ranked.jsonl", (
            {"qid": _cell(qid, "query id"), "pid": _cell(doc_id, "document id")}
            for qid, docs in bundle.top_ranked.items() for doc_id in docs)))
        configs.append(("top_ranked", "top_ranked", "top_ranked.jsonl"))
    pretty = f"{subsets[0]}-v1" if infosearch and subsets and subsets[0] else ""
    written.append(_hub_card(out_dir, configs, title=f"{name} instruction retrieval set", pretty_name=pretty))
    return written


def write_followir(bundle: Bundle, out_dir: Path, *, og_version: str = "original",
                   changed_version: str = "changed", split: str = "test") -> list[Path]:
    """Write the FollowIR hub layout (``jhu-clsp/robust04-instructions``, read by MTEB 1.x):

    - ``corpus.jsonl`` ``{"_id", "title", "text"}``;
    - ``queries.jsonl`` ``{"_id", "text", "instruction_og", "instruction_changed"}`` (from the
      instances ``<qid>-og`` and ``<qid>-changed``);
    - ``top_ranked.jsonl``: one ``{"qid": str, "pid": str}`` row per candidate pair, grouped by query;
    - ``qrels_og/<split>.tsv`` (header ``query-id corpus-id score``, integer scores) and
      ``qrels_og/<split>.jsonl`` (``{"query-id": str, "corpus-id": str, "score": float}``, as the
      hub's float64 scores) holding qrels ``og_version``; ``qrels_changed/`` the same for
      ``changed_version`` (e.g. ``"validated"``);
    - ``README.md``: a dataset card whose ``configs`` point at the jsonl files, like the hub's.

    Examples
    --------
    >>> import tempfile
    >>> from formats.readers import parse
    >>> out = Path(tempfile.mkdtemp()) / "robust04"
    >>> bundle = parse("followir", [Path("tests/fixtures/published/followir_hub")])
    >>> [p.relative_to(out).as_posix() for p in write_followir(bundle, out)][:4]
    ['corpus.jsonl', 'queries.jsonl', 'qrels_og/test.tsv', 'qrels_og/test.jsonl']
    >>> parse("followir", [out]).counts() == bundle.counts()
    True
    """
    versions = {"qrels_og": og_version, "qrels_changed": changed_version}
    return _write_mteb(bundle, out_dir, versions, split, infosearch=False)


def write_infosearch(bundle: Bundle, out_dir: Path, *, og_version: str = "original",
                     changed_version: str = "changed", reversed_version: str = "reversed",
                     split: str = "test") -> list[Path]:
    """Write the InfoSearch hub layout (``jianqunZ/Language-v1`` and its five siblings): the
    FollowIR hub layout plus ``instruction_reversed`` and ``qrels_reversed/``, with string scores
    (``"3"``) in the jsonl qrels and no ``top_ranked.jsonl`` (unless the bundle has candidates).

    A dataset holds one dimension: the queries' ``subset`` is written as the card's
    ``pretty_name`` (``Language-v1``), which the reader takes back when the folder's name does not
    say it; a bundle whose queries span several dimensions is refused.

    Examples
    --------
    >>> import tempfile
    >>> from formats.readers import parse
    >>> out = Path(tempfile.mkdtemp()) / "Language-v1"
    >>> bundle = parse("infosearch", [Path("tests/fixtures/published/infosearch/Language-v1")])
    >>> [p.relative_to(out).as_posix() for p in write_infosearch(bundle, out)][-3:]
    ['qrels_reversed/test.tsv', 'qrels_reversed/test.jsonl', 'README.md']
    >>> parse("infosearch", [out]).counts() == bundle.counts()
    True
    """
    versions = {"qrels_og": og_version, "qrels_changed": changed_version, "qrels_reversed": reversed_version}
    return _write_mteb(bundle, out_dir, versions, split, infosearch=True)


def write_ifir(bundle: Bundle, out_dir: Path, *, version: str = "original") -> list[Path]:
    """Write the IFIR release layout, one folder per domain (``Query.subset``)::

        <s>/<s>-corpus.jsonl   {"_id", "title", "text"}
        <s>/<s>-query.jsonl    "<qid>_0": the bare query; "<qid>_<k>": query + " " + instruction
        <s>/<s>-qrel.tsv       query-id, corpus-id, score for "<qid>_0" and "<qid>_<k>"
        <s>/test_data.json     [{"_id", "text", "corpus": [...], "instructions": [{"instruction",
                                 "level", "rel"}]}]

    The shape :mod:`formats.readers.ifir` reads: per query ``<qid>`` (group = query), the bare
    instance ``<qid>_0`` (empty instruction) whose judgments in ``version`` (falling back to
    ``original``) are the item's candidate corpus, instances ``<qid>_<k>`` of variant ``level<k>``
    and ``<qid>_inst`` (a level-0 instruction, variant ``og``) whose relevant documents in
    ``version`` are the gold passages (``rel``). A level-0 instruction appears only in
    ``test_data.json``. Ids prefixed with their domain (``fiqa/12``, as a several-domain import
    stores them) are written without the prefix; with several domains every document id must carry
    one, to tell which corpus it belongs to.

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
    domains: dict[str, list] = {}
    for q in bundle.queries:
        if not q.subset:
            raise ValueError(f"query {q.query_id!r} has no domain (subset); the IFIR layout is one folder per "
                             "domain: import with --subset or give every query its domain")
        domains.setdefault(q.subset, []).append(q)
    several = len(domains) > 1

    def local(value: str, domain: str) -> str:
        return value[len(domain) + 1:] if value.startswith(domain + "/") else value

    documents: dict[str, list] = {d: [] for d in domains}
    doc_by_id = {d.doc_id: d for d in bundle.documents}
    for doc in bundle.documents:
        owner = next((d for d in domains if doc.doc_id.startswith(d + "/")), None)
        if owner is None and several:
            raise ValueError(f"document {doc.doc_id!r} has no domain prefix ('<domain>/<id>'); with several "
                             f"domains ({', '.join(domains)}) each document id must say which corpus it belongs to")
        documents[owner or next(iter(domains))].append(doc)

    def relevant(v: str) -> dict[str, list[Qrel]]:
        out: dict[str, list[Qrel]] = {}
        for q in _qrels_of(bundle, v):
            if q.relevance > 0:
                out.setdefault(q.qid, []).append(q)
        return out

    judged, fallback = relevant(version), relevant("original")
    by_group: dict[str, list[Instance]] = {}
    for inst in bundle.instances:
        if inst.group_id != inst.query_id:
            raise ValueError(f"instance {inst.instance_id!r} cannot be written as IFIR; expected its group to be "
                             "its query id")
        by_group.setdefault(inst.query_id, []).append(inst)

    written: list[Path] = []
    for domain, queries in domains.items():
        folder = out_dir / domain
        corpus_records = [{"_id": local(d.doc_id, domain), "title": d.title, "text": d.text}
                          for d in documents[domain]]
        written.append(_write_jsonl(folder / f"{domain}-corpus.jsonl", corpus_records))
        items, query_rows, qrel_rows = [], [], []
        for q in queries:
            qid = local(q.query_id, domain)
            bare_id = f"{q.query_id}_0"
            bare = judged.get(bare_id) or fallback.get(bare_id, [])
            corpus = [r.doc_id for r in bare]
            instructions = []
            for inst in by_group.get(q.query_id, []):
                if inst.instance_id == bare_id:
                    if inst.instruction or inst.variant != "og":
                        raise ValueError(f"instance {bare_id!r} is the bare query in the IFIR layout; expected "
                                         "an empty instruction and variant 'og'")
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
            missing = [d for d in corpus if d not in doc_by_id]
            if missing:
                raise ValueError(f"query {q.query_id!r} is judged on document {missing[0]!r}, which the bundle "
                                 "does not hold; the IFIR item corpus needs every passage's text")
            items.append({
                "_id": qid, "text": q.text,
                "corpus": [{"_id": local(d, domain), "title": doc_by_id[d].title, "text": doc_by_id[d].text}
                           for d in corpus],
                "instructions": [{"instruction": text, "level": level, "rel": [corpus.index(r.doc_id) for r in gold]}
                                 for level, text, gold in instructions],
            })
            query_rows.append({"_id": f"{qid}_0", "text": q.text})
            qrel_rows += [Qrel(f"{qid}_0", local(r.doc_id, domain), r.relevance) for r in bare]
            for level, text, gold in instructions:
                if level:
                    query_rows.append({"_id": f"{qid}_{level}", "text": f"{q.text} {text}"})
                    qrel_rows += [Qrel(f"{qid}_{level}", local(r.doc_id, domain), r.relevance) for r in gold]
        written.append(_write_jsonl(folder / f"{domain}-query.jsonl", query_rows))
        if qrel_rows:
            written.append(_write_qrels_tsv(folder / f"{domain}-qrel.tsv", qrel_rows, BEIR_QRELS_HEADER))
        test_data = folder / "test_data.json"
        test_data.write_text(json.dumps(items, ensure_ascii=False, indent=4) + "\n", encoding="utf-8", newline="\n")
        written.append(test_data)
    return written


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


# --- MTEB v2 parquet layout (read back by formats.readers.mteb) -----------------------------------

def _mteb_subset_ok(name: str) -> bool:
    """A subset that can be part of a config and folder name: letters, digits, '_', '.', inner '-'."""
    return bool(name) and name[0] != "-" and name[-1] != "-" and "--" not in name and all(
        c.isascii() and (c.isalnum() or c in "_.-") for c in name)


def is_followir_shaped(bundle: Bundle) -> bool:
    """True when every instance is ``<q>-og`` / ``<q>-changed`` of query and group ``<q>`` and every
    query has both."""
    if not bundle.instances:
        return False
    have: dict[str, set[str]] = {}
    for inst in bundle.instances:
        if (inst.variant not in ("og", "changed") or inst.instance_id != f"{inst.query_id}-{inst.variant}"
                or inst.group_id != inst.query_id):
            return False
        have.setdefault(inst.query_id, set()).add(inst.variant)
    return all(have.get(q.query_id) == {"og", "changed"} for q in bundle.queries)


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


def is_ifir_shaped(bundle: Bundle) -> bool:
    """True when the bundle has IFIR instructions (levels 1-3 or a level-0 ``<q>_inst``) and every
    other instance is a bare query ``<q>_0`` (empty instruction)."""
    levels = [ifir_level(i) for i in bundle.instances]
    if not any(level is not None for level in levels):
        return False
    return all(level is not None or (i.instance_id == f"{i.query_id}_0" and not i.instruction and i.group_id == i.query_id)
               for i, level in zip(bundle.instances, levels))


def _ifir_as_mteb(bundle: Bundle, version: str) -> Bundle:
    """An IFIR bundle as the generic MTEB bundle MTEB's IFIR tasks read: one query per instruction,
    id ``<q>_v<k>`` (level k; ``<q>_v0`` for a level-0 instruction), text = the query, its
    instruction, the instruction's judgments of ``version``. A bare query ``<q>_0`` is refused: MTEB's
    IFIR tasks score instructed queries only (drop the bare queries first, and say so)."""
    text = {q.query_id: q for q in bundle.queries}
    new_id: dict[str, str] = {}
    queries, instances = [], []
    for inst in bundle.instances:
        level = ifir_level(inst)
        if level is None:
            raise ValueError(f"instance {inst.instance_id!r} is the bare query of {inst.query_id!r}; MTEB's IFIR "
                             "tasks hold the instructed queries only (expected the bundle without bare queries)")
        qid = f"{inst.query_id}_v{level}"
        new_id[inst.instance_id] = qid
        query = text[inst.query_id]
        queries.append(Query(qid, query.text, query.subset))
        instances.append(Instance(qid, qid, qid, inst.instruction, "og"))
    return Bundle(
        documents=bundle.documents, queries=queries, instances=instances,
        qrels=[Qrel(new_id[q.qid], q.doc_id, q.relevance, q.version) for q in bundle.qrels
               if q.version == version and q.qid in new_id],
        top_ranked={new_id[k]: v for k, v in bundle.top_ranked.items() if k in new_id},
    )


def write_mteb(bundle: Bundle, out_dir: Path, *, og_version: str = "original", changed_version: str = "changed",
               version: str | None = None, split: str = "test") -> list[Path]:
    """Write the MTEB v2 parquet layout and the ``README.md`` whose ``configs:`` block the hub and
    ``datasets.load_dataset`` read.

    A FollowIR-shaped bundle (instances ``<q>-og`` / ``<q>-changed`` of every query) is written as
    ``jhu-clsp/*-instructions-mteb`` publishes it (``mteb/Robust04InstructionRetrieval``):

    ===============  ===================================  =====================================
    config           file                                  columns
    ===============  ===================================  =====================================
    ``corpus``       ``corpus/corpus-00000-of-00001``      ``_id``, ``title``, ``text``
    ``queries``      ``queries/queries-...``               ``_id`` (``<q>-og``, ``<q>-changed``), ``text``
    ``instruction``  ``instruction/instruction-...``       ``query-id``, ``instruction``
    ``default``      ``data/default-...`` (split test)     ``query-id``, ``corpus-id``, ``score`` (float)
    ``qrel_diff``    ``qrel_diff/qrel_diff-...``           ``query-id`` (``<q>``), ``corpus-ids``
    ``top_ranked``   ``top_ranked/top_ranked-...``         ``query-id``, ``corpus-ids``
    ===============  ===================================  =====================================

    Qrels ``og_version`` are the ``<q>-og`` rows and ``changed_version`` the ``<q>-changed`` rows;
    ``qrel_diff`` lists per query the documents of the og qrels whose changed label differs (see
    :func:`formats.readers.mteb.qrel_diff`); the candidate list of ``<q>`` is written for both ids.
    A query subset (mFollowIR's language) is a config suffix: ``corpus-fas``.

    Any other bundle is written as MTEB's own ``_push_dataset_to_hub`` writes a retrieval task:
    configs ``corpus`` (``id``, ``title``, ``text``), ``queries`` (``id``, ``text`` and an
    ``instruction`` column when any query has one), ``instruction`` (one row per query, likewise),
    ``qrels`` (``score`` int64, qrels ``version``, default ``og_version``) and ``top_ranked``, each
    in ``<config>/<split>-00000-of-00001.parquet``. A query without instruction gets ``""`` (MTEB
    looks every query up and its collator refuses a null). Its instances must have the id and group
    of their query, variant ``og``. A subset is a config prefix: ``fas-corpus``. With several
    subsets, each subset's corpus holds the documents its qrels and top_ranked name, plus the
    documents no subset names.

    An IFIR bundle (:func:`is_ifir_shaped`) is written for MTEB's IFIR tasks, which tell a query's
    level by ``"v1" in id``: one query per instruction, ``<q>_v<k>`` (``<q>_v0`` for a level-0
    instruction ``<q>_inst``), text = the query, with its instruction and its judgments; one
    domain gets unprefixed configs and its name as the card's ``pretty_name``. A bare query
    ``<q>_0`` is refused (MTEB's IFIR tasks score instructed queries only).

    Nothing is written when the bundle cannot be expressed (``ValueError`` says why).

    Examples
    --------
    >>> import tempfile
    >>> from formats.readers import parse
    >>> out = Path(tempfile.mkdtemp()) / "mteb"
    >>> bundle = parse("mteb", [Path("tests/fixtures/published/mteb_generic")])
    >>> [p.relative_to(out).as_posix() for p in write_mteb(bundle, out)][:2]
    ['fas-corpus/test-00000-of-00001.parquet', 'fas-queries/test-00000-of-00001.parquet']
    >>> parse("mteb", [out]).counts() == bundle.counts()
    True
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from formats.readers.mteb import qrel_diff

    out_dir = Path(out_dir)
    followir = is_followir_shaped(bundle)
    version = og_version if version is None else version
    pretty_name = ""
    if not followir and is_ifir_shaped(bundle):
        domains = {q.subset for q in bundle.queries}
        bundle = _ifir_as_mteb(bundle, version)
        if len(domains) == 1:  # one domain: unprefixed configs, as MTEB's IFIR tasks load them; the card names it
            pretty_name = domains.pop()
            bundle.queries = [Query(q.query_id, q.text) for q in bundle.queries]
    if not bundle.documents:
        raise ValueError("the MTEB layout needs a corpus; expected a bundle with documents")
    doc_ids = {d.doc_id for d in bundle.documents}
    subset_of = {q.query_id: q.subset for q in bundle.queries}
    for name in sorted(set(subset_of.values()) - {""}):
        if not _mteb_subset_ok(name):
            raise ValueError(f"subset {name!r} cannot name an MTEB config; expected letters, digits, '_', '.' "
                             "and inner '-' only")
    if not followir:
        for inst in bundle.instances:
            if inst.instance_id != inst.query_id or inst.group_id != inst.query_id or inst.variant != "og":
                raise ValueError(
                    f"instance {inst.instance_id!r} (query {inst.query_id!r}, variant {inst.variant!r}) cannot be "
                    "written to the MTEB layout; expected FollowIR instances '<q>-og' and '<q>-changed' for every "
                    "query, or instances whose id and group equal their query id, variant 'og'"
                )
        ends = {}
        for q in bundle.queries:
            for suffix in ("-og", "-changed"):
                if q.query_id.endswith(suffix) and len(q.query_id) > len(suffix):
                    ends.setdefault(q.query_id[: -len(suffix)], set()).add(suffix)
        if bundle.queries and len(ends) * 2 == len(bundle.queries) and all(len(v) == 2 for v in ends.values()):
            raise ValueError("every query id ends in '-og' / '-changed' in pairs, which MTEB reads as FollowIR; "
                             "expected the FollowIR instances of the queries instead")
    versions = (og_version, changed_version) if followir else (version,)
    for q in bundle.qrels:
        if q.version not in versions:
            continue
        if q.qid not in subset_of:
            raise ValueError(f"qrels of {q.qid!r} (version {q.version!r}) are not keyed by a query id; the MTEB "
                             "layout keys qrels by query")
        if q.doc_id not in doc_ids:
            raise ValueError(f"qrels of {q.qid!r} name document {q.doc_id!r}, which the corpus lacks")
    for qid, docs in bundle.top_ranked.items():
        if qid not in subset_of:
            raise ValueError(f"top_ranked of {qid!r} is not keyed by a query id")
        if missing := [d for d in docs if d not in doc_ids]:
            raise ValueError(f"top_ranked of {qid!r} names document {missing[0]!r}, which the corpus lacks")

    s = pa.string()
    ids_type = pa.list_(pa.string())
    tables: list[tuple[str, str, str, object]] = []  # (config, folder, split, table)
    subsets = sorted(set(subset_of.values()))
    # with several subsets each gets the documents its qrels and top_ranked name (and those no subset names)
    named: dict[str, set[str]] = {}
    for q in bundle.qrels:
        if q.version in versions and q.qid in subset_of:
            named.setdefault(subset_of[q.qid], set()).add(q.doc_id)
    for qid, docs in bundle.top_ranked.items():
        named.setdefault(subset_of[qid], set()).update(docs)
    anywhere = set().union(*named.values()) if named else set()

    def corpus_of(subset: str):
        docs = [d for d in bundle.documents
                if len(subsets) == 1 or d.doc_id in named.get(subset, set()) or d.doc_id not in anywhere]
        return pa.table({
            "_id" if followir else "id": pa.array([d.doc_id for d in docs], s),
            "title": pa.array([d.title for d in docs], s),
            "text": pa.array([d.text for d in docs], s),
        })
    instruction = {i.query_id if not followir else i.instance_id: i.instruction for i in bundle.instances}
    for subset in subsets:
        corpus = corpus_of(subset)
        queries = [q for q in bundle.queries if q.subset == subset]
        in_subset = {q.query_id for q in queries}
        if followir:
            def cfg(role: str) -> str:
                return f"{role}-{subset}" if subset else role
            qids = [f"{q.query_id}-{v}" for q in queries for v in ("og", "changed")]
            text = [q.text for q in queries for _ in (0, 1)]
            og: dict[str, dict[str, int]] = {}
            ch: dict[str, dict[str, int]] = {}
            rows = []
            for v, target, suffix in ((og_version, og, "-og"), (changed_version, ch, "-changed")):
                for q in bundle.qrels:
                    if q.version == v and q.qid in in_subset:
                        rows.append((q.qid + suffix, q.doc_id, float(q.relevance)))
                        target.setdefault(q.qid, {})[q.doc_id] = q.relevance
            diff = qrel_diff(og, ch)
            top = [(f"{qid}{suffix}", docs) for qid, docs in bundle.top_ranked.items() if qid in in_subset
                   for suffix in ("-og", "-changed")]
            qrels_cfg = cfg("default")
            tables += [
                (cfg("corpus"), cfg("corpus"), "corpus", corpus),
                (cfg("queries"), cfg("queries"), "queries",
                 pa.table({"_id": pa.array(qids, s), "text": pa.array(text, s)})),
                (cfg("instruction"), cfg("instruction"), "instruction",
                 pa.table({"query-id": pa.array(qids, s), "instruction": pa.array([instruction[i] for i in qids], s)})),
                (qrels_cfg, "data" if qrels_cfg == "default" else qrels_cfg, split,
                 pa.table({"query-id": pa.array([r[0] for r in rows], s), "corpus-id": pa.array([r[1] for r in rows], s),
                           "score": pa.array([r[2] for r in rows], pa.float64())})),
                (cfg("qrel_diff"), cfg("qrel_diff"), "qrel_diff",
                 pa.table({"query-id": pa.array(list(diff), s), "corpus-ids": pa.array(list(diff.values()), ids_type)})),
            ]
        else:
            def cfg(role: str) -> str:
                return f"{subset}-{role}" if subset else role
            columns = {"id": pa.array([q.query_id for q in queries], s), "text": pa.array([q.text for q in queries], s)}
            with_instruction = any(q.query_id in instruction for q in queries)
            if with_instruction:  # "" for a query without one, as MTEB's datasets have it (its collator refuses null)
                columns["instruction"] = pa.array([instruction.get(q.query_id, "") for q in queries], s)
            rows = [(q.qid, q.doc_id, q.relevance) for q in bundle.qrels if q.version == version and q.qid in in_subset]
            top = [(qid, docs) for qid, docs in bundle.top_ranked.items() if qid in in_subset]
            tables += [
                (cfg("corpus"), cfg("corpus"), split, corpus),
                (cfg("queries"), cfg("queries"), split, pa.table(columns)),
                (cfg("qrels"), cfg("qrels"), split,
                 pa.table({"query-id": pa.array([r[0] for r in rows], s), "corpus-id": pa.array([r[1] for r in rows], s),
                           "score": pa.array([r[2] for r in rows], pa.int64())})),
            ]
            if with_instruction:
                tables.append((cfg("instruction"), cfg("instruction"), split, pa.table({
                    "query-id": pa.array([q.query_id for q in queries], s),
                    "instruction": pa.array([instruction.get(q.query_id, "") for q in queries], s)})))
        if top:
            tables.append((cfg("top_ranked"), cfg("top_ranked"), "top_ranked" if followir else split, pa.table({
                "query-id": pa.array([t[0] for t in top], s), "corpus-ids": pa.array([list(t[1]) for t in top], ids_type)})))

    written: list[Path] = []
    card = ["---"] + ([f"pretty_name: {json.dumps(pretty_name)}"] if pretty_name else []) + ["configs:"]
    for config, folder, split_name, table in tables:
        stem = "default" if folder == "data" else split_name
        path = out_dir / folder / f"{stem}-00000-of-00001.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path)
        written.append(path)
        card += [f"- config_name: {json.dumps(config)}", "  data_files:",
                 f"  - split: {json.dumps(split_name)}", f"    path: {json.dumps(f'{folder}/{stem}-*')}"]
    card += ["tags:", "- mteb", "- text", "---", "",
             "Exported by IFJudge in the MTEB v2 retrieval layout"
             + (" of FollowIR (queries '<q>-og' / '<q>-changed', instruction, default qrels, qrel_diff, top_ranked)."
                if followir else " (corpus, queries, qrels, instruction, top_ranked)."), ""]
    if pretty_name:
        card[-1:] = [f"IFIR domain {pretty_name}: one query per instruction, '<q>_v<level>' as MTEB's IFIR tasks "
                     "read the level.", ""]
    readme = out_dir / "README.md"
    readme.write_text("\n".join(card), encoding="utf-8", newline="\n")
    written.append(readme)
    return written
