"""The fusion explorer: fuse 2–5 public runs of a split and score the result like any submission.

``fusion_create`` reads the chosen runs, fuses them with the metric core
(:func:`evaluation.fusion.rrf`, k = 60 by default, or :func:`~evaluation.fusion.combsum`
of min-max normalised scores), writes the fused run with
:func:`evaluation.runs.write_run` and stores it as a new :class:`Submission`
owned by the requesting user: private, ``fusion_of`` naming its parts and
``fusion_params`` the method. The worker scores it through the normal path
(``transaction.on_commit`` → ``evaluation.tasks.score_submission``); its page
then shows the same analyses as any submission, aggregates only on a hidden
split. The owner may make it public, as a submission that names its parts.

Who may fuse what: public submissions, plus the user's own. A fusion counts
against the split's quota like an upload: otherwise fusing one's own runs with
varying parameters would be a free oracle for hidden labels.
"""

from __future__ import annotations

import hashlib
import io
import logging

from django.contrib.auth import get_user_model
from django.core.files.base import ContentFile
from django.db import transaction

from leaderboard.models import Dataset

from .models import Submission
from .selectors import submission_quota

logger = logging.getLogger(__name__)

METHODS = {"rrf": "Reciprocal Rank Fusion", "combsum": "CombSUM of min-max normalised scores"}
MIN_PARTS, MAX_PARTS = 2, 5
DEFAULT_K = 60
MAX_K = 10_000


class FusionRefused(Exception):
    """The fusion cannot be made; the message says why and what to do. ``status`` suits an HTTP answer."""

    def __init__(self, message: str, *, status: int = 400):
        super().__init__(message)
        self.message = message
        self.status = status


def fusion_name(parts: list[Submission], *, method: str, k: int) -> str:
    label = f"RRF (k={k})" if method == "rrf" else "CombSUM"
    return f"{label} of " + " + ".join(f"#{p.pk}" for p in parts)


def fusable_by(submission: Submission, user) -> bool:
    """Public entries are anyone's to fuse; private ones only their owner's."""
    if submission.is_public:
        return True
    return bool(user and user.is_authenticated and submission.user_id == user.pk
                and submission.withdrawn_at is None and not submission.hidden_by_curator)


def fusion_check(*, user, parts: list[Submission], method: str, k: int) -> None:
    """Refuse (``FusionRefused``) what cannot be fused: count, method, k, split, status, visibility, quota."""
    if method not in METHODS:
        raise FusionRefused(f"Unknown method {method!r}; use 'rrf' or 'combsum'.")
    if method == "rrf" and not (0 <= k <= MAX_K):
        raise FusionRefused(f"k must be a whole number between 0 and {MAX_K} (60 is the usual choice).")
    if not (MIN_PARTS <= len(parts) <= MAX_PARTS):
        raise FusionRefused(f"Choose between {MIN_PARTS} and {MAX_PARTS} submissions to fuse (got {len(parts)}).")
    if len({p.pk for p in parts}) != len(parts):
        raise FusionRefused("The same submission is named twice; choose different ones.")
    for part in parts:
        if not fusable_by(part, user):
            # The same words as for an id that does not exist: ids are not to be probed.
            raise FusionRefused(f"No public submission #{part.pk} is available to fuse.", status=404)
    if len({p.split_id for p in parts}) > 1:
        raise FusionRefused("Only runs of the same dataset split can be fused.")
    for part in parts:
        if part.status != Submission.Status.SCORED:
            raise FusionRefused(f"#{part.pk} is not scored ({part.status}); only scored runs can be fused.")
    split = parts[0].split
    if split.dataset.task != Dataset.Task.RETRIEVAL:
        raise FusionRefused(f"{split.dataset.name} is not a retrieval dataset; its entries cannot be fused.")
    quota = submission_quota(user=user, split=split)
    if not quota.allowed:
        raise FusionRefused(quota.message + " A fusion counts as a submission.", status=429)


def fused_run_bytes(*, parts: list[Submission], method: str, k: int, depth: int) -> bytes:
    """The fused run in TREC format, from the parts' stored files (the metric core does the work)."""
    from evaluation.fusion import combsum, rrf
    from evaluation.runs import read_run, write_run

    runs = []
    for part in parts:
        with part.run_file.open("rb") as fh:
            runs.append(read_run(fh, name=part.original_name or f"#{part.pk}"))
    fused = rrf(runs, k=k, depth=depth) if method == "rrf" else combsum(runs, depth=depth)
    buffer = io.BytesIO()
    write_run(fused, buffer, tag=f"rrf{k}" if method == "rrf" else "combsum")
    return buffer.getvalue()


def fusion_create(*, user, parts: list[Submission], method: str = "rrf", k: int = DEFAULT_K,
                  system_name: str = "") -> Submission:
    """Fuse ``parts`` and save the fused run as a private, queued submission of ``user``; score it after commit."""
    from .services import submission_enqueue

    k = int(k)
    fusion_check(user=user, parts=parts, method=method, k=k)
    split = parts[0].split
    data = fused_run_bytes(parts=parts, method=method, k=k, depth=split.dataset.depth)
    if not data:
        raise FusionRefused("The fused run is empty: the chosen runs retrieve nothing.")
    params = {"method": method, "parts": [p.pk for p in parts]}
    if method == "rrf":
        params["k"] = k
    name = system_name.strip()[:120] or fusion_name(parts, method=method, k=k)
    description = f"{METHODS[method]}{f' with k = {k}' if method == 'rrf' else ''} of " + ", ".join(
        f"#{p.pk} {p.system_name}" for p in parts) + "."
    submission = Submission(
        user=user,
        split=split,
        system_name=name,
        description=description,
        family=Submission.Family.HYBRID,
        visibility=Submission.Visibility.PRIVATE,
        original_name=f"fusion-{method}.txt",
        file_size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        fusion_params=params,
        used_training_data=any(p.used_training_data for p in parts),
    )
    submission.run_file.save(submission.original_name, ContentFile(data), save=False)
    stored = submission.run_file.name
    try:
        with transaction.atomic():
            # Serialise one user's submissions so two parallel requests cannot both pass the quota.
            get_user_model().objects.select_for_update().filter(pk=user.pk).first()
            quota = submission_quota(user=user, split=split)
            if not quota.allowed:
                raise FusionRefused(quota.message + " A fusion counts as a submission.", status=429)
            submission.save()
            submission.fusion_of.set(parts)
            submission_id = submission.pk
            transaction.on_commit(lambda: submission_enqueue(submission_id=submission_id))
    except BaseException:
        submission.run_file.storage.delete(stored)
        raise
    logger.info("fusion %s created by user %s: %s", submission.pk, user.pk, params)
    return submission
