"""Exports of a validated project: qrels (TREC, BEIR), the FollowIR/MTEB layout, JSONL per
instance with its validation provenance, the validated instance set, the report, and a manifest.

Every export writes ``manifest.json``: input file hashes, the studies the validated versions were
built from (with their completeness), study settings, counts, unresolved judgments, tool version,
and ``left_out``: what the layout could not hold, with counts and why (:func:`left_out_lines` says
it in words for the terminal and the Export page).
"""
from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from formats import digests, writers as layouts
from formats.corpus import corpus_ids
from storage import projects, studies
from formats.bundle import PUBLISHED_QRELS_VERSIONS, Bundle, Instance, Qrel, Query
from storage.db import Database, now_iso
from storage.errors import IFJudgeError

if TYPE_CHECKING:
    from annotation.outcomes.items import ValidationRules
    from annotation.outcomes.qrels_builds import BuildInputs

# The builds, the report and the FollowIR bundle (numpy, pandas, statsmodels) are imported where an
# export runs: FORMATS, the choices of `ifjudge export --format`, is read without them.


def tool_version() -> str:
    try:
        return metadata.version("ifjudge")
    except metadata.PackageNotFoundError:
        return "unknown"


def study_choices(db: Database, project: dict) -> list[dict]:
    """The studies of ``project`` (its row) a lead can build validated qrels from, each with its completeness
    (``labelled`` / ``planned``) and kind; the lead picks them (nothing is chosen by default)."""
    from annotation.outcomes.qrels_builds import _study_kind, study_completeness

    out = []
    for s in studies.list_studies(db, project["id"]):
        info = study_completeness(db, s["id"], study=s)
        info["kind"] = _study_kind(s)
        out.append(info)
    return out


def _with_builds(bundle: Bundle, builds: dict) -> Bundle:
    kept = [q for q in bundle.qrels if q.version in PUBLISHED_QRELS_VERSIONS]
    for version, b in builds.items():
        kept += [Qrel(qid, d, r, version) for qid, docs in b.qrels.items() for d, r in docs.items()]
    return replace(bundle, qrels=kept)


def _sha256(path: Path) -> str:
    """The file's SHA-256 (the digest its writer recorded while writing it, :mod:`formats.digests`)."""
    return digests.sha256(path)


@dataclass
class ExportJob:
    """What one export writes from: the project's row (:func:`storage.projects.get_project`) and
    bundle with the validated versions of ``builds``, the studies (``study_ids``), the output
    folder; ``notes`` and ``left_out`` collect what the manifest says about the layout
    (``left_out``: ``{"what", "count", "why"}``); ``inputs``: what the builds read (the studies'
    rows, the qrels versions), read once for the whole export."""

    db: Database
    project: dict
    bundle: Bundle
    builds: dict
    study_ids: list[int]
    out: Path
    notes: list[str] = field(default_factory=list)
    left_out: list[dict] = field(default_factory=list)
    raw_csv: bool = False
    inputs: BuildInputs | None = None

    def qrels(self, version: str) -> dict[str, dict[str, int]]:
        """The stored qrels ``version`` (as the builds read it; read once per export)."""
        if self.inputs is None:
            return projects.qrels(self.db, self.project["id"], version)
        return self.inputs.qrels(version)

    @property
    def versions(self) -> list[str]:
        """The qrels versions of the bundle, published first."""
        return sorted({q.version for q in self.bundle.qrels}, key=_version_order)

    @property
    def best(self) -> str:
        """The most validated version present (validated, changed-validated, changed, original)."""
        return next((v for v in ("validated", "changed-validated", "changed", "original") if v in self.versions), "original")

    @property
    def decisions(self) -> dict:
        """The instance decisions of the ``validated`` build (:func:`_decisions`)."""
        return _decisions(self.builds.get("validated"))


def _export_trec(job: ExportJob) -> list[Path]:
    """One TREC qrels file per version."""
    return [layouts.write_trec_qrels(job.bundle, job.out / f"qrels.{v}.txt", version=v) for v in job.versions]


