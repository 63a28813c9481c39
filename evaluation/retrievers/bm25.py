"""BM25 retrieval with ``bm25s`` (Lù, 2024), Lucene's variant by default."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import bm25s
import numpy as np
from bm25s.tokenization import Tokenized, Tokenizer

from evaluation.retrievers import Progress, read_documents
from evaluation.retrievers.topk import top_k_arrays
from evaluation.runs import RankedRun, RunBuilder
from evaluation.templates import Template
from storage.errors import IFJudgeError

CHUNK = 2_048  # documents read and tokenised together: about 15 MB of TREC-length text


class BM25Retriever:
    """BM25 over the project's documents (a :class:`~evaluation.retrievers.Retriever`).

    score(q, d) = sum over query terms t of IDF(t) * tf(t, d) * (k1 + 1)
                  / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl)),
    with Lucene's IDF(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5)) (Robertson & Zaragoza, 2009;
    ``bm25s`` ``method="lucene"``). Text is lower-cased, split on ``\\b\\w\\w+\\b`` and English stop
    words are removed (``bm25s.tokenize``). Over the whole corpus, documents sharing no term with
    the query are not retrieved (score 0 is dropped), as in Lucene; over candidate lists
    (``top_ranked``) every candidate is ranked, those scoring 0 last, ordered by doc id descending
    (trec_eval's and MTEB's tie rule), as MTEB ranks every candidate.

    The template decides the text on both sides (e.g. ``instruction_query`` puts the instruction's
    words into the BM25 query).

    Examples
    --------
    >>> from evaluation.templates import get_template
    >>> docs = {"d1": {"title": "", "text": "pizza dough with yeast"},
    ...         "d2": {"title": "", "text": "the history of Rome"}}
    >>> run = BM25Retriever().retrieve([{"qid": "q", "query": "pizza dough", "instruction": ""}],
    ...                                docs, template=get_template("query"), k=10)
    >>> list(run["q"])
    ['d1']
    """

    name = "bm25"
    external = False
    reranker = None
    lists_ties_by_docid = True  # top_k's order: a stored run of it is listed in that order

    def __init__(self, *, k1: float = 1.5, b: float = 0.75, method: str = "lucene", stopwords: str | None = "en",
                 chunk: int = CHUNK):
        self.k1, self.b, self.method, self.stopwords = k1, b, method, stopwords
        if not isinstance(chunk, int) or chunk < 1:
            raise IFJudgeError(f"BM25 chunk must be an integer >= 1, got {chunk!r}")
        self.chunk = chunk  # documents read and tokenised together (not in the identity: same run)
        self._last: tuple | None = None  # (documents, (document template, ids), index) of the last call

    def settings(self) -> dict:
        return {"k1": self.k1, "b": self.b, "method": self.method, "stopwords": self.stopwords}

    def identity(self) -> dict:
        """``{"retriever": "bm25", k1, b, method, stopwords}``: what makes two BM25 runs differ."""
        return {"retriever": self.name, **self.settings()}

    def _tokenize(self, texts: list[str]):
        return bm25s.tokenize(texts, stopwords=self.stopwords, return_ids=False, show_progress=False)

    def _index(self, documents: Mapping[str, Mapping], doc_ids: list[str], template: Template,
               progress: Progress | None) -> bm25s.BM25:
        """The BM25 index of the documents' template texts. The last one is kept for the next call
        over the same read-only mapping (not a ``dict``, which can change in place), the same ids
        and the same document template: an evaluation's og and changed runs index the corpus once."""
        key = (template.document_format, doc_ids)
        if self._last is not None and self._last[0] is documents and self._last[1] == key:
            return self._last[2]
        self._last = None  # the previous index goes before the next is built
        tokens = self._tokenize_corpus(documents, doc_ids, template, progress)
        if progress:  # its own stage: the page shows no ETA of 0 s while the index is built
            progress(0, 1, "building the BM25 index")
        index = bm25s.BM25(k1=self.k1, b=self.b, method=self.method)
        index.index(tokens, show_progress=False)
        del tokens  # the index holds the scores; the token ids can go before retrieval
        if not isinstance(documents, dict):
            self._last = (documents, key, index)
        return index

    def _tokenize_corpus(self, documents: Mapping[str, Mapping], doc_ids: list[str], template: Template,
                         progress: Progress | None) -> Tokenized:
        """The corpus's token ids, tokenised ``chunk`` documents at a time (texts read through
        :func:`~evaluation.retrievers.read_documents` and let go): the ids and vocabulary
        ``bm25s.tokenize`` gives for the whole corpus at once (tokens numbered in order of first
        appearance, a document of stop words only left empty), reporting each chunk."""
        tokenizer = Tokenizer(stopwords=self.stopwords, stemmer=None)
        ids: list[list[int]] = []
        # The template's format without its whitespace squashing (Template.document): the BM25
        # tokeniser ignores whitespace, and the squashing cost ~10% of indexing time at 1M documents.
        fmt = template.document_format.format
        n = len(doc_ids)
        for start in range(0, n, self.chunk):
            if progress:
                progress(start, n, "indexing documents (BM25)")
            texts = [fmt(title=doc.get("title", ""), text=doc.get("text", ""))
                     for doc in read_documents(documents, doc_ids[start:start + self.chunk])]
            ids.extend(tokenizer.streaming_tokenize(texts, update_vocab=True, allow_empty=False))
        if progress:
            progress(n, n, "indexing documents (BM25)")
        return Tokenized(ids=ids, vocab=tokenizer.word_to_id)

    def retrieve(
        self,
        topics: Sequence[Mapping],
        documents: Mapping[str, Mapping],
        *,
        template: Template,
        k: int = 100,
        candidates: Mapping[str, Sequence[str]] | None = None,
        progress: Progress | None = None,
    ) -> RankedRun:
        """Run every topic against the documents: a :class:`~evaluation.runs.RankedRun` (read as
        ``run[qid][doc_id] -> score``), best first, ties by doc id descending."""
        doc_ids = list(documents)
        run = RunBuilder(doc_ids)
        if not doc_ids:
            for t in topics:
                run.add(t["qid"], [], [])
            return run.build()
        index = self._index(documents, doc_ids, template, progress)
        position = {d: i for i, d in enumerate(doc_ids)} if candidates is not None else {}
        query_tokens = self._tokenize([template.query(t["query"], t.get("instruction", "")) for t in topics])
        for n, (topic, tokens) in enumerate(zip(topics, query_tokens), start=1):
            qid = topic["qid"]
            scores = index.get_scores(tokens) if tokens else np.zeros(len(doc_ids), dtype=np.float32)
            if candidates is not None:
                cand = list(dict.fromkeys(d for d in candidates.get(qid, []) if d in position))  # each once
                at = np.array([position[d] for d in cand], dtype=np.int64)
                # every candidate is ranked, zero scores too (tied at the bottom, by doc id descending)
                order, best = top_k_arrays(scores[at], cand, k)
                run.add(qid, at[order], best)
            else:
                run.add(qid, *top_k_arrays(scores, doc_ids, k, drop_zero=True))
            if progress and (n % 50 == 0 or n == len(topics)):
                progress(n, len(topics), "retrieving (BM25)")
        return run.build()
