"""What the submissions side does when the dataset catalogue signals, and when a run finishes (connected in
``SubmissionsConfig.ready``)."""

from __future__ import annotations

import logging

from django.db.models.signals import post_save
from django.dispatch import receiver

from campaigns.notifications import absolute, notify
from catalogue.signals import qrels_published

from .models import StatusEvent, Submission
from .services.rescoring import requeue_service_failures

logger = logging.getLogger(__name__)


@receiver(qrels_published, dispatch_uid="submissions.score_waiting_runs")
def score_waiting_runs(sender, *, split, version, **kwargs) -> None:
    """Queue the split's runs that were waiting for judgments (failures of ours), sent after commit."""
    queued = requeue_service_failures(split.pk)
    if queued:
        logger.info("%s published on %s: %s waiting submission(s) queued for scoring", version, split, queued)


# --- e-mail when a run is scored or fails (campaigns.notifications: after the commit, once per run and status) ---


@receiver(post_save, sender=StatusEvent, dispatch_uid="submissions.notify_run_finished")
def notify_run_finished(sender, instance: StatusEvent, created: bool, **kwargs) -> None:
    """The owner of a run gets one e-mail when it is first scored, and one if it fails (with the link).

    Only the link and the status: a score sent by e-mail could not follow the page's rules (a hidden
    split's Ladder, a shared task's public part). Curators' baselines send nothing.
    """
    if kwargs.get("raw"):
        return  # a row loaded as it was (an imported archive, a fixture): the run finished long ago, elsewhere
    if not created or instance.status not in (Submission.Status.SCORED, Submission.Status.FAILED):
        return
    submission = Submission.objects.select_related("split__dataset", "user").filter(pk=instance.submission_id).first()
    if submission is None or submission.is_baseline:
        return
    failed = instance.status == Submission.Status.FAILED
    notify(key=f"run-{instance.status}:{submission.pk}", kind="run_failed" if failed else "run_scored",
           user=submission.user,
           context={"system": submission.system_name, "split": str(submission.split), "id": submission.pk,
                    "dataset": submission.split.dataset.name,
                    "message": (submission.error or {}).get("message", "") if failed else "",
                    "url": absolute(submission.get_absolute_url())})