def subsets_left_out(bundle: Bundle, layout: str) -> list[dict]:
    """The ``left_out`` entry of a layout that holds one dataset without subsets (BEIR, FollowIR's
    hub layout) for a project of several subsets: their queries are written together, against the
    union of their corpora, which is not how each subset is evaluated.

    >>> b = Bundle(queries=[Query("a", "x", "fas"), Query("b", "y", "rus")])
    >>> subsets_left_out(b, "BEIR")[0]["count"], subsets_left_out(Bundle(queries=[Query("a", "x")]), "BEIR")
    (2, [])
    """
    names = sorted({q.subset for q in bundle.queries})
    if len(names) < 2:
        return []
    return [{"what": "query subsets", "count": len(names), "judgments": 0,
             "why": f"the {layout} layout is one dataset without subsets: the queries of {', '.join(names[:4])}"
                    f"{', ...' if len(names) > 4 else ''} are written together and their corpora as one; "
                    "the mteb export keeps each subset with its own corpus"}]


def _export_beir(job: ExportJob) -> list[Path]:
    """One query per instance, each judged by its side's qrels (as the generic MTEB layout)."""
    part, omitted = per_instance_part(job.bundle, job.versions, loader="a BEIR evaluation")
    job.left_out += omitted + subsets_left_out(job.bundle, "BEIR")
    return layouts.write_beir(part, job.out, version="original")


def _export_followir(job: ExportJob) -> list[Path]:
    """The FollowIR hub layout (:func:`_write_followir_shaped`)."""
    job.left_out += subsets_left_out(job.bundle, "FollowIR hub")
    return _write_followir_shaped(lambda b, **kw: layouts.write_followir(b, job.out, **kw), job,
                                  left_out=job.left_out)


def _export_infosearch(job: ExportJob) -> list[Path]:
    """The InfoSearch hub layout; validated queries replace their published judgments."""
    part, kw = job.bundle, {}
    for published in ("changed", "reversed"):
        derived = f"{published}-validated"
        if derived in job.builds:
            part = _merged_validated(part, job.builds[derived].qrels, published=published)
            kw[f"{published}_version"] = derived
        elif published not in job.versions:
            kw[f"{published}_version"] = job.best
    return layouts.write_infosearch(part, job.out, og_version="original", **kw)


def _export_mteb(job: ExportJob) -> list[Path]:
    """MTEB v2 parquet configs: a FollowIR project as FollowIR, any other one query per instance."""
    bundle = job.bundle
    if layouts.is_followir_shaped(bundle):
        part, kw = _followir_part(job)
        return layouts.write_mteb(part, job.out, **kw)
    part, omitted = mteb_part(bundle, job.versions)
    job.left_out += omitted
    domains = sorted({q.subset for q in bundle.queries})
    if layouts.is_ifir_shaped(bundle) and len(domains) > 1:
        job.notes.append(f"{len(domains)} IFIR domains written one dataset folder per domain ({', '.join(d + '/' for d in domains)}),"
                         " each with its own corpus: MTEB's IFIR task of a domain loads its folder (IFIRFiQA: fiqa/)")
    elif len(domains) > 1 and not bundle.subset_documents:
        job.notes.append(f"{len(domains)} subsets share one corpus: each subset's corpus config holds every document, "
                         "as IFJudge ranks them")
    return layouts.write_mteb(part, job.out, version="original")


def _export_ifir(job: ExportJob) -> list[Path]:
    """The IFIR release layout of the most validated version."""
    return layouts.write_ifir(job.bundle, job.out, version=job.best)


def _export_jsonl(job: ExportJob) -> list[Path]:
    """instances.jsonl with provenance, the validated instance set, provenance per built version."""
    decisions = job.decisions
    written = [_write_instances_jsonl(job.bundle, decisions, job.out / "instances.jsonl")]
    if "validated" in job.builds:
        written += _write_validated_set(job.bundle, decisions, job.out / "validated_instances")
    for v, b in job.builds.items():
        written.append(layouts.write_jsonl(job.out / f"provenance.{v}.jsonl", b.provenance))
    return written


def _export_instructir(job: ExportJob) -> list[Path]:
    """The InstructIR release layout: the validated instance set (the instances the validation
    keeps, with the validated qrels) when a validated version was built, else the published set."""
    if "validated" in job.builds:
        return layouts.write_instructir(_kept_subset(job.bundle, job.decisions), job.out)
    return layouts.write_instructir(job.bundle, job.out)


def _export_report(job: ExportJob) -> list[Path]:
    """The report of each study (one folder per study when there are several)."""
    from exports import report

    written = []
    for sid in job.study_ids:
        target = job.out if len(job.study_ids) == 1 else job.out / f"study-{sid}"
        target.mkdir(parents=True, exist_ok=True)
        written += report.write_report(job.db, sid, target, builds=job.builds, raw_csv=job.raw_csv,
                                       study=None if job.inputs is None else job.inputs.studies.get(sid))
    return written


