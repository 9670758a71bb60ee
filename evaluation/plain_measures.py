"""Every family's plain implementation: the textbook loop over one query's ranked list.

The second opinion of ``reference`` (used by ``verify`` for double-precision
datasets and beside pytrec_eval in the tests). Nothing is vectorized or
shared with ``kernels``: each function reads one ``Query`` and walks its list.
Each family names its function in ``measures.FAMILIES``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Query:
    """One query as the plain implementations see it.

    ``ranking`` is its docids in order, already cut at the depth; ``grades``
    the grade of each retrieved docid that counts as judged (in the qrels and
    in the corpus); ``judgments`` every judgment of the query (for |relevant|,
    the judged non-relevant count and the ideal DCG).
    """

    ranking: Sequence[str]
    grades: Mapping[str, int]
    judgments: Mapping[str, int]
    threshold: int

    @property
    def n_relevant(self) -> int:
        return sum(1 for g in self.judgments.values() if g >= self.threshold)

    def relevant(self) -> list[bool]:
        """Whether each row of the ranking is relevant."""
        return [d in self.grades and self.grades[d] >= self.threshold for d in self.ranking]

    def condensed(self) -> Query:
        """The query with every unjudged row removed (a negative grade is "in the pool, unjudged", as in trec_eval)."""
        kept = [d for d in self.ranking if d in self.grades and self.grades[d] >= 0]
        return Query(kept, self.grades, self.judgments, self.threshold)


def recall(q: Query, k: int) -> float:
    n_rel = q.n_relevant
    return sum(q.relevant()[:k]) / n_rel if n_rel else 0.0


def precision(q: Query, k: int) -> float:
    return sum(q.relevant()[:k]) / k


def average_precision(q: Query, k: int) -> float:
    total, hits = 0.0, 0
    for i, rel in enumerate(q.relevant()[:k], start=1):
        if rel:
            hits += 1
            total += hits / i
    n_rel = q.n_relevant
    return total / n_rel if n_rel else 0.0


def reciprocal_rank(q: Query, k: int) -> float:
    for i, rel in enumerate(q.relevant()[:k], start=1):
        if rel:
            return 1.0 / i
    return 0.0


def success(q: Query, k: int) -> float:
    return 1.0 if any(q.relevant()[:k]) else 0.0


def r_precision(q: Query, _k: None) -> float:
    n_rel = q.n_relevant
    return sum(q.relevant()[:n_rel]) / n_rel if n_rel else 0.0


def ndcg(q: Query, k: int) -> float:
    dcg = 0.0
    for i, d in enumerate(q.ranking[:k], start=1):
        g = q.grades.get(d, 0)
        if g > 0:
            dcg += g / math.log2(i + 1)
    ideal = sorted((g for g in q.judgments.values() if g > 0), reverse=True)
    idcg = sum(g / math.log2(i + 1) for i, g in enumerate(ideal[:k], start=1))
    return dcg / idcg if idcg > 0 else 0.0


def bpref(q: Query, _k: None) -> float:
    """Walk the run; each judged relevant row adds 1 − min(n, R) / min(N, R), n the judged non-relevant above it."""
    n_rel = q.n_relevant
    n_nonrel = sum(1 for g in q.judgments.values() if 0 <= g < q.threshold)
    total, nonrel_above = 0.0, 0
    for d in q.ranking:
        g = q.grades.get(d)
        if g is None or g < 0:
            continue
        if g >= q.threshold:
            total += 1.0 if nonrel_above == 0 else 1.0 - min(nonrel_above, n_rel) / min(n_nonrel, n_rel)
        else:
            nonrel_above += 1
    return total / n_rel if n_rel else 0.0


def condensed_average_precision(q: Query, k: int) -> float:
    return average_precision(q.condensed(), k)


def condensed_ndcg(q: Query, k: int) -> float:
    return ndcg(q.condensed(), k)
