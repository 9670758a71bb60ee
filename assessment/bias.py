"""Zobel's leave-one-run-out test on a pool's runs, for curators.

For each run, the relevant documents only it retrieved within the pool's
depth are removed from the current qrels and the run is scored again on the
split's primary measure (:func:`evaluation.pooling.leave_one_run_out`): a
large drop means runs that did not help build the judgments are scored lower
than they deserve.
"""

from __future__ import annotations

from evaluation.pooling import LeaveOneOut, leave_one_run_out
from evaluation.qrels import read_qrels

from .errors import AssessmentError
from .models import Pool
from .pools import pool_candidate_runs, read_runs


def pool_bias(*, pool: Pool) -> list[LeaveOneOut]:
    """The test for the pool's runs (all the split's scored runs when it was built from all), on the current qrels."""
    split = pool.split
    if split.current_qrels is None:
        raise AssessmentError(f"{split} has no published judgments to test")
    chosen = list(pool.runs.all()) or list(pool_candidate_runs(split=split))
    runs = read_runs(chosen)
    if not runs:
        raise AssessmentError(f"{split} has no scored run to test")
    dataset = split.dataset
    qrels = read_qrels(split.current_qrels.text().encode(), threshold=dataset.relevance_threshold)
    rows = leave_one_run_out(runs, qrels, measure=dataset.primary_measure, pool_depth=max(pool.depth, 1),
                             depth=dataset.depth)
    return sorted(rows, key=lambda r: (r.change, r.run))
