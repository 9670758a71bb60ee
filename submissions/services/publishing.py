"""A curator's import and "publish and rescore": the one home of both.

Publishing a later judgments version of a split rescores its submissions
(:func:`.rescoring.split_qrels_publish`), so it belongs to the submissions
side; the dataset catalogue only stores versions (``catalogue.importers``).
The admin's upload form, its "publish" action and ``manage.py import_dataset``
all come here.
"""

from __future__ import annotations

from django.db import transaction

from catalogue.importers import DatasetFileError, ImportRefused, ImportReport, release_store
from catalogue.importers.report import SplitReport
from catalogue.models import Dataset, QrelsVersion, Split
from catalogue.services import SMALL_CHANGE_HOW, SmallJudgmentChange
from evaluation.errors import Problem

from .rescoring import split_qrels_publish


def qrels_version_publish_and_rescore(*, split: Split, version: QrelsVersion, small_change_reason: str = "",
                                      user=None, override: str = SMALL_CHANGE_HOW) -> int:
    """Publish ``version`` the curator's way; returns how many submissions were sent for (re)scoring.

    With no scored submission the version becomes current at once. Otherwise
    it is staged (``split.pending_qrels``): every scored submission is
    rescored on it by the workers while the leaderboard keeps showing the
    current version, and the leaderboard switches to the new one in one
    UPDATE when the last result is stored. Tasks are sent after commit, so a
    rolled-back import sends nothing. A hidden split's small change raises
    ``catalogue.services.SmallJudgmentChange`` unless ``small_change_reason``
    (a curator's) says why it cannot wait for a batch.
    """
    outcome = split_qrels_publish(split=split, version=version, small_change_reason=small_change_reason, user=user,
                                  override=override)
    return outcome.rescoring + outcome.requeued


def _publish_reported(*, dataset: Dataset, sr: SplitReport, only_new: bool = False, small_change_reason: str = "",
                      user=None, override: str = SMALL_CHANGE_HOW) -> None:
    """Publish the version a split's import added, unless it is current or staged; record it in the report.

    With ``only_new`` a version the import matched but did not add (an older one, say v1 after a curator
    published v2) is left as it is.
    """
    if sr.qrels_version is None:
        return
    split = Split.objects.get(dataset=dataset, name=sr.name)
    version = QrelsVersion.objects.get(split=split, version=sr.qrels_version)
    if version.pk not in (split.current_qrels_id, split.pending_qrels_id) and (sr.qrels_created or not only_new):
        try:
            sr.rescored = qrels_version_publish_and_rescore(
                split=split, version=version, small_change_reason=small_change_reason, user=user, override=override)
        except SmallJudgmentChange as exc:  # the whole import is refused: nothing is written
            raise ImportRefused([DatasetFileError("publish", [Problem(None, str(exc))])]) from None
        sr.published = True
        split.refresh_from_db(fields=["current_qrels", "pending_qrels"])
    sr.switch_pending = split.pending_qrels_id == version.pk
    sr.current_version = split.current_qrels.version if split.current_qrels is not None else None


def release_import(*, dataset: Dataset, data, user=None, publish: bool = False, note: str = "",
                   dry_run: bool = False, only_new: bool = False, small_change_reason: str = "",
                   override: str = SMALL_CHANGE_HOW, keep_topics: bool = False) -> ImportReport:
    """Store a parsed release in one transaction and, with ``publish``, publish each new judgments version.

    A split's first version is always published (nothing is scored on it
    yet); a later one only with ``publish``, because publishing rescores every
    submission of the split. A curator who imports judgments identical to an older
    version and asks to publish gets that version back as current; with ``only_new``
    (the demo, loaded again at every start) only a version this import added is
    published, so a curator's later version stays current. With ``dry_run`` everything
    is checked and reported, then rolled back (no message is sent: they go after commit). Publishing a
    hidden split's version that changes fewer judgments than its minimum batch refuses the import
    (``ImportRefused``, nothing written) unless ``small_change_reason`` says why; without ``publish`` the
    version is stored unpublished, to be batched with later judgments. With ``keep_topics`` (the demo) the
    topics already in a split are never rewritten, only missing ones created.
    """
    with transaction.atomic():
        report = release_store(dataset=dataset, data=data, user=user, note=note, keep_topics=keep_topics)
        if publish:
            for sr in report.splits:
                _publish_reported(dataset=dataset, sr=sr, only_new=only_new,
                                  small_change_reason=small_change_reason, user=user, override=override)
        if dry_run:
            transaction.set_rollback(True)
    report.dry_run = dry_run
    return report
