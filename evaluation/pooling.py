"""Judgment pools: which documents to judge next, built from the submitted runs.

Three ways to choose, per query:

* **depth-k** (the TREC pool; Spärck Jones & van Rijsbergen 1975, Harman,
  "Overview of the first TREC conference", 1993): the union of every run's
  top k documents.
* **RBP-weighted** (Moffat, Webber & Zobel, "Strategic system comparisons via
  targeted relevance judgments", SIGIR 2007): each document gets the sum, over
  the runs, of the rank-biased precision weight of its rank,
  ``(1 − p) · p^(r − 1)`` (Moffat & Zobel, "Rank-biased precision for
  measurement of retrieval effectiveness", ACM TOIS 27(1), 2008); documents are
  judged in decreasing weight up to a budget. A document high in many runs
  comes first; deep documents of one run come last. It needs no judgments to
  order, so the whole pool is known in advance.
* **Move-to-front, MTF** (Cormack, Palmer & Clarke, "Efficient construction of
  large test collections", SIGIR 1998; the strongest simple method in Losada,
  Parapar & Barreiro, "Multi-armed bandits for adjudicating documents in
  pooling-based evaluation of information retrieval systems", Information
  Processing & Management 53(5), 2017): the runs take turns by priority; the
  chosen run gives its next document; while its documents are relevant it
  keeps the turn, and a non-relevant one lowers its priority by one and the
  turn passes to the run of highest priority (the first in run order among
  equals). It is adaptive: the order depends on the judgments, so
  ``mtf_order`` replays the judgments made so far and names the next
  document to judge.

In every method a document already judged (a qrels line with a grade ≥ 0) is
never put in the pool; MTF skips it, as it skips a document another run
already brought (Losada et al. take each run's next *unjudged* document), so
it gives no feedback. A grade < 0 means "pooled, not judged yet" (trec_eval's convention,
also used by ``pool_files``) and does not count as judged.

Runs are read in the leaderboard's order (score descending in single
precision, then docid descending) and cut at ``depth``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .qrels import Qrels
from .runs import Run
from .scoring import evaluate, rank_rows

#: How deep the adaptive methods read each run unless told otherwise.
DEFAULT_ADAPTIVE_DEPTH = 100


@dataclass(frozen=True)
class PoolEntry:
    """One document to judge: its query, the runs that retrieved it, its place in the order.

    ``ranks`` maps each run that has the document within the pool's reading
    depth to its rank there; ``priority`` is the method's score (k − best rank
    + 1 for depth-k, the summed RBP weight, or the MTF step).
    """

    qid: str
    docid: str
    priority: float
    ranks: Mapping[str, int]

    @property
    def best_rank(self) -> int:
        """The highest position any run gave the document."""
        return min(self.ranks.values())


@dataclass
class Pool:
    """Documents to judge, per query in judging order, with the facts to size the job."""

    method: str
    entries: dict[str, list[PoolEntry]]
    run_names: list[str]
    depth: int
    #: For each run, per query, its docids within ``depth`` in rank order (kept for the statistics).
    tops: dict[str, dict[str, list[str]]] = field(repr=False, default_factory=dict)
    judged: set[tuple[str, str]] = field(repr=False, default_factory=set)

    def __len__(self) -> int:
        return sum(len(v) for v in self.entries.values())

    def __iter__(self) -> Iterator[PoolEntry]:
        for qid in self.entries:
            yield from self.entries[qid]

    def pairs(self) -> set[tuple[str, str]]:
        """The (query, docid) pairs of the pool."""
        return {(e.qid, e.docid) for e in self}

    def size_per_query(self) -> dict[str, int]:
        """Number of documents to judge for each query."""
        return {q: len(v) for q, v in self.entries.items()}

    def unjudged_per_run(self) -> dict[str, int]:
        """For each run, its documents within the depth that nobody has judged yet."""
        return {name: sum(1 for q, docs in self.tops[name].items() for d in docs if (q, d) not in self.judged)
                for name in self.run_names}

    def in_pool_per_run(self) -> dict[str, int]:
        """For each run, how many of the pool's documents it retrieved within the depth."""
        counts = dict.fromkeys(self.run_names, 0)
        for e in self:
            for name in e.ranks:
                counts[name] += 1
        return counts

    def unique_per_run(self) -> dict[str, int]:
        """For each run, the pool's documents that no other run retrieved within the depth."""
        counts = dict.fromkeys(self.run_names, 0)
        for e in self:
            if len(e.ranks) == 1:
                counts[next(iter(e.ranks))] += 1
        return counts

    def expected_cost(self, per_judgment: float, *, overlap_share: float = 0.0) -> float:
        """Cost of judging the pool: documents × cost of one judgment.

        ``overlap_share`` of the documents is judged twice (for agreement), so
        it costs ``len(pool) × (1 + overlap_share) × per_judgment``; the unit is
        the caller's (seconds, euros).
        """
        if per_judgment < 0 or not 0 <= overlap_share <= 1:
            raise ValueError("the cost per judgment must be ≥ 0 and the overlap share between 0 and 1")
        return len(self) * (1.0 + overlap_share) * per_judgment

    def statistics(self, *, per_judgment: float = 0.0, overlap_share: float = 0.0) -> dict[str, Any]:
        """Everything a curator needs before starting, as a JSON-friendly dict."""
        return {
            "method": self.method, "depth": self.depth, "documents": len(self),
            "size_per_query": self.size_per_query(), "unjudged_per_run": self.unjudged_per_run(),
            "in_pool_per_run": self.in_pool_per_run(), "unique_per_run": self.unique_per_run(),
            "expected_cost": self.expected_cost(per_judgment, overlap_share=overlap_share),
        }


