"""The MTEB v2 parquet layout (read back by :mod:`formats.readers.mteb`)."""
from __future__ import annotations

import json
from array import array
from itertools import accumulate
from pathlib import Path

from formats.bundle import Bundle, Instance, Qrel, Query
from formats.corpus import StreamedCorpus, corpus_ids, utf8_rows
from formats.writers.ifir import domain_documents, ifir_domains, ifir_level, is_ifir_shaped


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
        subset_documents=bundle.subset_documents,
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
    subsets, each subset's corpus holds its own documents (``Bundle.subset_documents``: MTEB ranks
    a subset's queries against its corpus config, as IFJudge's evaluation does); without a corpus
    per subset every subset's corpus holds every document (IFJudge ranks them against the whole
    corpus).

    An IFIR bundle (:func:`is_ifir_shaped`) is written for MTEB's IFIR tasks, which tell a query's
    level by ``"v1" in id``: one query per instruction, ``<q>_v<k>`` (``<q>_v0`` for a level-0
    instruction ``<q>_inst``), text = the query, with its instruction and its judgments; one
    domain gets unprefixed configs and its name as the card's ``pretty_name``. Several domains are
    written **one folder per domain** (``<out>/fiqa/``, ``<out>/nfcorpus/``), each a dataset of
    that domain alone with its own corpus, as IFIR publishes them on the hub (``if-ir/fiqa``) and as
    MTEB's IFIR task of the domain (``IFIRFiQA``) loads it; the ids keep their ``<domain>/`` prefix.
    A bare query ``<q>_0`` is refused (MTEB's IFIR tasks score instructed queries only).

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
    out_dir = Path(out_dir)
    followir = is_followir_shaped(bundle)
    version = og_version if version is None else version
    if not followir and is_ifir_shaped(bundle) and len({q.subset for q in bundle.queries}) > 1:
        return _write_ifir_domains(bundle, out_dir, version=version, split=split)
    bundle, pretty_name = _mteb_input(bundle, followir, version)
    versions = (og_version, changed_version) if followir else (version,)
    _check_mteb(bundle, followir, versions)
    subset_of = {q.query_id: q.subset for q in bundle.queries}
    tables: list[tuple[str, str, str, object]] = []  # (config, folder, split, table)
    subsets = sorted(set(subset_of.values()))
    instruction = {i.query_id if not followir else i.instance_id: i.instruction for i in bundle.instances}
    for subset in subsets:
        corpus = _subset_corpus(bundle, subset, subsets, followir)
        queries = [q for q in bundle.queries if q.subset == subset]
        if followir:
            tables += _followir_tables(bundle, subset, queries, corpus, instruction, og_version, changed_version, split)
        else:
            tables += _generic_tables(bundle, subset, queries, corpus, instruction, version, split)
    return _write_tables(out_dir, tables, followir=followir, pretty_name=pretty_name)


def _write_ifir_domains(bundle: Bundle, out_dir: Path, *, version: str, split: str) -> list[Path]:
    """Several IFIR domains, one MTEB dataset folder each (``<out>/<domain>/``), and a root
    ``README.md`` naming them and the MTEB task class that loads each."""
    domains = ifir_domains(bundle)
    owner = domain_documents(bundle, domains)
    written: list[Path] = []
    for domain, queries in domains.items():
        qids = {q.query_id for q in queries}
        instances = [i for i in bundle.instances if i.query_id in qids]
        keys = qids | {i.instance_id for i in instances}
        keep = {d for d, o in owner.items() if o == domain}
        part = Bundle(documents=_only(bundle.documents, keep), queries=list(queries), instances=instances,
                      qrels=[q for q in bundle.qrels if q.qid in keys],
                      top_ranked={k: v for k, v in bundle.top_ranked.items() if k in keys})
        written += write_mteb(part, out_dir / domain, version=version, split=split)
    readme = out_dir / "README.md"
    readme.write_text("\n".join([
        "IFIR domains exported by IFJudge in the MTEB v2 retrieval layout, one dataset folder per domain, each with",
        "its own corpus (as IFIR publishes them: if-ir/<domain>). Load a folder with MTEB's IFIR task of that domain",
        "(e.g. IFIRFiQA for fiqa/), or import it back with `ifjudge import`:", "",
        *(f"- {d}/: {len(q)} queries" for d, q in domains.items()), ""]), encoding="utf-8", newline="\n")
    return [*written, readme]


def _only(documents, keep: set[str]) -> StreamedCorpus:
    """The documents of ``keep`` (a list or a streamed corpus, filtered a chunk at a time)."""
    ids = [d for d in corpus_ids(documents) if d in keep]
    wanted = {d.encode() for d in ids}
    return StreamedCorpus(ids, lambda: ([r for r in rows if r[0] in wanted] for rows in utf8_rows(documents)))


def _mteb_input(bundle: Bundle, followir: bool, version: str) -> tuple[Bundle, str]:
    """The bundle as written (an IFIR bundle as MTEB's IFIR tasks read it, :func:`_ifir_as_mteb`)
    and the card's pretty name (the one IFIR domain, else "")."""
    pretty_name = ""
    if not followir and is_ifir_shaped(bundle):
        domains = {q.subset for q in bundle.queries}
        bundle = _ifir_as_mteb(bundle, version)
        if len(domains) == 1:  # one domain: unprefixed configs, as MTEB's IFIR tasks load them; the card names it
            pretty_name = domains.pop()
            bundle.queries = [Query(q.query_id, q.text) for q in bundle.queries]
    return bundle, pretty_name


def _check_mteb(bundle: Bundle, followir: bool, versions: tuple[str, ...]) -> None:
    """Refuse (``ValueError``) what the MTEB layout cannot express."""
    if not bundle.documents:
        raise ValueError("the MTEB layout needs a corpus; expected a bundle with documents")
    doc_ids = set(corpus_ids(bundle.documents))
    subset_of = {q.query_id: q.subset for q in bundle.queries}
    for name in sorted(set(subset_of.values()) - {""}):
        if not _mteb_subset_ok(name):
            raise ValueError(f"subset {name!r} cannot name an MTEB config; expected letters, digits, '_', '.' "
                             "and inner '-' only")
    if not followir:
        _check_generic_instances(bundle)
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


def _check_generic_instances(bundle: Bundle) -> None:
    """A generic MTEB bundle: one instance per query (id and group = the query id, variant og), and no
    query ids that MTEB would read as FollowIR pairs."""
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


def _subset_corpus(bundle: Bundle, subset: str, subsets: list[str], followir: bool):
    """The corpus table of one subset: with several subsets its own documents
    (``Bundle.subset_documents``), else every document."""
    import pyarrow as pa

    own = bundle.subset_documents.get(subset) if len(subsets) > 1 and bundle.subset_documents else None
    mine = None if own is None else {d.encode() for d in own}
    ids: list[bytes] = []
    titles: list[bytes] = []
    texts: list[bytes] = []
    for rows in utf8_rows(bundle.documents):
        for doc_id, title, text in rows:
            if mine is not None and doc_id not in mine:
                continue
            ids.append(doc_id)
            titles.append(title)
            texts.append(text)
    return pa.table({"_id" if followir else "id": _string_array(ids), "title": _string_array(titles),
                     "text": _string_array(texts)})


def _string_array(values: list[bytes]):
    """A pyarrow string array of UTF-8 ``values`` (the array ``pa.array(strings, pa.string())`` gives),
    built from one buffer of the bytes and their offsets instead of one conversion per value."""
    import pyarrow as pa

    data = b"".join(values)
    if len(data) >= 2**31:  # beyond 32-bit offsets: pyarrow splits the column into chunks itself
        return pa.array([v.decode() for v in values], pa.string())
    offsets = array("i", accumulate(map(len, values), initial=0))
    out = pa.Array.from_buffers(pa.string(), len(values), [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    out.validate(full=True)  # the bytes are UTF-8
    return out


def _top_ranked_table(config: str, split: str, top: list[tuple[str, list[str]]]) -> list[tuple]:
    """The top_ranked config of a subset ([] without candidate lists)."""
    import pyarrow as pa

    if not top:
        return []
    return [(config, config, split, pa.table({"query-id": pa.array([t[0] for t in top], pa.string()),
                                              "corpus-ids": pa.array([list(t[1]) for t in top], pa.list_(pa.string()))}))]


def _followir_tables(bundle: Bundle, subset: str, queries: list[Query], corpus, instruction: dict,
                     og_version: str, changed_version: str, split: str) -> list[tuple]:
    """The configs of one subset of a FollowIR bundle (queries '<q>-og' / '<q>-changed')."""
    import pyarrow as pa

    from formats.readers.mteb import qrel_diff

    def cfg(role: str) -> str:
        return f"{role}-{subset}" if subset else role
    s = pa.string()
    in_subset = {q.query_id for q in queries}
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
    return [
        (cfg("corpus"), cfg("corpus"), "corpus", corpus),
        (cfg("queries"), cfg("queries"), "queries", pa.table({"_id": pa.array(qids, s), "text": pa.array(text, s)})),
        (cfg("instruction"), cfg("instruction"), "instruction",
         pa.table({"query-id": pa.array(qids, s), "instruction": pa.array([instruction[i] for i in qids], s)})),
        (qrels_cfg, "data" if qrels_cfg == "default" else qrels_cfg, split,
         pa.table({"query-id": pa.array([r[0] for r in rows], s), "corpus-id": pa.array([r[1] for r in rows], s),
                   "score": pa.array([r[2] for r in rows], pa.float64())})),
        (cfg("qrel_diff"), cfg("qrel_diff"), "qrel_diff",
         pa.table({"query-id": pa.array(list(diff), s), "corpus-ids": pa.array(list(diff.values()), pa.list_(s))})),
    ] + _top_ranked_table(cfg("top_ranked"), "top_ranked", top)


def _generic_tables(bundle: Bundle, subset: str, queries: list[Query], corpus, instruction: dict,
                    version: str, split: str) -> list[tuple]:
    """The configs of one subset of a generic bundle (one query per instance)."""
    import pyarrow as pa

    def cfg(role: str) -> str:
        return f"{subset}-{role}" if subset else role
    s = pa.string()
    in_subset = {q.query_id for q in queries}
    columns = {"id": pa.array([q.query_id for q in queries], s), "text": pa.array([q.text for q in queries], s)}
    with_instruction = any(q.query_id in instruction for q in queries)
    if with_instruction:  # "" for a query without one, as MTEB's datasets have it (its collator refuses null)
        columns["instruction"] = pa.array([instruction.get(q.query_id, "") for q in queries], s)
    rows = [(q.qid, q.doc_id, q.relevance) for q in bundle.qrels if q.version == version and q.qid in in_subset]
    top = [(qid, docs) for qid, docs in bundle.top_ranked.items() if qid in in_subset]
    tables = [
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
    return tables + _top_ranked_table(cfg("top_ranked"), split, top)


def _write_tables(out_dir: Path, tables: list[tuple], *, followir: bool, pretty_name: str) -> list[Path]:
    """Write each (config, folder, split, table) as parquet and the README.md whose ``configs:``
    block names them."""
    import pyarrow.parquet as pq

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