# The one table of export formats: name -> writer of an ExportJob (the order is the CLI's and the page's).
EXPORTERS: dict[str, Callable[[ExportJob], list[Path]]] = {
    "trec": _export_trec, "beir": _export_beir, "followir": _export_followir, "infosearch": _export_infosearch,
    "mteb": _export_mteb, "ifir": _export_ifir, "instructir": _export_instructir, "jsonl": _export_jsonl,
    "report": _export_report,
}
FORMATS = tuple(EXPORTERS)


def export_project(
    db: Database,
    project: dict,
    fmt: str,
    out_dir: str | Path,
    *,
    study_ids: list[int] | None = None,
    study_id: int | None = None,
    rules: ValidationRules | None = None,
    unresolved: str | None = None,
    allow_incomplete: bool = False,
    raw_csv: bool = False,
) -> dict:
    """Write the export ``fmt`` of ``project`` (its row, :func:`storage.projects.get_project`)
    into ``out_dir``; returns the manifest. (The command
    line writes through :func:`export_to_folder`, which refuses to mix an export with other files.)
    CSV cells a spreadsheet would run as formulas get an apostrophe unless ``raw_csv``
    (:mod:`formats.spreadsheet`).

    The validated versions (``validated``, ``changed-validated``, ``reversed-validated``) are built
    from the studies named in ``study_ids`` (or ``study_id``) and only from them
    (:func:`annotation.outcomes.qrels_builds.build_versions`); without a study only the published versions
    are exported. Unresolved judgments need ``unresolved`` (keep-published | drop | relevant |
    not-relevant), a study with unlabelled assignments needs ``allow_incomplete``. The manifest
    names the studies with their completeness (labelled / planned), the provenance counts and the
    unresolved judgments with the treatment chosen. The format's writer comes from
    :data:`EXPORTERS`.
    """
    from annotation.outcomes.items import ValidationRules
    from annotation.outcomes.qrels_builds import BuildInputs, build_versions

    if fmt not in EXPORTERS:
        raise IFJudgeError(f"unknown export format {fmt!r}; expected one of {', '.join(FORMATS)}")
    rules = rules or ValidationRules()
    ids = list(dict.fromkeys([*(study_ids or []), *([study_id] if study_id is not None else [])]))
    out = Path(out_dir)
    # the project, its qrels (in the bundle) and the studies are read once and passed down; the
    # builds and the report read each study's items and labels once (shared reads)
    proj, name = project, project["name"]
    with studies.shared_reads(db):
        projects.share_project(db, proj)  # what the report's library functions read by id
        if fmt == "report" and not ids:
            raise IFJudgeError(f"name the study to report on (--study ID); studies of {name!r}: "
                               + (", ".join(f"{s['id']} ({s['name']})" for s in studies.list_studies(db, proj["id"]))
                                  or "none"))
        bundle = projects.project_bundle(db, proj["id"], documents=False)
        _check_layout(name, fmt, bundle)
        inputs = BuildInputs.read(db, proj, ids, allow_incomplete) if ids else None
        builds = build_versions(db, proj, ids, rules=rules, unresolved=unresolved, inputs=inputs) if ids else {}
        if _needs_documents(fmt, builds):
            bundle = replace(bundle, documents=projects.streamed_corpus(db, proj["id"]))  # read by the writer in chunks
        out.mkdir(parents=True, exist_ok=True)
        job = ExportJob(db, proj, _with_builds(bundle, builds), builds, ids, out, raw_csv=raw_csv, inputs=inputs)
        try:
            written = EXPORTERS[fmt](job)
        except ValueError as exc:  # the layout cannot express this project
            raise IFJudgeError(f"cannot export {name!r} as {fmt}: {exc}") from None
        manifest = _manifest(job, proj, fmt, _study_infos(inputs, builds), rules, unresolved, written)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return manifest


