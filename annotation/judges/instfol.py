"""INSTFOL by the tool (IFIR-EVAL, Appendix A.2): a stored ``instfol_match`` judge run scored the
top-k passages of the bare-query and the instructed runs; INSTFOL is computed from its scores
(:func:`evaluation.instfol.instfol`, max 3), and an INSTFOL study of humans on the same runs is
its check: both judges' INSTFOL on the passages both scored, and their agreement there
(:func:`annotation.instfol_study.instfol_from_study` with the judge's rows as the LLM's).
"""
from __future__ import annotations

from annotation.instfol_study import MAX_SCORE, instfol_from_study
from evaluation.instfol import MODES, instfol
from evaluation.judges.stored import instfol_rows
from storage import judge_labels as store
from storage.db import Database


def instfol_from_judge(db: Database, run_id: int, *, check_study: int | None = None, k: int | None = None) -> dict:
    """INSTFOL with the judge run as IFIR's judge: per instance q = mean score of its bare-query
    top-k passages, i = the same for the instructed top-k, INSTFOL = mean over instances of
    (i - q) / (3 - q) (0 when i = q; i - q when q = 3). A passage's score is the judge's
    probability-weighted score where the server returned log-probabilities (IFIR's), else its
    answer. Instances left without a scored passage in a mode are left out (``left_out``).

    With ``check_study`` (an INSTFOL study of the same runs), ``check`` holds the humans' INSTFOL,
    both judges' INSTFOL on the passages both scored, and their agreement there.
    """
    run = store.get_run(db, run_id)
    k = k or run["parameters"].get("extra", {}).get("top_k")
    rows = [r for r in instfol_rows(db, run_id) if k is None or r[2] <= k]
    modes: dict[str, set[str]] = {}
    for inst, mode, _, _ in rows:
        modes.setdefault(inst, set()).add(mode)
    planned = sorted({it["instance_id"] for it in store.items(db, run_id)})
    left_out = [i for i in planned if modes.get(i, set()) != set(MODES)]
    kept = [r for r in rows if r[0] not in set(left_out)]
    result = instfol(kept, max_score=MAX_SCORE, k=k)  # no row: INSTFOL undefined, no query
    scored_by = "probability-weighted score (IFIR A.2)" if any(
        lab["score"] is not None for lab in store.labels(db, run_id, with_raw=False)) else "the judge's answer"
    result.update({"judge_run": run_id, "judge": f"{run['judge']} {run['model']}", "scores": scored_by,
                   "passages": len(kept), "left_out": left_out})
    if check_study is not None:
        human = instfol_from_study(db, check_study, llm_scores=rows, k=k)
        result["check"] = {"study_id": check_study, "human_INSTFOL": human["INSTFOL"],
                           "human_n_queries": human["n_queries"], "same_passages": human["llm"]}
    return result
