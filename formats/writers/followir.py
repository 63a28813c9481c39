"""The FollowIR hub layout (og and changed narratives), read by :mod:`formats.readers.followir`."""
from __future__ import annotations

from pathlib import Path

from formats.bundle import Bundle
from formats.writers.hub import _write_mteb


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