# ---------------------------------------------------------------- reading runs


def ranked_docids(run: Run, depth: int) -> dict[str, list[str]]:
    """The run's docids per query in the leaderboard's order, cut at ``depth``."""
    if depth < 1:
        raise ValueError("the depth must be at least 1")
    if len(run) == 0:
        return {}
    rank, *_ = rank_rows(run, depth)
    rows = np.flatnonzero(rank <= depth)
    rows = rows[np.lexsort((rank[rows], run.qcode[rows]))]
    out: dict[str, list[str]] = {}
    for code, docid in zip(run.qcode[rows].tolist(), run.docids(rows)):
        out.setdefault(run.qids[code], []).append(docid)
    return out


def judged_pairs(qrels: Qrels | None) -> set[tuple[str, str]]:
    """(query, docid) pairs with a grade ≥ 0, i.e. judged (a negative grade is "pooled, not judged")."""
    if qrels is None:
        return set()
    return {(q, d) for q, docs in qrels.to_dict().items() for d, g in docs.items() if g >= 0}


def _prepare(runs: Mapping[str, Run], depth: int,
             qids: Iterable[str] | None) -> tuple[list[str], dict[str, dict[str, list[str]]], list[str]]:
    if not runs:
        raise ValueError("a pool needs at least one run")
    names = list(runs)
    tops = {name: ranked_docids(runs[name], depth) for name in names}
    if qids is None:
        seen: dict[str, None] = {}
        for name in names:
            for q in tops[name]:
                seen.setdefault(q, None)
        qids = sorted(seen)
    else:
        qids = list(dict.fromkeys(qids))
        wanted = set(qids)
        tops = {name: {q: d for q, d in t.items() if q in wanted} for name, t in tops.items()}
    return names, tops, qids


def _ranks_of(names: list[str], tops: dict[str, dict[str, list[str]]], qid: str) -> dict[str, dict[str, int]]:
    """docid -> {run: rank} for one query, runs in the given order."""
    out: dict[str, dict[str, int]] = {}
    for name in names:
        for r, d in enumerate(tops[name].get(qid, ()), start=1):
            out.setdefault(d, {})[name] = r
    return out


# ---------------------------------------------------------------- methods


