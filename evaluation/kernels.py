"""The measure kernels: every family's per-query values, vectorized over the judged hits of a run.

A kernel takes the ``Hits`` of the evaluated queries and a cutoff (``None``
for a family without one) and returns one value per evaluated query. The
invariant every kernel relies on: ``Hits`` holds only the run's rows that the
qrels judge, within the depth, sorted by (query position, rank), so a query's
hits are contiguous and in rank order; a row the qrels do not judge is absent
and counts as non-relevant with no gain. Each family names its kernel in
``measures.FAMILIES``, beside its plain implementation and its trec_eval twin.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import incomplete
from .qrels import Qrels


@dataclass
class Hits:
    """Judged hits of the evaluated queries, sorted by (query position ``hq``, rank ``hr``); ``hg`` their grades."""

    qrels: Qrels
    evaluated: np.ndarray
    nq: int
    n_rel: np.ndarray
    hq: np.ndarray
    hr: np.ndarray
    hg: np.ndarray
    rel: np.ndarray
    _first: np.ndarray | None = None
    _cum: np.ndarray | None = None

    def rel_hits(self) -> tuple[np.ndarray, np.ndarray]:
        return self.hq[self.rel], self.hr[self.rel]

    def count_within(self, k: np.ndarray | int) -> np.ndarray:
        rq, rr = self.rel_hits()
        cutoff = k[rq] if isinstance(k, np.ndarray) else k
        return np.bincount(rq[rr <= cutoff], minlength=self.nq).astype(np.float64)

    def rel_so_far(self) -> np.ndarray:
        """For each relevant hit, the number of relevant hits up to and including it."""
        if self._cum is None:
            rq, _ = self.rel_hits()
            starts = np.searchsorted(rq, rq, side="left")
            self._cum = (np.arange(len(rq)) - starts + 1).astype(np.float64)
        return self._cum

    def first_rank(self) -> np.ndarray:
        if self._first is None:
            rq, rr = self.rel_hits()
            first = np.zeros(self.nq, dtype=np.int64)
            uq, idx = np.unique(rq, return_index=True)
            first[uq] = rr[idx]
            self._first = first
        return self._first


def _per_relevant(x: np.ndarray, n_rel: np.ndarray) -> np.ndarray:
    """x / |relevant|, 0 for a query without relevant documents (counted only with empty_queries="count")."""
    out: np.ndarray = np.divide(x, n_rel, out=np.zeros(len(x)), where=n_rel > 0)
    return out


def recall(ctx: Hits, k: int) -> np.ndarray:
    """R@k."""
    return _per_relevant(ctx.count_within(k), ctx.n_rel)


def precision(ctx: Hits, k: int) -> np.ndarray:
    """P@k (divided by k even when fewer rows were retrieved)."""
    return ctx.count_within(k) / k


def average_precision(ctx: Hits, k: int) -> np.ndarray:
    """AP@k (MAP@k per query)."""
    rq, rr = ctx.rel_hits()
    m = rr <= k
    total = np.bincount(rq[m], weights=ctx.rel_so_far()[m] / rr[m], minlength=ctx.nq)
    return _per_relevant(total, ctx.n_rel)


def reciprocal_rank(ctx: Hits, k: int) -> np.ndarray:
    """RR@k (MRR@k per query)."""
    first = ctx.first_rank()
    ok = (first > 0) & (first <= k)
    out: np.ndarray = np.divide(1.0, first, out=np.zeros(ctx.nq), where=ok)
    return out


def success(ctx: Hits, k: int) -> np.ndarray:
    """Success@k."""
    first = ctx.first_rank()
    return ((first > 0) & (first <= k)).astype(np.float64)


def r_precision(ctx: Hits, _k: None) -> np.ndarray:
    """RP: precision at rank |relevant|."""
    return _per_relevant(ctx.count_within(ctx.n_rel.astype(np.int64)), ctx.n_rel)


def ndcg(ctx: Hits, k: int) -> np.ndarray:
    """nDCG@k; the ideal ranking is the query's positive grades of the qrels, in descending order."""
    # Gains are the grades themselves (trec_eval's default gains); grades ≤ 0 add nothing.
    m = (ctx.hr <= k) & (ctx.hg > 0)
    dcg = np.bincount(ctx.hq[m], weights=ctx.hg[m] / np.log2(ctx.hr[m] + 1.0), minlength=ctx.nq)
    qi, g = ctx.qrels.positive_grades()
    pos = np.full(len(ctx.qrels.qids), -1, dtype=np.int64)
    pos[ctx.evaluated] = np.arange(ctx.nq)
    qe = pos[qi]
    keep = qe >= 0
    qe, g = qe[keep], g[keep]
    ideal_rank = np.arange(len(qe)) - np.searchsorted(qe, qe, side="left") + 1
    m = ideal_rank <= k
    idcg = np.bincount(qe[m], weights=g[m] / np.log2(ideal_rank[m] + 1.0), minlength=ctx.nq)
    return np.divide(dcg, idcg, out=np.zeros(ctx.nq), where=idcg > 0)


def bpref(ctx: Hits, _k: None) -> np.ndarray:
    """bpref, as trec_eval 9 computes it (``incomplete.bpref``)."""
    qrels = ctx.qrels
    n_nonrel = incomplete.judged_nonrelevant_per_query(qrels.qidx, qrels.grades, len(qrels.qids), qrels.threshold)
    return incomplete.bpref(ctx.hq, ctx.hg, nq=ctx.nq, n_rel=ctx.n_rel, n_nonrel=n_nonrel[ctx.evaluated],
                            threshold=qrels.threshold)


def condensed(ctx: Hits) -> Hits:
    """The same context on the condensed list (unjudged documents removed, ranks closed up)."""
    hq, hr, hg = incomplete.condense(ctx.hq, ctx.hr, ctx.hg)
    return Hits(qrels=ctx.qrels, evaluated=ctx.evaluated, nq=ctx.nq, n_rel=ctx.n_rel,
                hq=hq, hr=hr, hg=hg, rel=hg >= ctx.qrels.threshold)


def condensed_average_precision(hits: Hits, k: int) -> np.ndarray:
    """MAP'@k: average precision on the condensed list."""
    return average_precision(condensed(hits), k)


def condensed_ndcg(hits: Hits, k: int) -> np.ndarray:
    """nDCG'@k: nDCG on the condensed list."""
    return ndcg(condensed(hits), k)
