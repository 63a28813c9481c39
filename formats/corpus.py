"""A corpus that is read in chunks instead of held in memory, for the writers of large corpora.

``Bundle.documents`` is a list of :class:`formats.bundle.Document` when a reader parsed files; an
export of a stored project gives the writers a :class:`StreamedCorpus` instead: its ids are known,
its text is read from storage a chunk of rows at a time, as UTF-8 bytes, when a writer asks for it.
The writers take either through :func:`corpus_ids` and :func:`utf8_rows`.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import islice

from formats.bundle import Document

Row = tuple[bytes, bytes, bytes]  # (doc_id, title, text), UTF-8
CHUNK = 1000  # documents per chunk (about 5 MB of TREC-length text)


class StreamedCorpus:
    """The documents of ``ids`` (in that order), whose rows ``read()`` yields in chunks of
    ``(doc_id, title, text)`` UTF-8 bytes, in the same order.

    Iterating yields :class:`Document` objects (read anew each time, a chunk at a time); ``len``,
    truth and :attr:`ids` need no text. A streamed corpus equals a list of the same documents.

    Examples
    --------
    >>> rows = [(b"d1", b"", "caf\\u00e9".encode()), (b"d2", b"T", b"two")]
    >>> corpus = StreamedCorpus(["d1", "d2"], lambda: iter([rows[:1], rows[1:]]))
    >>> len(corpus), corpus.ids
    (2, ['d1', 'd2'])
    >>> list(corpus) == [Document("d1", "café"), Document("d2", "two", "T")] == corpus
    True
    """

    def __init__(self, ids: list[str], read: Callable[[], Iterator[list[Row]]]):
        self.ids = ids
        self._read = read

    def chunks(self) -> Iterator[list[Row]]:
        """The rows, a chunk at a time."""
        return self._read()

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self) -> Iterator[Document]:
        for rows in self._read():
            for doc_id, title, text in rows:
                yield Document(doc_id.decode(), text.decode(), title.decode())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, StreamedCorpus)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # mutable-like, as the list it stands for

    def __repr__(self) -> str:
        return f"StreamedCorpus({len(self.ids)} documents)"


def corpus_ids(documents: Iterable[Document] | StreamedCorpus) -> list[str]:
    """The document ids, in order, without reading any text of a streamed corpus.

    >>> corpus_ids([Document("a", "x"), Document("b", "y")])
    ['a', 'b']
    """
    if isinstance(documents, StreamedCorpus):
        return documents.ids
    return [d.doc_id for d in documents]


def utf8_rows(documents: Iterable[Document] | StreamedCorpus, size: int = CHUNK) -> Iterator[list[Row]]:
    """The documents as chunks of ``(doc_id, title, text)`` UTF-8 bytes: a streamed corpus's own
    chunks, or ``size`` documents at a time of a list.

    >>> list(utf8_rows([Document("a", "é", "t"), Document("b", "y")], size=1))
    [[(b'a', b't', b'\\xc3\\xa9')], [(b'b', b'', b'y')]]
    """
    if isinstance(documents, StreamedCorpus):
        yield from documents.chunks()
        return
    it = iter(documents)
    while batch := list(islice(it, size)):
        yield [(d.doc_id.encode(), d.title.encode(), d.text.encode()) for d in batch]