def depth_pool(runs: Mapping[str, Run], k: int, *, judged: Qrels | None = None,
               qids: Iterable[str] | None = None) -> Pool:
    """The union of every run's top ``k`` per query, minus the documents already judged.

    Within a query, documents are ordered by their best rank, then by how many
    runs retrieved them (more first), then docid, so an interrupted assessment
    has covered the shallow pool first. ``qids`` limits the pool to those
    queries (the split's topics); by default every query some run answers.
    """
    names, tops, qids = _prepare(runs, k, qids)
    done = judged_pairs(judged)
    entries: dict[str, list[PoolEntry]] = {}
    for q in qids:
        docs = [(d, ranks) for d, ranks in _ranks_of(names, tops, q).items() if (q, d) not in done]
        docs.sort(key=lambda x: (min(x[1].values()), -len(x[1]), x[0]))
        entries[q] = [PoolEntry(q, d, float(k - min(ranks.values()) + 1), ranks) for d, ranks in docs]
    return Pool(method=f"depth-{k}", entries=entries, run_names=names, depth=k, tops=tops, judged=done)


def rbp_pool(runs: Mapping[str, Run], budget_per_query: int, *, p: float = 0.8, depth: int = DEFAULT_ADAPTIVE_DEPTH,
             judged: Qrels | None = None, qids: Iterable[str] | None = None) -> Pool:
    """Documents in decreasing summed RBP weight, at most ``budget_per_query`` per query.

    weight(d) = Σ over runs that rank d at r ≤ depth of (1 − p) · p^(r − 1)
    (Moffat, Webber & Zobel 2007). Equal weights are broken by docid,
    ascending. ``p`` is the RBP persistence: 0.8 looks at about the top 5
    (expected depth 1 / (1 − p)), 0.95 at the top 20.
    """
    if not 0 < p < 1:
        raise ValueError("the RBP persistence p must be between 0 and 1 (exclusive), e.g. 0.8")
    if budget_per_query < 0:
        raise ValueError("the budget per query must be ≥ 0")
    names, tops, qids = _prepare(runs, depth, qids)
    done = judged_pairs(judged)
    entries: dict[str, list[PoolEntry]] = {}
    for q in qids:
        scored = []
        for d, ranks in _ranks_of(names, tops, q).items():
            if (q, d) in done:
                continue
            # Summed in run order, so the same runs always give the same bits.
            weight = 0.0
            for name in names:
                if name in ranks:
                    weight += (1.0 - p) * p ** (ranks[name] - 1)
            scored.append((weight, d, ranks))
        scored.sort(key=lambda x: (-x[0], x[1]))
        entries[q] = [PoolEntry(q, d, w, ranks) for w, d, ranks in scored[:budget_per_query]]
    return Pool(method=f"rbp(p={p:g}, budget={budget_per_query})", entries=entries, run_names=names,
                depth=depth, tops=tops, judged=done)


@dataclass(frozen=True)
class MtfStep:
    """One document MTF asks about: ``grade`` is None when it still waits for a judgment."""

    docid: str
    run: str
    grade: int | None


def mtf_order(ranked: Mapping[str, list[str]], grade_of: Callable[[str], int | None], *, budget: int,
              threshold: int = 1, skip: Iterable[str] = ()) -> list[MtfStep]:
    """Move-to-front for one query: the documents in the order MTF asks for them.

    ``ranked`` maps run name → its docids in rank order (the run order breaks
    ties between equal priorities). ``skip`` are documents judged before the
    pool (passed over, no feedback); ``grade_of(docid)`` gives the pool's
    judgments so far, None when a document is not judged yet. The walk stops
    after ``budget`` documents, or at the first one still waiting (the last
    step, with ``grade=None``: judge it next), or when every run is used up.
    """
    seen: set[str] = set(skip)
    priority = dict.fromkeys(ranked, 0)
    position = dict.fromkeys(ranked, 0)
    steps: list[MtfStep] = []
    current: str | None = None
    while len(steps) < budget:
        live = [n for n in ranked if position[n] < len(ranked[n])]
        if not live:
            break
        if current not in live:
            current = max(live, key=lambda n: priority[n])  # max() keeps the first among equals
        docs = ranked[current]
        docid = docs[position[current]]
        position[current] += 1
        if docid in seen:
            continue
        seen.add(docid)
        grade = grade_of(docid)
        steps.append(MtfStep(docid, current, grade))
        if grade is None:
            break
        if grade < threshold:
            priority[current] -= 1
            current = None
    return steps


