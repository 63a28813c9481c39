"""Local judges on sentence-transformers, for the relevance-type questions (a passage judged
against a text): ``relevance`` (the narrative), ``condition`` (the instruction) and
``best_passage`` (the candidates of an instance). No request leaves the machine.

- ``biencoder``: cosine similarity of the query side, MTEB's ``query_instruction`` text
  ``"{query} {instruction}"`` (the narrative for ``relevance``), and the passage (title and text),
  both embedded by :class:`evaluation.retrievers.dense.DenseRetriever` (``minilm``: the bundled
  all-MiniLM-L6-v2; embeddings cached);
- ``crossencoder``: the score of a sentence-transformers ``CrossEncoder`` (a local folder, or a hub
  name where a hub is reachable) on the (query side, passage) pair
  (:func:`evaluation.retrievers.rerank.cross_encoder_reranker`).

The score is stored with every item. A yes/no question needs a threshold: it is chosen on the
human-labelled sample (:func:`choose_threshold`, the cut that maximises Cohen's kappa with the
human outcomes) and applied to every item afterwards (``ifjudge judge threshold``); until then
the items have a score and no value. ``best_passage`` needs none: the judge picks the candidate
with the highest score.
"""
from __future__ import annotations

import numpy as np

from evaluation.judges.questions import judge_question
from evaluation.templates import get_template
from storage import judge_labels as store
from storage import projects
from storage.db import Database

CHUNK = 256


def _query_side(question: str, inst: dict) -> str:
    return get_template("query_instruction").query(inst.get("query", ""), inst.get("instruction", ""))


def _passage(doc: dict | None) -> str:
    doc = doc or {}
    return " ".join(f"{doc.get('title', '')} {doc.get('text', '')}".split())


def pair_scorer(run: dict):
    """``[(query side, passage), ...] -> scores`` of the run's local model."""
    model = run["model"]
    if run["judge"] == "crossencoder":
        from evaluation.retrievers.rerank import cross_encoder_reranker

        return cross_encoder_reranker(model, device="cpu", fp16=False).score_pairs
    from evaluation.retrievers.dense import DenseRetriever

    encoder = DenseRetriever(model, score="cosine", device="cpu")

    def cosine(pairs):
        left = encoder.embed([p[0] for p in pairs])
        right = encoder.embed([p[1] for p in pairs])
        return (left * right).sum(axis=1)

    return cosine


def judge_local(db: Database, run: dict, *, progress) -> dict:
    """Score the run's pending items, :data:`CHUNK` at a time, storing each chunk; ``best_passage``
    items get the best-scoring candidate as their value, the others a score only (the threshold
    comes later)."""
    pending = store.items(db, run["id"], pending=True)
    insts = {i["instance_id"]: i for i in projects.instances(db, run["project_id"])}
    score = pair_scorer(run)
    q = judge_question(run["question"])
    done = 0
    progress(0, len(pending), f"scoring with {run['model']}")
    for start in range(0, len(pending), CHUNK):
        chunk = pending[start:start + CHUNK]
        ids = {d for it in chunk for d in ([it["doc_id"]] if it["doc_id"] else []) + it["payload"].get("candidates", [])}
        docs = projects.documents_by_id(db, run["project_id"], ids)
        labels = [_label(it, insts.get(it["instance_id"], {}), docs, score, q) for it in chunk]
        store.store_labels(db, run["id"], labels)
        done += len(chunk)
        progress(done, len(pending), f"scoring with {run['model']}")
    return {"run_id": run["id"], "judged": done, "errors": 0, "retries": 0, "counted_tokens": 0,
            "prompt_tokens": 0, "completion_tokens": 0}


def _label(item: dict, inst: dict, docs: dict, score, q) -> dict:
    side = _query_side(q.id, inst)
    base = {"instance_id": item["instance_id"], "question": item["question"], "doc_id": item["doc_id"],
            "payload": dict(item["payload"]), "raw": ""}
    candidates = item["payload"].get("candidates")
    if candidates:
        scores = [float(s) for s in score([(side, _passage(docs.get(d))) for d in candidates])]
        best = int(np.argmax(scores))
        base["payload"]["scores"] = dict(zip(candidates, [round(s, 6) for s in scores]))
        return {**base, "value": candidates[best], "score": scores[best]}
    return {**base, "value": None, "score": float(score([(side, _passage(docs.get(item["doc_id"])))])[0])}


def choose_threshold(scores, human_yes) -> dict:
    """The cut on ``scores`` (judge says Yes when score >= t) that maximises Cohen's kappa with
    the human Yes / No (1 / 0) outcomes of the same items; among equal kappas the middle one. The
    candidate cuts lie midway between consecutive distinct scores (and below / above all).

    kappa = (p_o - p_e) / (1 - p_e), p_o the share of agreeing items, p_e = p_j p_h + (1 - p_j)(1 - p_h)
    (Cohen, 1960). Returns ``{"threshold", "kappa", "n"}``; both None, with ``reason``, when the humans
    gave a single answer (no cut can agree with them better than another).

    >>> choose_threshold([0.1, 0.4, 0.6, 0.9], [0, 0, 1, 1])
    {'threshold': 0.5, 'kappa': 1.0, 'n': 4}
    """
    s = np.asarray(scores, dtype=float)
    h = np.asarray(human_yes, dtype=float)
    if len(s) == 0 or h.min() == h.max():
        return {"threshold": None, "kappa": None, "n": int(len(s)),
                "reason": "no human outcome" if len(s) == 0 else "the humans gave one answer to every item: no cut "
                                                                   "tells their answers apart"}
    u = np.unique(s)
    cuts = np.concatenate([[u[0] - 1.0], (u[:-1] + u[1:]) / 2, [u[-1] + 1.0]])
    j = s[None, :] >= cuts[:, None]
    po = (j == (h[None, :] > 0)).mean(axis=1)
    pj, ph = j.mean(axis=1), h.mean()
    pe = pj * ph + (1 - pj) * (1 - ph)
    with np.errstate(invalid="ignore", divide="ignore"):
        kappa = np.where(pe < 1, (po - pe) / (1 - pe), np.nan)
    best = np.flatnonzero(kappa == np.nanmax(kappa))
    pick = best[len(best) // 2]
    return {"threshold": float(cuts[pick]), "kappa": float(kappa[pick]), "n": int(len(s))}
