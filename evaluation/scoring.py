"""Scoring a run against qrels: the metric semantics of the leaderboard.

The rules (DESIGN.md, "Metric semantics"):

* relevant = qrels grade ≥ the qrels threshold;
* evaluated queries = qrels queries with at least one relevant document (or
  every qrels query with ``empty_queries="count"``, as trec_eval ``-c``, or
  the qrels queries the run has with ``"trec_eval"``, as plain trec_eval); a
  query the run lacks scores 0 everywhere (trec_eval ``-c``); run queries the
  qrels do not know are ignored with a notice;
* order within a query: score descending, compared in single precision as
  trec_eval 9.x stores scores (or in double precision, as trec_eval 10 does,
  when ``score_precision="float64"``), ties by docid descending as strings
  (trec_eval's order); the rank column is not used;
* rows beyond ``depth`` are cut after sorting, with a notice;
* docids outside the corpus are non-relevant, with a notice; when more than
  half of the rows are outside, the run is refused (wrong id scheme).

The whole path is vectorized: rows are ranked with numpy, only rows the qrels
judge are looked at one by one by the measure kernels, and those are a few per
query.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from . import _kernel as K
from .conventions import (
    DEFAULT_EMPTY_QUERIES,
    DEFAULT_SCORE_PRECISION,
    EmptyQueries,
    ScorePrecision,
    empty_queries as check_empty_queries,
    score_precision as check_score_precision,
)
from .corpus import CorpusIds
from .errors import (
    Notice,
    Problem,
    RunFormatError,
    counted,
    depth_cut_notice,
    empty_counted_notice,
    missing_queries_notice,
    ties_notice,
    unknown_queries_notice,
)
from .kernels import Hits
from .measures import DEFAULT_MEASURES, FAMILIES, Measure, parse_measures
from .qrels import Qrels
from .runs import Run


@dataclass
class Evaluation:
    """Scores of one run: means, per-query vectors and the facts behind them.

    Per-query arrays are aligned with ``qids`` (the evaluated queries, sorted).
    ``rel_ranks[rel_offsets[i]:rel_offsets[i + 1]]`` are the ranks (within the
    depth) of query ``i``'s relevant documents found by the run.
    """

    qids: list[str]
    measures: list[Measure]
    means: dict[str, float]
    per_query: dict[str, np.ndarray]
    n_relevant: np.ndarray
    first_relevant_rank: np.ndarray
    judged_at_10: np.ndarray
    rel_ranks: np.ndarray
    rel_offsets: np.ndarray
    depth: int
    warnings: list[Notice] = field(default_factory=list)
    n_lines: int = 0
    n_queries_in_run: int = 0

    @property
    def relevant_ranks(self) -> list[np.ndarray]:
        """Ranks of the relevant documents found, one array per evaluated query."""
        return [self.rel_ranks[a:b] for a, b in zip(self.rel_offsets[:-1], self.rel_offsets[1:], strict=True)]

    def to_json(self, *, per_query: bool = False) -> dict[str, Any]:
        """``{"measures": {name: mean}, "queries": n, "warnings": [...]}`` (+ ``per_query``)."""
        out: dict[str, Any] = {
            "measures": {m.name: self.means[m.name] for m in self.measures},
            "queries": len(self.qids),
            "warnings": [w.to_dict() for w in self.warnings],
        }
        if per_query:
            out["per_query"] = self.per_query_dict()
        return out

    def per_query_dict(self) -> dict[str, dict[str, float]]:
        """``{qid: {measure: value}}`` for the evaluated queries."""
        cols = {m.name: self.per_query[m.name].tolist() for m in self.measures}
        return {q: {name: vals[i] for name, vals in cols.items()} for i, q in enumerate(self.qids)}


def recall_curve(evaluation: Evaluation, max_k: int | None = None) -> np.ndarray:
    """Mean R@k for k = 1..max_k (default: the depth), for drawing a recall curve."""
    max_k = max_k or evaluation.depth
    nq = len(evaluation.qids)
    if nq == 0:
        return np.zeros(max_k)
    counts = np.diff(evaluation.rel_offsets)
    q = np.repeat(np.arange(nq), counts)
    r = evaluation.rel_ranks
    keep = r <= max_k
    w = 1.0 / evaluation.n_relevant[q[keep]]
    return np.cumsum(np.bincount(r[keep] - 1, weights=w, minlength=max_k)[:max_k]) / nq


# ---------------------------------------------------------------- evaluate


def evaluate(
    qrels: Qrels,
    run: Run,
    measures: list[Measure] | list[str] | str | None = None,
    *,
    depth: int = 1000,
    corpus: CorpusIds | None = None,
    docid_example: str | None = None,
    progress: Callable[[float], None] | None = None,
    score_precision: ScorePrecision = DEFAULT_SCORE_PRECISION,
    empty_queries: EmptyQueries = DEFAULT_EMPTY_QUERIES,
) -> Evaluation:
    """Score ``run`` against ``qrels`` with the leaderboard's rules (module docstring).

    ``measures`` are ``Measure`` objects or names (default: ``DEFAULT_MEASURES``).
    ``score_precision`` ("float32": trec_eval 9.x; "float64": trec_eval 10) and
    ``empty_queries`` ("omit", "count" or "trec_eval") are the conventions of
    ``evaluation.conventions``.
    Raises ``RunFormatError`` when most docids are outside ``corpus``.
    """
    score_precision = check_score_precision(score_precision)
    empty_queries = check_empty_queries(empty_queries)
    if measures is None:
        measures = DEFAULT_MEASURES
    elif isinstance(measures, str) or (measures and isinstance(measures[0], str)):
        measures = parse_measures(measures)
    measures = cast(list[Measure], measures)
    if depth < 1:
        raise ValueError("depth must be at least 1")
    report = progress or (lambda _x: None)
    warnings: list[Notice] = list(run.notices)  # e.g. several tags in one file

    # Queries: run codes -> qrels index -> evaluated position.
    q_of_code = np.array([-1 if qrels.query_index(q) is None else qrels.query_index(q) for q in run.qids],
                         dtype=np.int32)
    unknown = [q for q, i in zip(run.qids, q_of_code.tolist(), strict=True) if i < 0]
    if unknown:
        warnings.append(unknown_queries_notice(unknown[:5], len(unknown)))
    in_run = np.zeros(len(qrels.qids), dtype=bool)
    in_run[q_of_code[q_of_code >= 0]] = True
    if empty_queries == "omit":
        evaluated = np.flatnonzero(qrels.n_relevant_per_query > 0)
    else:
        evaluated = np.arange(len(qrels.qids)) if empty_queries == "count" else np.flatnonzero(in_run)
        n_empty = int((qrels.n_relevant_per_query[evaluated] == 0).sum())
        if n_empty:
            warnings.append(empty_counted_notice(n_empty, empty_queries))
    eval_pos = np.full(len(qrels.qids), -1, dtype=np.int64)
    eval_pos[evaluated] = np.arange(len(evaluated))
    qids = [qrels.qids[i] for i in evaluated.tolist()]
    missing = int((~in_run[evaluated]).sum())
    if missing:
        warnings.append(missing_queries_notice(missing, len(qids)))
    report(0.05)

    rank, tie_notice, cut_notice, retrieved = rank_rows(run, depth, score_precision=score_precision)
    warnings += [n for n in (tie_notice, cut_notice) if n is not None]
    report(0.6)

    # Judged rows within the depth.
    row_q = q_of_code[run.qcode] if len(run) else np.zeros(0, dtype=np.int32)
    row_q[rank > depth] = -1
    if corpus is None:
        rows, row_grades = qrels.judged_rows(row_q, run.doc_words, run.doc_keys)  # a few rows per query
    else:
        judged, grade = qrels.lookup(row_q, run.doc_words, run.doc_keys)
        judged, grade = _apply_corpus(run, corpus, row_q, rank <= depth, judged, grade, docid_example, warnings)
        rows = np.flatnonzero(judged)
        row_grades = grade[rows]
        del judged, grade
    report(0.85)

    hq = eval_pos[row_q[rows]]
    keep = hq >= 0
    rows, hq = rows[keep], hq[keep]
    hr = rank[rows].astype(np.int64)
    hg = row_grades[keep]
    order = np.lexsort((hr, hq))
    hq, hr, hg = hq[order], hr[order], hg[order]

    nq = len(qids)
    ctx = Hits(qrels=qrels, evaluated=evaluated, nq=nq, n_rel=qrels.n_relevant_per_query[evaluated].astype(np.float64),
               hq=hq, hr=hr, hg=hg, rel=hg >= qrels.threshold)
    per_query = {m.name: FAMILIES[m.family].kernel(ctx, m.k) for m in measures}
    means = {name: float(v.mean()) if nq else 0.0 for name, v in per_query.items()}

    rq, rr = hq[ctx.rel], hr[ctx.rel]
    offsets = np.zeros(nq + 1, dtype=np.int64)
    offsets[1:] = np.cumsum(np.bincount(rq, minlength=nq))
    shown10 = np.minimum(retrieved[q_of_code >= 0], min(10, depth))
    n_shown = np.zeros(len(qrels.qids), dtype=np.int64)
    n_shown[q_of_code[q_of_code >= 0]] = shown10
    n_shown = n_shown[evaluated]
    judged10 = np.bincount(hq[hr <= 10], minlength=nq)
    report(1.0)
    return Evaluation(
        qids=qids, measures=list(measures), means=means, per_query=per_query,
        n_relevant=ctx.n_rel.astype(np.int64), first_relevant_rank=ctx.first_rank(),
        judged_at_10=np.divide(judged10, n_shown, out=np.zeros(nq), where=n_shown > 0),
        rel_ranks=rr.astype(np.int32), rel_offsets=offsets, depth=depth, warnings=warnings,
        n_lines=run.n_lines, n_queries_in_run=len(run.qids),
    )


def rank_rows(run: Run, depth: int, *, score_precision: ScorePrecision = DEFAULT_SCORE_PRECISION,
              ) -> tuple[np.ndarray, Notice | None, Notice | None, np.ndarray]:
    """Rank of every row within its query (1-based), in trec_eval's order.

    Scores are compared in ``score_precision``: trec_eval 9.x keeps them as C
    floats, so scores equal in single precision are ties there and ranking on
    float32 reproduces its order exactly; trec_eval 10 keeps doubles.

    Returns (rank per row, ties notice, depth notice, rows per run query code).
    A run written in ranked order (the usual case) needs no sort at all; only
    groups of equal scores are sorted, by docid descending.
    """
    n = len(run)
    retrieved = np.zeros(len(run.qids), dtype=np.int64)
    if n == 0:
        return np.zeros(0, dtype=np.int32), None, None, retrieved
    q, s = run.qcode, K.compared_scores(run.scores, score_precision)
    newq = q[1:] != q[:-1]
    grouped = int(newq.sum()) + 1 == len(run.qids)
    ranked = grouped and bool(((s[1:] <= s[:-1]) | newq).all())
    order: np.ndarray | None = None
    if not ranked:
        order = _sort_by_score(q, s, newq, grouped)
        q, s = q[order], s[order]
        newq = q[1:] != q[:-1]
    heads = np.concatenate(([0], np.flatnonzero(newq) + 1))
    lens = np.diff(np.append(heads, n))
    retrieved[q[heads]] = lens  # q is grouped by query here (sorted if it was not)
    rank_sorted = np.arange(1, n + 1, dtype=np.int32)
    rank_sorted -= np.repeat(heads.astype(np.int32), lens)

    tie_notice = None
    tied: tuple[np.ndarray, np.ndarray] | None = None  # (rows, their ranks) when only tied rows move
    tie = (s[1:] == s[:-1]) & ~newq
    if tie.any():
        member = np.zeros(n, dtype=bool)
        member[1:] |= tie
        member[:-1] |= tie
        pos = np.flatnonzero(member)
        first = np.ones(len(pos), dtype=bool)
        first[1:] = ~tie[pos[1:] - 1]
        gid = np.cumsum(first)
        rows = order[pos] if order is not None else pos
        sub = np.lexsort(K.sort_keys_desc(run.doc_words[rows]) + [gid])
        if order is not None:
            order[pos] = rows[sub]
        else:
            # A run already in score order: only the tied rows move, so they alone are given their ranks
            # (what ``rank[order] = rank_sorted`` below does with ``order`` the identity elsewhere).
            tied = (pos[sub], rank_sorted[pos])
        decided = rank_sorted[pos] <= depth
        n_groups = int(np.unique(gid[decided]).size)
        n_queries = int(np.unique(q[pos[decided]]).size)
        if n_groups:
            tie_notice = ties_notice(n_groups, n_queries)
    cut_notice = None
    over = lens > depth
    if over.any():
        n_cut = int((lens[over] - depth).sum())
        cut_notice = depth_cut_notice(n_cut, int(over.sum()), depth)
    if order is None:
        rank = rank_sorted
        if tied is not None:
            rank[tied[0]] = tied[1]
    else:
        rank = np.empty(n, dtype=np.int32)
        rank[order] = rank_sorted
    return rank, tie_notice, cut_notice, retrieved


def _sort_by_score(q: np.ndarray, s: np.ndarray, newq: np.ndarray, grouped: bool) -> np.ndarray:
    """Row order by (query, score descending), stable, so equal scores keep file order.

    A run grouped by query is sorted row by row in a (queries × rows) matrix,
    which is much faster than one global sort; otherwise a global lexsort.
    """
    n = len(q)
    heads = np.concatenate(([0], np.flatnonzero(newq) + 1))
    lens = np.diff(np.append(heads, n))
    width = int(lens.max())
    if not grouped or len(heads) * width > 2 * n:
        return np.lexsort((-s, q))
    rows = np.repeat(np.arange(len(heads)), lens)
    cols = np.arange(n) - np.repeat(heads, lens)
    block = np.full((len(heads), width), np.inf, dtype=s.dtype)
    block[rows, cols] = -s
    idx = np.argsort(block, axis=1, kind="stable")
    del block
    valid = np.arange(width) < lens[:, None]
    # Padding (+inf) sorts last in every row, so the first lens[i] entries are the real rows.
    return (heads[:, None] + idx)[valid]


def _apply_corpus(run: Run, corpus: CorpusIds, row_q: np.ndarray, within: np.ndarray, judged: np.ndarray,
                  grade: np.ndarray, docid_example: str | None, warnings: list[Notice]
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Docids outside the corpus are non-relevant; refuse when most of them are outside."""
    considered = np.flatnonzero(within)
    inside = corpus.contains_keys(run.doc_keys[considered])
    n_out = int((~inside).sum())
    if n_out == 0:
        return judged, grade
    outside_rows = considered[~inside]
    examples = run.docids(outside_rows[:3])
    if n_out * 2 > len(considered):
        scheme = docid_example or corpus.example
        hint = f" Its documents have ids like {scheme!r};" if scheme else ""
        raise RunFormatError(run.name, [Problem(None,
            f"{n_out} of the run's {len(considered)} rows name documents that are not in this dataset's corpus "
            f"(e.g. {', '.join(repr(e) for e in examples)}): the document id scheme looks wrong.{hint} "
            "use the corpus' own ids in the third column")])
    warnings.append(Notice("unknown_docids", f"{counted(n_out, 'row names a document', 'rows name documents')} outside the corpus "
                           f"(e.g. {', '.join(repr(e) for e in examples)}); they count as non-relevant", n_out))
    judged = judged.copy()
    grade = grade.copy()
    judged[outside_rows] = False
    grade[outside_rows] = 0
    return judged, grade
