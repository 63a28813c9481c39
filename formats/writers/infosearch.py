"""The InfoSearch hub layout (og, changed and reversed instructions), read by
:mod:`formats.readers.infosearch`."""
from __future__ import annotations

from pathlib import Path

from formats.bundle import Bundle
from formats.writers.hub import _write_mteb


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