def export_to_folder(db: Database, project: dict, fmt: str, out_dir: str | Path, *, replace_out: bool = False,
                     **options) -> dict:
    """:func:`export_project` into ``out_dir`` as a whole (``ifjudge export --out``): a new or empty
    folder; an existing file or a folder holding files is refused unless ``replace_out``, and then
    replaced whole (a folder only when it is a previous export, with its ``manifest.json``). The
    export is written into a new folder beside ``out_dir`` and put in its place at the end, so a
    failed export leaves ``out_dir`` as it was and nothing old is left beside the new files."""
    out = Path(out_dir)
    _check_out(out, replace_out)
    staging = _staging(out)
    try:
        manifest = export_project(db, project, fmt, staging, **options)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _swap_in(staging, out)
    return manifest


def _check_out(out: Path, replace_out: bool) -> None:
    """Refuse an ``--out`` that is a file or a folder holding files, unless asked to replace it;
    never replace a folder that is not an export (no ``manifest.json``)."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        if not replace_out:
            raise IFJudgeError(f"{out} is a file; give a new or empty folder as --out, or --replace to replace the file "
                               "with the export")
    elif out.is_dir() and any(out.iterdir()):
        if not replace_out:
            raise IFJudgeError(f"{out} is not empty; give a new or empty folder as --out, or --replace to replace the "
                               "folder and everything in it with this export")
        if not (out / "manifest.json").is_file():
            raise IFJudgeError(f"{out} holds files but no manifest.json: it is not an IFJudge export, so --replace "
                               "does not delete it; give a new or empty folder as --out")


def _staging(out: Path) -> Path:
    """A new folder beside ``out`` (same file system) that the export is written into."""
    import secrets

    out = out.resolve()
    if not out.name:
        raise IFJudgeError(f"{out} cannot hold an export; give a folder such as ./export")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.parent / f".{out.name}.{secrets.token_hex(4)}.partial"
    staging.mkdir()
    return staging


def _swap_in(staging: Path, out: Path) -> None:
    """Put the finished export at ``out``, replacing whatever is there whole."""
    import os

    out, old = out.resolve() if not out.is_symlink() else out.absolute(), None
    if out.is_symlink() or out.exists():
        old = staging.with_suffix(".old")
        os.rename(out, old)
    os.rename(staging, out)
    if old is not None:
        if old.is_dir() and not old.is_symlink():
            shutil.rmtree(old, ignore_errors=True)
        else:
            old.unlink(missing_ok=True)


# What a layout checks on the project's queries and instances alone, before any build or document is
# read: the first refusal of its writer, with the same words.
LAYOUT_CHECKS: dict[str, Callable[[Bundle], object]] = {
    "infosearch": lambda b: layouts.hub_queries(b, infosearch=True), "ifir": layouts.ifir_domains,
}
# Formats whose files hold no document text: the corpus is not read for them.
TEXT_FREE = ("trec", "report")


def _check_layout(project: str, fmt: str, bundle: Bundle) -> None:
    check = LAYOUT_CHECKS.get(fmt)
    try:
        if check is not None:
            check(bundle)
    except ValueError as exc:
        raise IFJudgeError(f"cannot export {project!r} as {fmt}: {exc}") from None


def _needs_documents(fmt: str, builds: dict) -> bool:
    """Whether the export writes document text: not for TREC qrels and the report, nor for JSONL
    unless it writes the validated instance set (a layout with its corpus)."""
    if fmt == "jsonl":
        return "validated" in builds
    return fmt not in TEXT_FREE


def _study_infos(inputs: BuildInputs | None, builds: dict) -> list[dict]:
    """The named studies with their completeness, as the builds checked them (``inputs.infos``)."""
    infos = list({i["id"]: i for b in builds.values() for i in b.studies}.values()) if builds else []
    if inputs is not None and not infos:
        infos = [{k: v for k, v in i.items() if k != "kind"} for i in inputs.infos]
    return infos


def _manifest(job: ExportJob, proj: dict, fmt: str, infos: list[dict], rules: ValidationRules,
              unresolved: str | None, written: list[Path]) -> dict:
    """The manifest of an export (see the module docstring)."""
    db, bundle, builds, out, versions = job.db, job.bundle, job.builds, job.out, job.versions
    checked = builds["validated"].instances if "validated" in builds else {}  # counted, not described (_decisions)
    rows = job.inputs.studies if job.inputs is not None else {}
    first = rows[job.study_ids[0]] if job.study_ids else None
    return {
        "tool": "ifjudge", "version": tool_version(), "created_at": now_iso(), "project": proj["name"],
        "kind": proj["kind"], "format": fmt,
        "inputs": [{"path": p, "sha256": h} for p, h in bundle.source_files],
        "studies": [{**i, "settings": {k: v for k, v in rows[i["id"]]["settings"].items() if k != "guidelines"},
                     "annotators": rows[i["id"]]["annotators"]} for i in infos],
        "study": None if first is None else {
            "id": first["id"], "name": first["name"], "questions": first["questions"],
            "settings": {k: v for k, v in first["settings"].items() if k != "guidelines"},
            "annotators": first["annotators"],
        },
        "rules": asdict(rules),
        "unresolved_policy": unresolved,
        "qrels_versions": {
            v: {"built_from": "published"} if v in PUBLISHED_QRELS_VERSIONS else {
                "built_from": [i["id"] for i in builds[v].studies], "validates": builds[v].base_version,
                "counts": builds[v].counts, "unresolved": builds[v].unresolved}
            for v in versions
        },
        "counts": {
            **projects.project_counts(db, proj["id"]),
            **{f"{v.replace('-', '_')}_qrels": sum(q.version == v for q in bundle.qrels) for v in builds},
            "instances_checked": len(checked),
            "instances_dropped": sum(not d["keep"] for d in checked.values()),
        },
        "files": [{"path": str(p.relative_to(out)), "sha256": _sha256(p)} for p in written],
        "notes": job.notes,
        "left_out": job.left_out + validation_left_out(builds),
    }


def validation_left_out(builds: dict) -> list[dict]:
    """What the validated versions leave out of their published version, for the manifest's
    ``left_out`` (beside what a layout could not hold): per version the instances the studies
    dropped, with their reasons counted, or the judgments left out; each entry marked ``"by":
    "validation"``.

    >>> from annotation.outcomes.qrels_builds import QrelsBuild
    >>> gone = {"relevance": None, "published": 1, "provenance": "majority"}
    >>> b = QrelsBuild("validated", "original", {"a_1": {"d": 1}}, [gone, gone], [], {},
    ...                instances={"a_2": {"keep": False, "why": ["invalid"]}, "a_3": {"keep": False, "why": ["invalid",
    ...                           "unnatural"]}, "a_1": {"keep": True, "why": []}})
    >>> validation_left_out({"validated": b})
    [{'what': 'instances', 'count': 2, 'judgments': 2, 'version': 'validated', 'why': 'the studies dropped them: invalid 2, unnatural 1', 'by': 'validation'}]
    >>> left_out_lines({"format": "trec", "left_out": validation_left_out({"validated": b})})
    ['the validated qrels leave out 2 instances (2 judgments): the studies dropped them: invalid 2, unnatural 1']
    """
    from collections import Counter

    out = []
    for v, b in builds.items():
        n = b.counts["left_out"]
        dropped = [d for d in b.instances.values() if not d["keep"]]
        if dropped:
            why = Counter(r for d in dropped for r in (d["why"] or ["unresolved, dropped"]))
            out.append({"what": "instances", "count": len(dropped), "judgments": n, "version": v,
                        "why": "the studies dropped them: " + ", ".join(f"{r} {k}" for r, k in why.most_common()),
                        "by": "validation"})
        elif n:
            out.append({"what": "judgments", "count": n, "version": v, "by": "validation",
                        "why": "unresolved, left out as chosen for unresolved judgments"})
    return out


def left_out_lines(manifest: dict) -> list[str]:
    """One sentence per thing the export leaves out (``manifest["left_out"]``): what its layout
    could not hold, and what the validation dropped.

    Examples
    --------
    >>> left_out_lines({"format": "mteb", "left_out": [
    ...     {"what": "bare queries", "count": 2, "judgments": 8, "why": "not a query of MTEB's IFIR tasks"}]})
    ["mteb export left out 2 bare queries (8 judgments): not a query of MTEB's IFIR tasks"]
    """
    return [(f"the {e['version']} qrels leave out" if e.get("by") == "validation"
             else f"{manifest['format']} export left out") + f" {e['count']} {e['what']}"
            + (f" ({e['judgments']} judgments)" if e.get("judgments") else "") + f": {e['why']}"
            for e in manifest.get("left_out", [])]


def _merged_validated(bundle: Bundle, validated: dict[str, dict[str, int]], *, published: str = "changed") -> Bundle:
    """The bundle with ``<published>-validated`` = the ``published`` qrels, each validated query's
    replaced by its validated judgments (the full side a layout needs)."""
    derived = f"{published}-validated"
    rows = [q for q in bundle.qrels if q.version != derived]
    merged = [replace(q, version=derived) for q in bundle.qrels if q.version == published and q.qid not in validated]
    merged += [Qrel(qid, d, r, derived) for qid, docs in validated.items() for d, r in docs.items()]
    return replace(bundle, qrels=rows + merged)


def _followir_part(job: ExportJob) -> tuple[Bundle, dict]:
    """What a FollowIR layout (hub v1 or MTEB v2) holds for the project, and the writer's version
    arguments. After a re-judging round (``changed-validated`` built on narrative chains):
    instruction_changed = the re-judged narrative, qrels_changed = the human outcome (queries
    without a round keep their published changed qrels)."""
    from exports.followir import followir_bundle

    db, bundle, versions, best, builds, notes = job.db, job.bundle, job.versions, job.best, job.builds, job.notes
    # FollowIR re-judging: of expert edits (a new instruction version) or of the published changed one
    rejudged = builds.get("edited-validated") or builds.get("changed-validated")
    if rejudged is not None and rejudged.settings.get("scale"):
        part, skipped = followir_bundle(db, job.project, changed_qrels=rejudged.qrels, qrels=job.qrels)
        if not part.queries:
            raise ValueError("no query has an original and a changed narrative; " + "; ".join(skipped[:3]))
        notes += skipped
        return part, {}
    if rejudged is not None:  # validated queries replace their published changed qrels
        return _merged_validated(bundle, rejudged.qrels), {"og_version": "original", "changed_version": "changed-validated"}
    return bundle, {"og_version": "original", "changed_version": "changed" if "changed" in versions else best}


def _write_followir_shaped(write, job: ExportJob, *, left_out: list[dict] | None = None) -> list[Path]:
    """Write the project with ``write(bundle, **versions)`` in a FollowIR layout. A project that
    mixes other instances writes only its queries with an original and a changed narrative (and
    counts the rest in ``left_out``); one with none of them is refused (``ValueError``)."""
    part, kw = _followir_part(job)
    try:
        return write(part, **kw)
    except ValueError as exc:
        from exports.followir import followir_bundle

        mixed, skipped = followir_bundle(job.db, job.project, qrels=job.qrels)
        if not mixed.queries:
            raise
        bundle = job.bundle
        job.notes += [f"only the {len(mixed.queries)} query(ies) with an original and a changed narrative were "
                  f"written; the rest of the project does not fit the layout ({exc})", *skipped]
        if left_out is not None:
            why = "the FollowIR layout holds queries with an original and a changed instruction only"
            kept_docs = set(corpus_ids(mixed.documents))
            for what, count in (("instances", len(bundle.instances) - len(mixed.instances)),
                                ("queries", len(bundle.queries) - len(mixed.queries)),
                                ("documents", sum(d not in kept_docs for d in corpus_ids(bundle.documents)))):
                if count:
                    left_out.append({"what": what, "count": count, "judgments": 0, "why": why})
        return write(mixed)


def _qrels_version_for(variant: str, versions: list[str]) -> str:
    """The qrels version an instance of ``variant`` is judged by in a one-version layout: the
    validated build of its side where there is one, else the published version of its side
    (``changed`` for a changed instruction, ``reversed`` for a reversed one, else ``original``)."""
    published = variant if variant in ("changed", "reversed") else "original"
    derived = "validated" if published == "original" else f"{published}-validated"
    return derived if derived in versions else published


def mteb_part(bundle: Bundle, versions: list[str]) -> tuple[Bundle, list[dict]]:
    """What MTEB's generic retrieval layout holds of a project that is not wholly FollowIR, and what
    it leaves out (``[{"what", "count", "why"}]``).

    Every instance becomes one MTEB query (id = instance id, text = its query, its instruction, ""
    for none) judged by the qrels of its side (:func:`_qrels_version_for`), keyed by the instance or
    else by its query: so a FollowIR query of a mixed project becomes ``<q>-og`` with the original
    qrels and ``<q>-changed`` with the changed ones. A query without instances is one MTEB query
    without instruction. Every document is written. An IFIR project keeps its instances (the writer
    gives them MTEB's ``<q>_v<k>`` ids) except the bare queries ``<q>_0``: MTEB's IFIR tasks score
    instructed queries only. Instances without judgments are written but counted, since MTEB's
    loader drops a query that has no qrels.

    Examples
    --------
    >>> from annotation.demo import demo_bundle
    >>> part, omitted = mteb_part(demo_bundle(), ["original", "changed"])
    >>> len(part.queries), len(part.documents), omitted
    (14, 18, [])
    """
    if not layouts.is_ifir_shaped(bundle):
        return per_instance_part(bundle, versions, loader="MTEB's loader")
    rows: dict[tuple[str, str], list[Qrel]] = {}
    for q in bundle.qrels:
        rows.setdefault((q.version, q.qid), []).append(q)
    omitted: list[dict] = []
    version = _qrels_version_for("og", versions)
    bare = [i for i in bundle.instances if layouts.ifir_level(i) is None]
    bare_ids = {i.instance_id for i in bare}
    if bare:
        judged = sum(len(rows.get((version, i), [])) for i in bare_ids)
        omitted.append({"what": "bare queries", "count": len(bare), "judgments": judged,
                        "why": "the bare query '<q>_0' (no instruction) is not a query of MTEB's IFIR tasks, "
                               "which score the instructed queries only; the ifir export holds it"})
    if version not in PUBLISHED_QRELS_VERSIONS:  # instances a validated build drops are not written
        bare_ids |= {i.instance_id for i in bundle.instances if (version, i.instance_id) not in rows}
    part = replace(bundle, instances=[i for i in bundle.instances if i.instance_id not in bare_ids],
                   qrels=[replace(q, version="original") for q in bundle.qrels
                          if q.version == version and q.qid not in bare_ids],
                   narratives=[], runs={})
    levels = {layouts.ifir_level(i) for i in part.instances} - {0}
    if levels and levels != {1, 2, 3}:
        omitted.append({"what": "instruction levels", "count": 3 - len(levels), "judgments": 0,
                        "why": f"no instruction of level {' or '.join(str(k) for k in sorted({1, 2, 3} - levels))}; "
                               "MTEB's IFIR tasks average levels 1, 2 and 3 each and fail on an empty level"})
    return part, omitted


def per_instance_part(bundle: Bundle, versions: list[str], *, loader: str) -> tuple[Bundle, list[dict]]:
    """One query per instance (id = instance id, text = its query, its instruction), judged by the
    qrels of its side (:func:`_qrels_version_for`) keyed by the instance or else by its query; a
    query without instances stays one query without instruction; every document. An instance that
    a validated build drops (no judgment in the derived version) is not written; one without any
    judgment in a published version is written and counted, since ``loader`` drops it. Returns
    (bundle, left out)."""
    text = {q.query_id: q for q in bundle.queries}
    rows: dict[tuple[str, str], list[Qrel]] = {}
    for q in bundle.qrels:
        rows.setdefault((q.version, q.qid), []).append(q)
    queries, instances, qrels, top = [], [], [], {}
    with_instances = set()
    unjudged = []
    for inst in bundle.instances:
        with_instances.add(inst.query_id)
        version = _qrels_version_for(inst.variant, versions)
        if inst.variant in ("changed", "reversed") and f"{inst.variant}-validated" in versions and \
                (version, inst.instance_id) not in rows and (version, inst.query_id) not in rows:
            version = inst.variant  # a query the re-judging did not reach keeps its published judgments
        own = rows.get((version, inst.instance_id)) or rows.get((version, inst.query_id), [])
        if not own and version not in PUBLISHED_QRELS_VERSIONS:
            continue  # dropped by the validation (the manifest counts it)
        query = text.get(inst.query_id)
        queries.append(Query(inst.instance_id, query.text if query else "", query.subset if query else ""))
        instances.append(Instance(inst.instance_id, inst.instance_id, inst.instance_id, inst.instruction, "og"))
        qrels += [Qrel(inst.instance_id, q.doc_id, q.relevance, "original") for q in own]
        if not own:
            unjudged.append(inst.instance_id)
        cands = bundle.top_ranked.get(inst.instance_id) or bundle.top_ranked.get(inst.query_id)
        if cands:
            top[inst.instance_id] = list(cands)
    version = _qrels_version_for("og", versions)
    for q in bundle.queries:
        if q.query_id in with_instances:
            continue
        own = rows.get((version, q.query_id), [])
        if not own and version not in PUBLISHED_QRELS_VERSIONS:
            continue
        queries.append(q)
        qrels += [replace(r, version="original") for r in own]
        if not own:
            unjudged.append(q.query_id)
        if q.query_id in bundle.top_ranked:
            top[q.query_id] = list(bundle.top_ranked[q.query_id])
    omitted = []
    if unjudged:
        omitted.append({"what": "queries without judgments", "count": len(unjudged), "judgments": 0,
                        "why": f"written, but {loader} drops a query that has no qrels (e.g. "
                               + ", ".join(repr(u) for u in unjudged[:3]) + ")"})
    return Bundle(documents=bundle.documents, queries=queries, instances=instances, qrels=qrels, top_ranked=top,
                  subset_documents=bundle.subset_documents), omitted


def _version_order(v: str) -> tuple:
    order = ("original", "changed", "reversed", "validated", "changed-validated", "reversed-validated",
             "edited-validated")
    return (order.index(v) if v in order else len(order), v)


def _decisions(build) -> dict:
    """instance id -> {"keep", "why", "questions": {question: {value, provenance, label_counts, gold?}}}."""
    if build is None:
        return {}
    out = {}
    for inst, d in build.instances.items():
        out[inst] = {
            "keep": d["keep"], "why": list(d["why"]) + [f"unresolved ({x})" for x in d["open"]],
            "questions": {q: {"value": dec.value, "provenance": dec.provenance, "label_counts": dec.counts,
                              **({"gold": d["gold"][q]} if d["gold"].get(q) else {})}
                          for q, dec in d["outcomes"].items()},
        }
    return out


def _beir_shape(bundle: Bundle) -> Bundle:
    """BEIR has one query per qrels id: instance-keyed qrels (InstructIR) become one BEIR query per
    instance (id = instance id, text = the query, ``instruction`` = the instruction); query-keyed
    qrels (FollowIR) keep their query, without instruction (BEIR has one per query)."""
    keyed = {q.qid for q in bundle.qrels}
    text = {q.query_id: q.text for q in bundle.queries}
    per_instance = [i for i in bundle.instances if i.instance_id in keyed]
    if not per_instance:
        return replace(bundle, instances=[])
    ids = {i.instance_id for i in per_instance}
    plain = [q for q in bundle.queries if q.query_id in keyed and q.query_id not in ids]
    return replace(
        bundle,
        queries=[Query(i.instance_id, text.get(i.query_id, "")) for i in per_instance] + plain,
        instances=[Instance(i.instance_id, i.instance_id, i.instance_id, i.instruction, "og") for i in per_instance],
        qrels=[q for q in bundle.qrels if q.qid in keyed],
        narratives=[], top_ranked={},
    )


def _write_instances_jsonl(bundle: Bundle, decisions: dict, path: Path) -> Path:
    """One line per instance: its text, whether the validated set keeps it, and per question the
    decided value, its provenance (unanimous / majority / adjudicated / unresolved) and label counts."""
    query_text = {q.query_id: q.text for q in bundle.queries}
    records = []
    for inst in bundle.instances:
        d = decisions.get(inst.instance_id)
        records.append({
            "instance_id": inst.instance_id, "group_id": inst.group_id, "variant": inst.variant,
            "query": query_text.get(inst.query_id, ""), "instruction": inst.instruction,
            "checked": d is not None, "kept": True if d is None else d["keep"],
            "dropped_because": [] if d is None or d["keep"] else d["why"],
            "questions": {} if d is None else d["questions"],
        })
    return layouts.write_jsonl(path, records)


def _kept_subset(bundle: Bundle, decisions: dict) -> Bundle:
    """The instances the validated set keeps, with the validated qrels as their ``original``."""
    dropped = {i for i, d in decisions.items() if not d["keep"]}
    kept = [i for i in bundle.instances if i.instance_id not in dropped]
    keep_ids = {i.instance_id for i in kept} | {i.query_id for i in kept}  # once, not per qrel (quadratic)
    return replace(
        bundle,
        instances=kept,
        qrels=[replace(q, version="original") for q in bundle.qrels if q.version == "validated" and q.qid in keep_ids],
        narratives=[], top_ranked={}, runs={},
    )


def _write_validated_set(bundle: Bundle, decisions: dict, out: Path) -> list[Path]:
    """The instances the validated set keeps, in the project's own layout (InstructIR when the ids
    have that shape, else BEIR), with the validated qrels."""
    subset = _kept_subset(bundle, decisions)
    try:
        return layouts.write_instructir(subset, out)
    except ValueError:
        return layouts.write_beir(_beir_shape(subset), out)
