"""What the submissions side does when the dataset catalogue signals (connected in ``SubmissionsConfig.ready``)."""

from __future__ import annotations

import logging

from django.dispatch import receiver

from leaderboard.signals import qrels_published

from .services.rescoring import requeue_service_failures

logger = logging.getLogger(__name__)


@receiver(qrels_published, dispatch_uid="submissions.score_waiting_runs")
def score_waiting_runs(sender, *, split, version, **kwargs) -> None:
    """Queue the split's runs that were waiting for judgments (failures of ours), sent after commit."""
    queued = requeue_service_failures(split.pk)
    if queued:
        logger.info("%s published on %s: %s waiting submission(s) queued for scoring", version, split, queued)
