"""Double-entry scoring: recompute a run's per-query values independently and compare.

The core's vectorized numbers are checked against a second implementation
that shares none of its code:

* ``score_precision="float32"`` (trec_eval 9.x): **pytrec_eval**
  (pytrec-eval-terrier, trec_eval 9.0.8 in C), each family by the trec_eval
  twin ``measures.FAMILIES`` declares for it (``R@k`` → ``recall_k``,
  ``P@k`` → ``P_k``, ``MAP@k`` → ``map_cut_k``, ``nDCG@k`` → ``ndcg_cut_k``,
  ``RP`` → ``Rprec``, ``Success@k`` → ``success_k``, ``bpref`` → ``bpref``,
  ``MAP'@k`` and ``nDCG'@k`` → ``map_cut_k`` and ``ndcg_cut_k`` with
  ``judged_docs_only_flag``, i.e. ``trec_eval -J``). ``MRR@k`` is not a
  trec_eval measure: it is derived from ``recip_rank`` (1 / rank of the first
  relevant document, kept when that rank is ≤ k).
* ``score_precision="float64"`` (trec_eval 10): pytrec_eval cannot rank in
  double precision, so the second implementation is ``evaluation.reference``,
  a plain pure-Python reading of the contract (sorted lists, the textbook
  loops of ``plain_measures``).

Every family has both (``measures.Family`` cannot be declared without them),
so every measure the site stores is checked.

Values must agree per query within ``tolerance`` (1e-9); then every mean to
be stored is recomputed from the second implementation's own per-query values
(over the queries *it* found evaluated under the averaging convention, a query
the run lacks at 0 where the convention says so) and compared within the same
tolerance, and so is every shared-task part's mean (``Part``: the same values
over the part's topics). The first disagreement (query, measure, both values;
``"(mean)"`` or ``"(mean of the public part)"`` as the query for a mean) is
returned, never raised, so the caller decides (a worker fails the scoring as
the service's fault).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pytrec_eval

from . import reference, verify_halves
from .conventions import (
    DEFAULT_EMPTY_QUERIES,
    DEFAULT_SCORE_PRECISION,
    EmptyQueries,
    ScorePrecision,
    empty_queries as check_empty_queries,
    score_precision as check_score_precision,
)
from .corpus import CorpusIds
from .measures import FAMILIES, Measure
from .qrels import Qrels
from .runs import Run
from .scoring import Evaluation

TOLERANCE = 1e-9
#: The closest two means of the same values summed in different orders are held to (a few ulps of a fraction).
MEAN_TOLERANCE = 1e-12
BATCH_ROWS = 200_000  # rows of the run held as Python objects at a time

QrelsInput = Qrels | Mapping[str, Mapping[str, int]] | reference.TextSource
#: The run to check: the stored file itself (a path, its bytes or a function opening it, read again by the plain
#: reader, so the core's parsing, order and depth cut are checked too), or an already parsed run.
RunInput = Run | Mapping[str, Mapping[str, float]] | reference.TextSource


@dataclass(frozen=True)
class Disagreement:
    """The first value on which the two implementations differ.

    ``measure`` is a measure name, or ``"evaluated queries"`` when one side
    evaluates a query the other does not (its value is then 1.0 on the side
    that has it, 0.0 on the other).
    """

    qid: str
    measure: str
    core: float
    reference: float

    def __str__(self) -> str:
        where = self.qid if self.qid.startswith("(") else f"query {self.qid!r}"  # "(mean)": not a query
        return (f"{where}, {self.measure}: the core gives {self.core!r}, "
                f"the second implementation {self.reference!r}")


@dataclass(frozen=True)
class Part:
    """A part of the topics whose means are stored too (a shared task's public or private topics, or all).

    ``contains`` says whether a query is in the part (the partition itself, not anything computed from the
    core's values); ``means`` and ``n_queries`` are the values to be stored for it.
    """

    name: str
    contains: Callable[[str], bool]
    means: Mapping[str, float]
    n_queries: int


@dataclass(frozen=True)
class Verification:
    """Outcome of a double-entry check: which second implementation, what it checked, the first disagreement.

    ``measures``: the measures whose per-query values were compared; ``means``: whether the stored means were
    recomputed too; ``parts``: the parts whose means were recomputed.
    """

    method: str  # "pytrec_eval" or "plain"
    n_values: int
    disagreement: Disagreement | None
    measures: tuple[str, ...] = ()
    means: bool = False
    parts: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when every per-query value, every mean and every part's mean agreed."""
        return self.disagreement is None

    def record(self, **more: object) -> dict[str, object]:
        """What was checked, as ``Result.verified_by`` stores it (``more``: e.g. ``source="json"``)."""
        return {"method": self.method, "measures": list(self.measures), "values_compared": self.n_values,
                "means": self.means, "parts": list(self.parts), **more}


def verify(qrels: QrelsInput, run: RunInput, evaluation: Evaluation, *, depth: int = 1000,
           threshold: int | None = None, score_precision: ScorePrecision = DEFAULT_SCORE_PRECISION,
           empty_queries: EmptyQueries = DEFAULT_EMPTY_QUERIES, corpus: CorpusIds | None = None,
           tolerance: float = TOLERANCE, method: str | None = None, means: Mapping[str, float] | None = None,
           parts: Sequence[Part] = (), processes: int = 1) -> Verification:
    """Recompute ``evaluation``'s per-query values independently and compare them.

    ``qrels`` and ``run`` are the core's parsed objects, ``{qid: {docid: value}}``
    dicts, or the files (a path, bytes, or a function that opens the file as a
    binary stream), read again by the plain reader, so that the parsing is
    checked too: the worker passes the stored file. The options must be those ``evaluation`` was computed
    with; ``threshold`` defaults to the ``Qrels`` object's (else 1).
    ``method`` forces "pytrec_eval" or "plain"; by default pytrec_eval for
    float32, the plain implementation for float64.

    ``means``: the means to be stored (default ``evaluation.means``), each
    recomputed from the second implementation's per-query values; ``parts``:
    the parts of the topics whose means are stored too, recomputed likewise
    over each part's queries.

    ``processes=2``: a run file is read and scored by the second
    implementation in two processes, half each (``verify_halves``; the same
    values, in about half the wall time on two idle cores); a file it does not
    split, and any other input, in this one. :func:`begin` starts that
    before the first entry's values exist (the worker's way).
    """
    with begin(qrels, run, evaluation.measures, depth=depth, threshold=threshold, score_precision=score_precision,
               empty_queries=empty_queries, corpus=corpus, tolerance=tolerance, method=method,
               processes=processes) as check:
        return check.finish(evaluation, means=means, parts=parts)


def begin(qrels: QrelsInput, run: RunInput, measures: Sequence[Measure], *, depth: int = 1000,
          threshold: int | None = None, score_precision: ScorePrecision = DEFAULT_SCORE_PRECISION,
          empty_queries: EmptyQueries = DEFAULT_EMPTY_QUERIES, corpus: CorpusIds | None = None,
          tolerance: float = TOLERANCE, method: str | None = None, processes: int = 1,
          share: float = 0.5) -> Check:
    """A double entry begun before the values it checks exist: with ``processes=2`` and a run file, the second
    implementation's reading of the file's later half (past ``share`` of its bytes) starts now in another process.
    Use as ``with begin(...) as check: ... check.finish(evaluation)``; the options are :func:`verify`'s."""
    score_precision = check_score_precision(score_precision)
    empty_queries = check_empty_queries(empty_queries)
    if threshold is None:
        threshold = qrels.threshold if isinstance(qrels, Qrels) else 1
    method = method or ("pytrec_eval" if score_precision == "float32" else "plain")
    if method == "pytrec_eval" and score_precision != "float32":
        raise ValueError("pytrec_eval ranks scores in single precision; verify float64 with method='plain'")
    if method not in ("pytrec_eval", "plain"):
        raise ValueError(f"unknown verification method {method!r}; use pytrec_eval or plain")
    plain_qrels = _as_plain_qrels(qrels)
    second = SecondImplementation(method, tuple(measures), depth, threshold, score_precision, empty_queries, corpus)
    measures = second.measures

    # Under "trec_eval" a query is averaged only when the run has it: every qrels query is wanted, and only
    # those found in the run are evaluated (by ``second``).
    wanted = set(reference.evaluated_queries(plain_qrels, threshold, empty_queries, plain_qrels))
    later = (verify_halves.LaterHalf.start(run, plain_qrels, wanted, second, share=share)
             if processes > 1 and not isinstance(run, Run | Mapping) else None)
    return Check(method, measures, plain_qrels, run, wanted, second, empty_queries, tolerance, later)


@dataclass(frozen=True)
class SecondImplementation:
    """The second implementation's values for the queries of ``judged`` (``docs``: their rows), with a check's
    options: pytrec_eval (``method="pytrec_eval"``, float32) or the plain reading of the contract.

    A value, not a closure, so that it can be sent to the process that computes a run's later half
    (``verify_halves``' helper, which keeps it while the next run's is equal: the corpus compared by identity,
    the worker's being cached per dataset)."""

    method: str
    measures: tuple[Measure, ...]
    depth: int
    threshold: int
    score_precision: ScorePrecision
    empty_queries: EmptyQueries
    corpus: CorpusIds | None

    def __call__(self, judged: dict[str, dict[str, int]], docs: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        in_corpus = self.corpus.__contains__ if self.corpus is not None else None
        if self.method == "pytrec_eval":
            return _pytrec_eval_values(judged, docs, self.measures, depth=self.depth, threshold=self.threshold,
                                       empty_queries=self.empty_queries, in_corpus=in_corpus)
        return reference.per_query(judged, docs, self.measures, depth=self.depth, threshold=self.threshold,
                                   score_precision=self.score_precision, empty_queries=self.empty_queries,
                                   in_corpus=in_corpus)


class Check:
    """A double entry under way (:func:`begin`): :meth:`finish` compares the values it checks with its own."""

    def __init__(self, method: str, measures: tuple[Measure, ...], qrels: dict[str, dict[str, int]], run: RunInput,
                 wanted: set[str], second: verify_halves.Second, empty_queries: EmptyQueries, tolerance: float,
                 later: verify_halves.LaterHalf | None):
        self.method, self.measures, self.qrels, self.run, self.wanted = method, measures, qrels, run, wanted
        self.second, self.empty_queries, self.tolerance, self.later = second, empty_queries, tolerance, later

    def __enter__(self) -> Check:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.later is not None:
            self.later.close()

    def finish(self, evaluation: Evaluation, *, means: Mapping[str, float] | None = None,
               parts: Sequence[Part] = ()) -> Verification:
        """``evaluation`` (computed with the options the check began with), its ``means`` (default its own) and
        ``parts`` checked against the second implementation's values."""
        if tuple(evaluation.measures) != self.measures:
            raise ValueError("the evaluation's measures are not those the double entry began with")
        expected = self._expected()
        measures = [m.name for m in self.measures]
        stored = evaluation.means if means is None else means
        # Means are sums taken in another order (the core's numpy sum, fsum here): never held closer than a mean
        # can be, whatever the per-query tolerance (0.0 asks per-query values bit for bit).
        mean_tolerance = max(self.tolerance, MEAN_TOLERANCE)
        disagreement = (compare(evaluation, expected, tolerance=self.tolerance)
                        or compare_means(stored, expected, measures, tolerance=mean_tolerance)
                        or compare_parts(parts, expected, measures, tolerance=mean_tolerance))
        return Verification(self.method, len(evaluation.qids) * len(measures), disagreement,
                            measures=tuple(measures), means=True, parts=tuple(p.name for p in parts))

    def _expected(self) -> dict[str, dict[str, float]]:
        """The second implementation's values of every query averaged: the two halves joined when the run was split,
        else query by query, a batch of about BATCH_ROWS rows at a time (a 7M-line run as one {qid: {docid:
        score}} dict took 2.2 GB; only the per-query values are kept)."""
        halves = self.later.values() if self.later is not None else None
        expected: dict[str, dict[str, float]] = {} if halves is None else halves
        for batch in _run_batches(self.run) if halves is None else ():
            judged = {q: self.qrels[q] for q in batch if q in self.wanted}
            if judged:
                expected.update(self.second(judged, {q: batch[q] for q in judged}))
        missing = {q: self.qrels[q] for q in self.wanted if q not in expected}  # queries the run lacks: no rows
        if missing and self.empty_queries != "trec_eval":
            expected.update(self.second(missing, {}))
        return expected


def mean_of(expected: Mapping[str, Mapping[str, float]], measure: str,
            queries: Sequence[str] | None = None) -> float:
    """The mean of ``measure`` over ``queries`` (default: every query of ``expected``), 0 over no query.

    ``expected`` holds exactly the queries the convention averages (``reference.evaluated_queries``, with a
    query the run lacks at 0 where it is averaged), so this is the convention's mean. ``math.fsum``: exact.
    """
    qs = list(expected) if queries is None else queries
    return math.fsum(expected[q][measure] for q in qs) / len(qs) if qs else 0.0


def compare_means(stored: Mapping[str, float], expected: Mapping[str, Mapping[str, float]], measures: Sequence[str],
                  *, tolerance: float = TOLERANCE, where: str = "(mean)",
                  queries: Sequence[str] | None = None) -> Disagreement | None:
    """The first stored mean that differs from the mean of the second implementation's values, or a mean missing."""
    for name in measures:
        want = mean_of(expected, name, queries)
        got = stored.get(name)
        if got is None or not (abs(float(got) - want) <= tolerance):  # also catches NaN
            return Disagreement(where, name if got is not None else f"{name} (no mean stored)",
                                0.0 if got is None else float(got), want)
    return None


def compare_parts(parts: Sequence[Part], expected: Mapping[str, Mapping[str, float]], measures: Sequence[str], *,
                  tolerance: float = TOLERANCE) -> Disagreement | None:
    """The first part whose stored count of evaluated queries or mean differs from the second implementation's."""
    for part in parts:
        queries = [q for q in sorted(expected) if part.contains(q)]
        where = f"(mean of the {part.name} part)"
        if part.n_queries != len(queries):
            return Disagreement(where, "evaluated queries", float(part.n_queries), float(len(queries)))
        found = compare_means(part.means, expected, measures, tolerance=tolerance, where=where, queries=queries)
        if found is not None:
            return found
    return None


def compare(evaluation: Evaluation, expected: Mapping[str, Mapping[str, float]], *,
            tolerance: float = TOLERANCE) -> Disagreement | None:
    """The first per-query value of ``evaluation`` that differs from ``expected`` by more than ``tolerance``."""
    core_qids = set(evaluation.qids)
    for q in sorted(core_qids ^ set(expected)):
        return Disagreement(q, "evaluated queries", float(q in core_qids), float(q in expected))
    columns = {m.name: evaluation.per_query[m.name].tolist() for m in evaluation.measures}
    for i, q in enumerate(evaluation.qids):
        for m in evaluation.measures:
            got, want = columns[m.name][i], expected[q][m.name]
            if not (abs(got - want) <= tolerance):  # also catches NaN on either side
                return Disagreement(q, m.name, got, want)
    return None


# ---------------------------------------------------------------- inputs


def _as_plain_qrels(qrels: QrelsInput) -> dict[str, dict[str, int]]:
    if isinstance(qrels, Qrels):
        return qrels.to_dict()
    if isinstance(qrels, Mapping):
        return {q: dict(d) for q, d in qrels.items()}
    return reference.read_plain_qrels(qrels)


def _run_batches(run: RunInput, rows: int | None = None) -> Iterator[dict[str, dict[str, float]]]:
    """A run as ``{qid: {docid: score}}`` batches of whole queries, about ``rows`` rows each.

    Each query is in exactly one batch. A file is read line by line; a query
    whose lines come back after its batch was given (an ungrouped file) is
    left out of the first pass and read again, alone, in a second pass.
    """
    if isinstance(run, Run):
        yield from _batches_of_run(run, rows or BATCH_ROWS)
    elif isinstance(run, Mapping):
        batch: dict[str, dict[str, float]] = {}
        size = 0
        for q, d in run.items():
            batch[q] = dict(d)
            size += len(d)
            if size >= (rows or BATCH_ROWS):
                yield batch
                batch, size = {}, 0
        if batch:
            yield batch
    else:
        yield from _batches_of_file(run, rows or BATCH_ROWS)


def _batches_of_run(run: Run, rows: int) -> Iterator[dict[str, dict[str, float]]]:
    order = np.argsort(run.qcode, kind="stable")
    codes = run.qcode[order]
    heads = np.flatnonzero(np.concatenate(([True], codes[1:] != codes[:-1]))) if len(codes) else np.zeros(0, int)
    bounds = np.append(heads, len(codes)).tolist()
    start = 0
    while start < len(heads):
        stop = start + 1
        while stop < len(heads) and bounds[stop] - bounds[start] < rows:
            stop += 1
        batch: dict[str, dict[str, float]] = {}
        for i in range(start, stop):
            sel = order[bounds[i]:bounds[i + 1]]
            batch[run.qids[int(codes[bounds[i]])]] = dict(zip(run.docids(sel), run.scores[sel].tolist(), strict=True))
        yield batch
        start = stop


def _batches_of_file(path: reference.TextSource, rows: int) -> Iterator[dict[str, dict[str, float]]]:
    given: set[str] = set()
    split: set[str] = set()
    batch: dict[str, dict[str, float]] = {}
    size = 0
    for q, docs in reference.iter_plain_run(path):
        if q in given or q in split:
            split.add(q)
            continue
        if q in batch:  # back within the same batch: merge
            batch[q].update(docs)
        else:
            if size >= rows:
                given.update(batch)
                yield batch
                batch, size = {}, 0
            batch[q] = docs
        size += len(docs)
    given.update(batch)
    if batch:
        yield batch
    if split:
        again: dict[str, dict[str, float]] = {q: {} for q in split}
        for q, docs in reference.iter_plain_run(path):
            if q in again:
                again[q].update(docs)
        yield again


# ---------------------------------------------------------------- pytrec_eval


def _pytrec_eval_values(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]],
                        measures: Sequence[Measure], *, depth: int, threshold: int, empty_queries: EmptyQueries,
                        in_corpus: Callable[[str], bool] | None) -> dict[str, dict[str, float]]:
    """Per-query values from pytrec_eval (each family's trec_eval twin), with the leaderboard's rules around it."""
    evaluated = reference.evaluated_queries(qrels, threshold, empty_queries, run)
    wanted = set(evaluated)
    cut: dict[str, dict[str, float]] = {}
    for q, docs in run.items():
        if q not in wanted or not docs:
            continue
        if len(docs) > depth:  # rows beyond the depth are cut in trec_eval's order first
            docs = {d: docs[d] for d in reference.ranked(docs, "float32")[:depth]}
        if in_corpus is not None:
            docs = _unjudge_outside(docs, qrels[q], in_corpus)
        cut[q] = docs
    judged = {q: qrels[q] for q in evaluated}
    results: dict[bool, dict[str, dict[str, float]]] = {}
    for judged_only in sorted({FAMILIES[m.family].judged_only for m in measures}):
        names = _trec_eval_measures([m for m in measures if FAMILIES[m.family].judged_only == judged_only])
        results[judged_only] = pytrec_eval.RelevanceEvaluator(
            judged, names, relevance_level=threshold, judged_docs_only_flag=judged_only).evaluate(cut) if cut else {}
    out: dict[str, dict[str, float]] = {}
    for q in evaluated:
        row: dict[str, float] = {}
        for m in measures:
            family = FAMILIES[m.family]
            value = float(results[family.judged_only].get(q, {}).get(family.twin.format(k=m.k), 0.0))
            if family.twin_on_cut_run:  # recip_rank on the run cut at k: kept when the first relevant is within k
                value = value if value > 0 and round(1.0 / value) <= (m.k or 0) else 0.0
            row[m.name] = value
        out[q] = row
    return out


def _trec_eval_measures(measures: Sequence[Measure]) -> set[str]:
    """pytrec_eval's measure names with cutoffs, e.g. ``{"recall.10,100", "Rprec", "recip_rank"}``."""
    cutoffs: dict[str, set[int]] = {}
    names = set()
    for m in measures:
        twin = FAMILIES[m.family].twin
        if "_{k}" in twin and m.k is not None:
            cutoffs.setdefault(twin.replace("_{k}", ""), set()).add(m.k)
        else:
            names.add(twin)
    names.update(f"{name}.{','.join(str(k) for k in sorted(ks))}" for name, ks in cutoffs.items())
    return names


def _unjudge_outside(docs: dict[str, float], judged: Mapping[str, int],
                     in_corpus: Callable[[str], bool]) -> dict[str, float]:
    """Rename judged docids outside the corpus so trec_eval sees them as unjudged.

    The rule says such a row is non-relevant while the document still counts
    in |relevant| and the ideal DCG, which trec_eval cannot express on its own.
    Appending byte 0x01 keeps the docid's place in strcmp order against every
    other docid (tokens hold no byte below 0x21), so ties are broken as before.
    """
    outside = [d for d in judged if d in docs and not in_corpus(d)]  # the judged few, not the thousand rows
    if not outside:
        return docs
    renamed = dict(docs)
    for d in outside:
        renamed[d + "\x01"] = renamed.pop(d)
    return renamed


__all__ = ["Check", "Disagreement", "Part", "SecondImplementation", "Verification", "TOLERANCE", "begin", "compare",
           "compare_means", "compare_parts", "mean_of", "verify"]
