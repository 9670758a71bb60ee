"""The worker's first entry on the compiled fast path: a stored run scored by ``_fastscore``, as an ``Evaluation``.

``python -m evaluation score`` offers its files to the compiled scorer (``fastscore``); the worker does the same
with a stored run (``submissions.services.results.first_entry``), and keeps more than the command prints: the
per-query vectors of ``scoring.Evaluation`` (n_relevant, first_relevant_rank, judged_at_10, rel_ranks,
rel_offsets) that ``per_query_pack`` stores and the analyses read. The compiled scorer computes them with
``scoring.evaluate``'s arithmetic, so the ``Evaluation`` here is the numpy path's, bit for bit
(tests/submissions/test_fast_first_entry.py feeds test_fastscore's random cases through both). Whatever the fast
path does not take (``fastscore.score_stored`` returns None) the caller scores on the numpy path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import IO

import numpy as np

from .conventions import EmptyQueries, ScorePrecision
from .corpus import CorpusIds
from .fastscore import score_stored
from .measures import Measure
from .scoring import Evaluation


def evaluate_stored(*, open_run: Callable[[], IO[bytes]], qrels: bytes, measures: list[Measure], depth: int,
                    threshold: int, score_precision: ScorePrecision, empty_queries: EmptyQueries,
                    max_lines: int | None = None, max_bytes: int | None = None,
                    corpus: CorpusIds | None = None) -> Evaluation | None:
    """``evaluate(read_qrels(qrels, threshold=threshold), read_run(open_run()), measures, corpus=corpus, ...)``
    bit for bit, when the compiled scorer takes the files; None otherwise (``fastscore.score_stored``: a run
    naming a document outside the corpus within the depth is handed back, the numpy path says what it counts)."""
    found = score_stored(open_run=open_run, qrels=qrels, measures=[m.name for m in measures], depth=depth,
                         threshold=threshold, score_precision=score_precision, empty_queries=empty_queries,
                         max_lines=max_lines, max_bytes=max_bytes, corpus=corpus)
    if found is None:
        return None
    n_rel, first, judged10, ranks, offsets = found.details
    counts = found.counts
    unknown, in_both = counts["unknown"], counts["in_both"]
    assert isinstance(unknown, int) and isinstance(in_both, int) and isinstance(counts["n_lines"], int)
    return Evaluation(
        qids=found.qids, measures=list(measures),
        means=dict(zip(found.names, found.means, strict=True)),
        per_query={name: np.array(column, dtype=np.float64) for name, column in zip(found.names, found.columns,
                                                                                     strict=True)},
        n_relevant=np.frombuffer(n_rel, dtype=np.int64).copy(),
        first_relevant_rank=np.frombuffer(first, dtype=np.int64).copy(),
        judged_at_10=np.frombuffer(judged10, dtype=np.float64).copy(),
        rel_ranks=np.frombuffer(ranks, dtype=np.int32).copy(),
        rel_offsets=np.frombuffer(offsets, dtype=np.int64).copy(),
        depth=depth, warnings=found.warnings, n_lines=counts["n_lines"], n_queries_in_run=in_both + unknown,
    )


__all__ = ["evaluate_stored"]
