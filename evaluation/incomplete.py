"""Measures for incomplete judgments: bpref and condensed lists (private kernels).

Legal test collections are judged sparsely, so a new system that finds
relevant documents nobody judged is punished by measures that count every
unjudged document as non-relevant. Two remedies from the literature:

* **bpref** (Buckley & Voorhees, "Retrieval evaluation with incomplete
  information", SIGIR 2004), exactly as trec_eval 9 computes it: walk the run
  in order, skipping documents without a judgment; for each judged relevant
  document r add ``1 − min(n_r, R) / min(N, R)`` (1 when ``n_r = 0``), where
  ``n_r`` is the number of judged non-relevant documents ranked above r, R the
  number of relevant documents and N the number of judged non-relevant ones of
  the query; divide by R.
* **condensed lists** (Sakai, "Alternatives to Bpref", SIGIR 2007): remove the
  unjudged documents from the run, close the gaps, and compute the usual
  measure (``MAP'@k``, ``nDCG'@k``). This is what ``trec_eval -J`` does.

Judged here follows trec_eval: a document with a qrels line and a grade ≥ 0.
A negative grade means "in the pool but not judged" (trec_eval's
``RELVALUE_UNJUDGED``), so it counts neither as relevant nor as non-relevant
for these measures. The arrays are the judged hits of ``scoring``: query
position ``hq``, rank ``hr`` and grade ``hg`` of every run row the qrels hold
within the depth, sorted by (query, rank).
"""

from __future__ import annotations

import numpy as np


def bpref(hq: np.ndarray, hg: np.ndarray, *, nq: int, n_rel: np.ndarray, n_nonrel: np.ndarray,
          threshold: int) -> np.ndarray:
    """Per-query bpref (trec_eval 9's ``bpref``) from the judged hits sorted by (query, rank).

    ``n_rel`` and ``n_nonrel`` are, per query, the relevant documents and the
    judged non-relevant ones (0 ≤ grade < threshold) of the qrels.
    """
    nonrel = (hg >= 0) & (hg < threshold)
    rel = hg >= threshold
    cum = np.cumsum(nonrel)
    # Non-relevant documents above each row, within its own query.
    starts = np.searchsorted(hq, hq, side="left")
    before = cum - nonrel - np.where(starts > 0, cum[starts - 1], 0)
    q = hq[rel]
    above = before[rel].astype(np.float64)
    R = n_rel[q]
    denom = np.minimum(n_nonrel[q], R)
    term = np.ones(len(q))
    some = above > 0  # then N ≥ 1 and R ≥ 1, so denom ≥ 1
    term[some] = 1.0 - np.minimum(above[some], R[some]) / denom[some]
    total = np.bincount(q, weights=term, minlength=nq)
    return np.asarray(np.divide(total, n_rel, out=np.zeros(nq), where=n_rel > 0))


def judged_nonrelevant_per_query(qidx: np.ndarray, grades: np.ndarray, n_queries: int, threshold: int) -> np.ndarray:
    """Per qrels query, the number of judgments with 0 ≤ grade < threshold."""
    m = (grades >= 0) & (grades < threshold)
    return np.bincount(qidx[m], minlength=n_queries).astype(np.float64)


def condense(hq: np.ndarray, hr: np.ndarray, hg: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The condensed list: judged hits (grade ≥ 0) re-ranked 1, 2, 3 … within each query.

    Returns (query position, condensed rank, grade), still sorted by (query, rank).
    """
    keep = hg >= 0
    hq, hg = hq[keep], hg[keep]
    rank = (np.arange(len(hq)) - np.searchsorted(hq, hq, side="left") + 1).astype(hr.dtype)
    return hq, rank, hg
