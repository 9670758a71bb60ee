"""The fusion explorer: fuse 2–5 public runs of a split and score the result like any submission.

The web request only decides: ``fusion_create`` checks the choice (2–5
scored parts of one split of a retrieval dataset, each public or the user's
own, the quota) and saves a private, queued :class:`Submission` owned by the
requesting user, with ``fusion_of`` naming its parts, ``fusion_params`` the
method and no run file yet. It reads no run: fusing a few large runs would
hold a web worker for seconds, and nothing heavy runs in a request.

The worker does the rest through the normal scoring path
(``transaction.on_commit`` → ``submissions.tasks.score_submission``): after
claiming the row, :func:`fused_run_ensure` (called by the scoring service when
``fusion_params`` is set and the file is missing) reads the parts, fuses them
with the metric core (:func:`evaluation.fusion.rrf`, k = 60 by default, or
:func:`~evaluation.fusion.combsum` of min-max normalised scores), writes the
fused run with :func:`evaluation.runs.write_run` and stores it on the
submission in private storage, so it is there for rescoring on new judgments
and for the top-k overlap of the compare page. Then the fused run is scored
like an upload. A part that cannot be read fails the fusion as the service's
fault (:class:`FusionFailed`; it does not count against the quota). Its page
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

from django.core.files.base import ContentFile
from django.db import transaction
from django.db.models import Q

from accounts.policy import upload_refusal
from accounts.terms import terms_pending
from catalogue.models import Dataset
from evaluation.errors import InputError
from evaluation.fusion import combsum, rrf
from evaluation.runs import read_run, write_run

from ..disclosure import result_released
from ..errors import UploadRefused
from ..models import Submission
from ..provenance import FUSION_NOTE, fused_provenance, gaps_of
from ..selectors import current_result_of, submission_quota
from .locks import lock_uploader
from .places import task_place
from .queue import submission_enqueue

logger = logging.getLogger(__name__)

METHODS = {"rrf": "Reciprocal Rank Fusion", "combsum": "CombSUM of min-max normalised scores"}
MIN_PARTS, MAX_PARTS = 2, 5
DEFAULT_K = 60
MAX_K = 10_000


class FusionRefused(Exception):
    """The fusion cannot be made; the message says why and what to do. ``status`` suits an HTTP answer.

    400: the request itself is wrong; 409: the runs named exist but their state or kind does not allow it
    (another split, not scored, a closed split), as compare answers.
    """

    def __init__(self, message: str, *, status: int = 400):
        super().__init__(message)
        self.message = message
        self.status = status


def fusion_name(parts: list[Submission], *, method: str, k: int) -> str:
    label = f"RRF (k={k})" if method == "rrf" else "CombSUM"
    return f"{label} of " + " + ".join(f"#{p.pk}" for p in parts)


def fusable_by(submission: Submission, user) -> bool:
    """Public entries are anyone's to fuse; private ones only their owner's.

    On a hidden split another person's entry only once the Ladder released it (what its leaderboard
    shows); the fusion itself is the user's new submission, judged by their own Ladder (docs/security.md).
    """
    if bool(user and user.is_authenticated and submission.user_id == user.pk and submission.is_live):
        return True
    if not submission.is_public or not submission.split.dataset.is_published:
        return False
    return not submission.split.hidden or result_released(current_result_of(submission), split=submission.split)


def fusion_task_check(dataset: Dataset) -> None:
    """Only ranked runs can be fused: refuse classification and NER datasets with a plain reason."""
    if dataset.task != Dataset.Task.RETRIEVAL:
        raise FusionRefused(f"Fusion is for retrieval datasets: {dataset.name} is a {dataset.get_task_display()} "
                            "dataset, whose entries are prediction files, not ranked runs.", status=409)


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
        raise FusionRefused("Only runs of the same dataset split can be fused.", status=409)
    split = parts[0].split
    fusion_task_check(split.dataset)
    # A fusion is a new submission to the split: a split closed to uploads is closed to fusions too.
    if refusal := split.closed_reason:
        raise FusionRefused(refusal, status=409)
    for part in parts:
        if part.status != Submission.Status.SCORED:
            raise FusionRefused(f"#{part.pk} is not scored ({part.status}); only scored runs can be fused.", status=409)
        if part.file_removed_at is not None:
            raise FusionRefused(f"#{part.pk} cannot be fused: its {part.file_removed_note}.", status=409)
    quota = submission_quota(user=user, split=split)
    if not quota.allowed:
        raise FusionRefused(quota.message + " A fusion counts as a submission.", status=429)


class FusionFailed(Exception):
    """The worker cannot build a fused run (a part's file is missing or unreadable): the service's fault."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def fused_run_bytes(*, parts: list[Submission], method: str, k: int, depth: int) -> bytes:
    """The fused run in TREC format, from the parts' stored files (the metric core does the work).

    Raises :class:`FusionFailed` naming the part whose file cannot be read:
    the parts were scored, so an unreadable file is the service's problem, not the user's.
    """

    runs = []
    for part in parts:
        try:
            with part.run_file.open("rb") as fh:
                runs.append(read_run(fh, name=part.original_name or f"#{part.pk}"))
        except (OSError, ValueError, InputError) as exc:
            logger.warning("fusion: the run file of submission %s cannot be read", part.pk, exc_info=True)
            reason = "it is missing" if isinstance(exc, FileNotFoundError) else type(exc).__name__
            raise FusionFailed(
                f"The run file of #{part.pk} ({part.system_name}) cannot be read ({reason}), so the runs could "
                "not be fused. This is our fault and does not count against your quota; the curators have been "
                "told, and you may fuse again later."
            ) from exc
    fused = rrf(runs, k=k, depth=depth) if method == "rrf" else combsum(runs, depth=depth)
    buffer = io.BytesIO()
    write_run(fused, buffer, tag=f"rrf{k}" if method == "rrf" else "combsum")
    return buffer.getvalue()


def fused_run_ensure(*, submission: Submission) -> bool:
    """Build and store the fused run of a fusion that has no run file yet; True when it built one.

    Called by the scoring service in the worker, after the row was claimed
    (so one worker at a time). The file is saved first and then recorded with
    a conditional UPDATE on a still empty ``run_file``: if another attempt got
    there first, its file is kept and ours removed, so the stored file never
    changes once recorded. Raises :class:`FusionFailed` when a part cannot be
    read or the fused run is empty.
    """
    if not submission.fusion_params or submission.run_file:
        return False
    params = submission.fusion_params
    method = params.get("method", "rrf")
    k = int(params.get("k", DEFAULT_K))
    ids = [int(pk) for pk in params.get("parts", [])]
    found = {p.pk: p for p in submission.fusion_of.all()}
    missing = [pk for pk in ids if pk not in found]
    if missing or not ids:
        raise FusionFailed(f"The fused submission{'s' if len(missing) > 1 else ''} "
                           f"{', '.join(f'#{pk}' for pk in missing) or '(none named)'} no longer exist, so the "
                           "runs could not be fused. This does not count against your quota.")
    depth = submission.split.dataset.depth
    data = fused_run_bytes(parts=[found[pk] for pk in ids], method=method, k=k, depth=depth)
    if not data:
        raise FusionFailed("The fused run is empty: the chosen runs retrieve nothing. "
                           "This does not count against your quota.")
    name = submission.original_name or f"fusion-{method}.txt"
    field = submission.run_file
    field.save(name, ContentFile(data), save=False)
    stored = field.name
    updated = Submission.objects.filter(pk=submission.pk).filter(Q(run_file="") | Q(run_file__isnull=True)).update(
        run_file=stored, file_size=len(data), sha256=hashlib.sha256(data).hexdigest())
    if not updated:
        field.storage.delete(stored)
        submission.refresh_from_db(fields=["run_file", "file_size", "sha256"])
        return False
    submission.file_size = len(data)
    submission.sha256 = hashlib.sha256(data).hexdigest()
    logger.info("fusion %s: fused run of %s written (%s bytes)", submission.pk, ids, len(data))
    return True


def fusion_create(*, user, parts: list[Submission], method: str = "rrf", k: int = DEFAULT_K,
                  system_name: str = "") -> Submission:
    """Save a private, queued fusion of ``parts`` for ``user``; the worker fuses and scores it after commit.

    Reads no run file (see the module docstring): the row has no file until
    the worker writes the fused run.
    """

    k = int(k)
    if parts and (refusal := upload_refusal(user=user, split=parts[0].split)):  # a submission: the same policy
        raise FusionRefused(refusal, status=403)
    if parts and (pending := terms_pending(user=user, dataset=parts[0].split.dataset)):  # and the data terms
        raise FusionRefused(pending.message, status=403)
    fusion_check(user=user, parts=parts, method=method, k=k)
    split = parts[0].split
    try:  # a shared task's rule, as for an upload: a team's run (its caps, its Ladder), or refused
        place = task_place(user=user, split=split)
    except UploadRefused as exc:
        raise FusionRefused(exc.message) from None
    if split.requires_provenance and (unstated := [p for p in parts if gaps_of(p)]):
        raise FusionRefused(
            f"The split {split} asks every entry to state its provenance, and a fusion states its parts': "
            + ", ".join(f"#{p.pk} ({', '.join(dict.fromkeys(g.field for g in gaps_of(p)))})" for p in unstated)
            + " do not state theirs yet. Edit them first (their page, Edit), then fuse again.")
    params: dict[str, object] = {"method": method, "parts": [p.pk for p in parts]}
    if method == "rrf":
        params["k"] = k
    name = system_name.strip()[:120] or fusion_name(parts, method=method, k=k)
    description = f"{METHODS[method]}{f' with k = {k}' if method == 'rrf' else ''} of " + ", ".join(
        # A private part by its number only: the fusion may be made public, its parts' names must not follow.
        f"#{p.pk} {p.system_name}" if p.is_public else f"#{p.pk}" for p in parts) + "."
    submission = Submission(
        user=user,
        split=split,
        system_name=name,
        description=description,
        family=Submission.Family.HYBRID,
        visibility=Submission.Visibility.PRIVATE,
        original_name=f"fusion-{method}.txt",
        fusion_params=params,
        # Provenance follows from the parts' (the most task-specific training data, unknown if any part's is),
        # and the note says so; the owner may edit it like any metadata.
        **fused_provenance(parts),
        training_data_note=FUSION_NOTE,
        entrant_team=place.team,
        after_task=place.after_task,
    )
    with transaction.atomic():
        lock_uploader(user)
        quota = submission_quota(user=user, split=split)
        if not quota.allowed:
            raise FusionRefused(quota.message + " A fusion counts as a submission.", status=429)
        submission.save()
        submission.fusion_of.set(parts)
        submission_id = submission.pk
        transaction.on_commit(lambda: submission_enqueue(submission_id=submission_id))
    logger.info("fusion %s created by user %s: %s", submission.pk, user.pk, params)
    return submission