def mtf_pool(runs: Mapping[str, Run], budget_per_query: int, grade_of: Callable[[str, str], int | None], *,
             depth: int = DEFAULT_ADAPTIVE_DEPTH, judged: Qrels | None = None, threshold: int = 1,
             qids: Iterable[str] | None = None) -> Pool:
    """The MTF pool so far: per query, the documents judged (or waiting) in MTF order.

    ``grade_of(qid, docid)`` returns the pool's judgment or None. With an
    oracle (full qrels) this simulates the whole assessment; on the platform it
    replays the judgments made so far, and the last entry of a query without a
    grade is the next document to judge there.
    """
    names, tops, qids = _prepare(runs, depth, qids)
    done = judged_pairs(judged)
    entries: dict[str, list[PoolEntry]] = {}
    for q in qids:
        ranked = {n: tops[n].get(q, []) for n in names}
        steps = mtf_order(ranked, functools.partial(grade_of, q), budget=budget_per_query,
                          threshold=threshold, skip=[d for (qq, d) in done if qq == q])
        ranks = _ranks_of(names, tops, q)
        entries[q] = [PoolEntry(q, s.docid, float(i), ranks[s.docid]) for i, s in enumerate(steps, start=1)]
    return Pool(method=f"mtf(budget={budget_per_query})", entries=entries, run_names=names, depth=depth,
                tops=tops, judged=done)


# ---------------------------------------------------------------- bias


@dataclass(frozen=True)
class LeaveOneOut:
    """One run's score with all judgments and without the relevant documents only it found."""

    run: str
    measure: str
    unique_relevant: int
    with_all: float
    without_own: float
    rank_with: int
    rank_without: int

    @property
    def change(self) -> float:
        return self.without_own - self.with_all


def leave_one_run_out(runs: Mapping[str, Run], qrels: Qrels, *, measure: str, pool_depth: int,
                      depth: int = 1000) -> list[LeaveOneOut]:
    """Zobel's pool-bias test ("How reliable are the results of large-scale IR experiments?", SIGIR 1998).

    For each run: the relevant documents that it alone retrieved within
    ``pool_depth`` (among ``runs``) are removed from the qrels, as if it had
    not contributed to the pool, and the run is scored again. A large drop
    means the collection favours the runs that built it. Means are over the
    queries evaluated with the full qrels; a query left without any relevant
    document scores 0. ``rank_without`` places the reduced score among the
    other runs' full scores (1 = best, ties share the better rank).
    """
    names = list(runs)
    tops = {n: ranked_docids(runs[n], pool_depth) for n in names}
    full = qrels.to_dict()
    retrievers: dict[tuple[str, str], set[str]] = {}
    for n in names:
        for q, docs in tops[n].items():
            for d in docs:
                retrievers.setdefault((q, d), set()).add(n)
    scores = {n: evaluate(qrels, runs[n], [measure], depth=depth) for n in names}
    name = scores[names[0]].measures[0].name if names else measure
    means = {n: scores[n].means[name] for n in names}
    out = []
    for n in names:
        unique = [(q, d) for (q, d), who in retrievers.items()
                  if who == {n} and full.get(q, {}).get(d, -1) >= qrels.threshold]
        if unique:
            reduced = {q: dict(docs) for q, docs in full.items()}
            for q, d in unique:
                del reduced[q][d]
            ev = evaluate(Qrels.from_dict(reduced, threshold=qrels.threshold), runs[n], [name], depth=depth)
            by_q = dict(zip(ev.qids, ev.per_query[name].tolist()))
            base = scores[n].qids
            without = float(np.mean([by_q.get(q, 0.0) for q in base])) if base else 0.0
        else:
            without = means[n]
        others = [means[m] for m in names if m != n]
        out.append(LeaveOneOut(
            run=n, measure=name, unique_relevant=len(unique), with_all=means[n], without_own=without,
            rank_with=1 + sum(v > means[n] for v in others), rank_without=1 + sum(v > without for v in others)))
    return out
