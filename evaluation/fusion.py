"""Rank fusion: combine several runs into one.

* ``rrf``: Reciprocal Rank Fusion (Cormack, Clarke & Büttcher, SIGIR 2009),
  score(d) = Σ over runs of 1 / (k + rank of d in that run), k = 60 by default.
* ``combsum``: CombSUM (Fox & Shaw, TREC-2 1994) of min-max normalised scores.

Each input run is ranked with the leaderboard's order (score desc, ties by
docid desc) and cut at ``depth`` first; a document absent from a run adds
nothing. The fused run keeps the top ``depth`` documents per query.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import _kernel as K
from .conventions import DEFAULT_SCORE_PRECISION, ScorePrecision
from .runs import Run
from .scoring import rank_rows


def rrf(runs: list[Run], *, k: int = 60, depth: int = 1000,
        score_precision: ScorePrecision = DEFAULT_SCORE_PRECISION) -> Run:
    """Reciprocal Rank Fusion of ``runs``; ``k`` dampens the weight of the top ranks.

    ``score_precision`` is the precision scores are compared in when ranking
    the inputs and the fused run (``evaluation.conventions``).
    """
    if k < 0:
        raise ValueError("k must be ≥ 0")

    def contribution(run: Run, rank: np.ndarray, keep: np.ndarray) -> np.ndarray:
        out: np.ndarray = 1.0 / (k + rank[keep].astype(np.float64))
        return out

    return _fuse(runs, depth, contribution, name=f"rrf(k={k})", score_precision=score_precision)


def combsum(runs: list[Run], *, depth: int = 1000,
            score_precision: ScorePrecision = DEFAULT_SCORE_PRECISION) -> Run:
    """CombSUM of per-query min-max normalised scores (``score_precision`` as for ``rrf``).

    A query whose kept scores are all equal normalises them to 1 (each of its
    documents is that run's top answer).
    """

    def contribution(run: Run, rank: np.ndarray, keep: np.ndarray) -> np.ndarray:
        q = run.qcode[keep]
        s = run.scores[keep]
        nq = len(run.qids)
        lo = np.full(nq, np.inf)
        hi = np.full(nq, -np.inf)
        np.minimum.at(lo, q, s)
        np.maximum.at(hi, q, s)
        span = (hi - lo)[q]
        out: np.ndarray = np.divide(s - lo[q], span, out=np.ones_like(s), where=span > 0)
        return out

    return _fuse(runs, depth, contribution, name="combsum", score_precision=score_precision)


Contribution = Callable[[Run, np.ndarray, np.ndarray], np.ndarray]


def _fuse(runs: list[Run], depth: int, contribution: Contribution, *, name: str,
          score_precision: ScorePrecision) -> Run:
    if not runs:
        raise ValueError("fusion needs at least one run")
    qid_index: dict[str, int] = {}
    codes, words, values = [], [], []
    nw = max(r.doc_words.shape[1] for r in runs)
    for run in runs:
        rank, *_ = rank_rows(run, depth, score_precision=score_precision)
        keep = rank <= depth
        mapping = np.array([qid_index.setdefault(q, len(qid_index)) for q in run.qids], dtype=np.int32)
        codes.append(mapping[run.qcode[keep]])
        words.append(K.pad_words(run.doc_words[keep], nw))
        values.append(contribution(run, rank, keep))
    q = np.concatenate(codes)
    w = np.concatenate(words)
    v = np.concatenate(values)
    qids = list(qid_index)
    if len(q) == 0:
        return Run(name=name, qids=[], qcode=q, doc_words=w, scores=v, tags=[name])
    # Group equal (query, docid) rows: sort, find boundaries, sum each group.
    order = np.lexsort(K.sort_keys_asc(w) + [q])
    q, w, v = q[order], w[order], v[order]
    new = np.ones(len(q), dtype=bool)
    new[1:] = (q[1:] != q[:-1]) | (w[1:] != w[:-1]).any(axis=1)
    starts = np.flatnonzero(new)
    # Sum each group's contributions in run order, as a plain loop would:
    # ufunc.at adds one element at a time, where reduceat may reorder the
    # additions and so differ in the last bit (and then break a tie differently).
    fused = np.zeros(len(starts))
    np.add.at(fused, np.cumsum(new) - 1, v)
    q, w = q[starts], w[starts]
    # Keep the top `depth` per query in the order every reader of the fused run
    # will use: score desc in the chosen precision, then docid desc.
    order = np.lexsort(K.sort_keys_desc(w) + [-K.compared_scores(fused, score_precision), q])
    q, w, fused = q[order], w[order], fused[order]
    head = np.ones(len(q), dtype=bool)
    head[1:] = q[1:] != q[:-1]
    heads = np.flatnonzero(head)
    rank = np.arange(len(q)) - np.repeat(heads, np.diff(np.append(heads, len(q)))) + 1
    keep = rank <= depth
    return Run(name=name, qids=qids, qcode=q[keep].astype(np.int32), doc_words=w[keep], scores=fused[keep],
               tags=[name], n_lines=int(keep.sum()))
