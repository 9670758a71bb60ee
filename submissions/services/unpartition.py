"""A shared task's partition switched on and off for the results already stored on its split (see :mod:`.partition`).

:func:`split_partition` when a curator sets up a phase on a split that has scored runs already (their
results become their public part, as if scored during the phase); :func:`split_unpartition` at the reveal.
"""

from __future__ import annotations

import logging

from catalogue.models import Split

from ..models import Result, ResultPart
from .ladder import ladder_replay
from .partition import parts_of, parts_store
from .rescoring import bump_caches_after_commit, split_lock

logger = logging.getLogger(__name__)


def split_unpartition(*, split: Split) -> int:
    """The reveal's side on results: every Result of the split that holds a public part gets its full values.

    Run in the reveal's transaction, under the split's lock, after the phase is marked revealed (so a scoring
    that stores later stores full values). The Ladder is replayed on the current qrels from the first upload:
    what is released after the task is what full-topic scores would have released. Returns how many results
    changed.
    """
    current_id, _ = split_lock(split.pk)
    changed = 0
    for part in ResultPart.objects.filter(submission__split=split, part=ResultPart.Part.FULL):
        changed += Result.objects.filter(submission_id=part.submission_id, qrels_version_id=part.qrels_version_id).update(
            scores=part.scores, primary_score=part.primary_score, n_queries=part.n_queries, per_query=part.per_query)
    if current_id is not None:
        ladder_replay(split=split, version_id=current_id)
    split.bump_cache_version()
    bump_caches_after_commit(split)
    logger.info("%s: %s results now on all topics (the shared task was revealed)", split, changed)
    return changed


def split_partition(*, split: Split, public: frozenset[str]) -> int:
    """Cut the split's stored results that have no parts yet (scored before the phase) into their parts.

    Exact and without scoring again: a part's means are means of the stored per-query values. The Result
    then holds the public part, like every result stored during the phase; the Ladder is replayed on the
    current qrels. Returns how many results were cut.
    """
    current_id, _ = split_lock(split.pk)
    done = 0
    results = Result.objects.filter(submission__split=split).exclude(scores={}).exclude(per_query=b"")
    for result in results.select_related("submission"):
        if ResultPart.objects.filter(submission_id=result.submission_id, qrels_version_id=result.qrels_version_id).exists():
            continue
        parts = parts_of(per_query=bytes(result.per_query), scores=result.scores,
                         primary_measure=split.dataset.primary_measure, public=public)
        parts_store(submission_id=result.submission_id, version_id=result.qrels_version_id, parts=parts)
        scores, primary, n, blob = parts["public"]
        Result.objects.filter(pk=result.pk).update(scores=scores, primary_score=primary, n_queries=n, per_query=blob)
        done += 1
    if done and current_id is not None:
        ladder_replay(split=split, version_id=current_id)
    if done:
        split.bump_cache_version()
        bump_caches_after_commit(split)
    logger.info("%s: %s stored results cut into the shared task's parts", split, done)
    return done
