"""The reveal's side on the results of a shared task's split: back to all topics (see :mod:`.partition`)."""

from __future__ import annotations

import logging

from leaderboard.models import Split

from ..models import Result, ResultPart
from .ladder import ladder_replay
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
