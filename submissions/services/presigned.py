"""Uploads that go straight to object storage: a run larger than the proxy's body limit, sent once, to S3.

With the run storage in S3 (``LEXBOARD_S3_BUCKET``), :func:`upload_slot` gives
an account that may upload to a split now (the checks of an upload that need
no file, :func:`~submissions.services.admission.upload_precheck`, and at most
``LEXBOARD_UPLOAD_OPEN_SLOTS`` slots whose address is still valid) a presigned ``POST``: an
address and form fields whose signed policy takes one object, at the key
``incoming/<user id>/<random>/<file name>``, of 1 byte to
``LEXBOARD_MAX_UPLOAD_BYTES``, for :data:`SLOT_SECONDS`. The storage refuses
a larger body itself (``content-length-range``). The API view counts the slot
as an upload of the account and of its network (``UploadRateThrottle``).

The caller sends the file there (not through the site), then names the key in
``POST /api/v1/submissions/from-upload``: :func:`slot_submission_create`
claims the slot (one conditional UPDATE: of two completions only one wins),
checks the object's size again (``head_object``), and makes the submission
with ``submission_create``'s checks and storage. The slot is then spent:
``used`` (it names its submission, one-to-one) or ``refused``; either way the
incoming object is deleted at once. :func:`slots_sweep` (Celery beat,
``submissions.sweep_upload_slots``) expires slots never used and deletes
every object under ``incoming/`` no open slot owns: a slot's object lives at
most its hour, the completion's grace and one sweep interval.

Without S3 there is no slot (:class:`NoObjectStorage`).
"""

from __future__ import annotations

import logging
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from storages.backends.s3 import S3Storage

from catalogue.models import Split

from ..errors import QuotaExceeded, SlotSpent, UploadRefused
from ..models import Submission, UploadSlot
from .admission import submission_create, upload_precheck
from .inspection import check_provenance, clean_metadata
from .locks import lock_uploader

logger = logging.getLogger(__name__)

#: How long a slot's signed policy stays valid: an upload starts within it.
SLOT_SECONDS = 3600
#: How long after the policy's expiry the key may still be named (an upload started at the last minute).
COMPLETE_GRACE_SECONDS = 1800
#: A completion that claimed a slot and never finished (its process died) is given up after this long.
CLAIM_STALE_SECONDS = 3600
INCOMING = "incoming"
FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class NoObjectStorage(Exception):
    """The site keeps runs on its own disk: upload the file in the request's body instead."""


@dataclass(frozen=True)
class PresignedSlot:
    """What the caller needs: POST ``fields`` and then the file (the form's last field, ``file``) to ``url``."""

    url: str
    fields: dict[str, str]
    key: str
    expires_at: datetime
    max_bytes: int


def _run_storage() -> S3Storage:
    storage = Submission._meta.get_field("run_file").storage
    if not isinstance(storage, S3Storage):
        raise NoObjectStorage("This site keeps runs on its own disk, not in object storage: send the file in the "
                              "upload's multipart body (run_file).")
    return storage


def direct_upload_limits() -> dict[str, int]:
    """What a slot takes here (``NoObjectStorage`` without S3): asked by the client before it mints one."""
    _run_storage()
    return {"max_bytes": settings.LEXBOARD_MAX_UPLOAD_BYTES, "slot_seconds": SLOT_SECONDS,
            "open_slots": settings.LEXBOARD_UPLOAD_OPEN_SLOTS}


def _human_bytes(n: int) -> str:
    return f"{n / (1024 * 1024):.0f} MiB" if n >= 1024 * 1024 else f"{n:,} bytes"


def upload_slot(*, user, split: Split, file_name: str) -> PresignedSlot:
    """A presigned POST for one run of ``user`` to ``split``, given only where an upload would be taken now.

    Raises ``NoObjectStorage`` without S3, the upload's own refusals (``upload_precheck``: split closed, account
    policy, data terms, shared task, quota), or ``QuotaExceeded`` when the account holds
    ``LEXBOARD_UPLOAD_OPEN_SLOTS`` slots whose address is still valid (used or not).
    """
    storage = _run_storage()
    upload_precheck(user=user, split=split, run_file=True)
    now = timezone.now()
    max_bytes = settings.LEXBOARD_MAX_UPLOAD_BYTES
    limit = settings.LEXBOARD_UPLOAD_OPEN_SLOTS
    key = f"{INCOMING}/{user.pk}/{secrets.token_hex(16)}/{file_name}"
    with transaction.atomic():
        lock_uploader(user)  # two requests of one account take turns: both cannot pass the count
        # Every slot whose signed address is still valid counts, used or not: S3 cannot revoke a policy, so a spent
        # slot's key takes a file again until its hour is over (deleted by the next sweep). With this cap, what one
        # account can have in incoming/ at any moment is LEXBOARD_UPLOAD_OPEN_SLOTS x LEXBOARD_MAX_UPLOAD_BYTES.
        live = UploadSlot.objects.filter(user=user, expires_at__gt=now)
        oldest = live.order_by("expires_at").first()
        if limit and oldest is not None and live.count() >= limit:
            message = (f"You hold {limit} upload slots whose address is still valid (used or not), the most one "
                       "account may hold: send a file to one not used yet and name its upload_key in "
                       "POST /api/v1/submissions/from-upload, or ask again when the oldest expires "
                       f"({oldest.expires_at:%Y-%m-%d %H:%M} UTC).")
            raise QuotaExceeded(message, [{"line": None, "reason": f"live upload slots: {limit} of {limit}"}],
                                retry_at=oldest.expires_at)
        slot = UploadSlot.objects.create(key=key, user=user, split=split, max_bytes=max_bytes, created_at=now,
                                         expires_at=now + timedelta(seconds=SLOT_SECONDS))
    post = storage.bucket.meta.client.generate_presigned_post(
        Bucket=storage.bucket_name, Key=storage._normalize_name(key),
        Conditions=[["content-length-range", 1, max_bytes]], ExpiresIn=SLOT_SECONDS)
    return PresignedSlot(url=post["url"], fields=dict(post["fields"]), key=key, expires_at=slot.expires_at,
                         max_bytes=max_bytes)


def _refuse(reason: str, message: str) -> UploadRefused:
    return UploadRefused(message, [{"line": None, "reason": f"upload_key: {reason}"}])


def _spent(slot: UploadSlot) -> SlotSpent:
    """Why a slot that is not open makes no submission, for a person."""
    again = "Ask POST /api/v1/uploads/ for a new slot to send a run again."
    if slot.state == UploadSlot.State.USED:
        message = (f"This upload slot already made submission {slot.submission_id}: one slot makes one submission. "
                   + again)
    elif slot.state == UploadSlot.State.REFUSED:
        message = (f"This upload slot's file was refused and removed ({slot.message}): one slot makes one "
                   "submission. " + again)
    elif slot.state == UploadSlot.State.CLAIMED:
        message = ("Another request is making the submission of this upload slot now: one slot makes one "
                   "submission. GET /api/v1/submissions/?mine=1 shows it once it is made.")
    else:
        message = (f"This upload slot expired at {slot.expires_at:%Y-%m-%d %H:%M} UTC and its file was removed. "
                   + again)
    return SlotSpent(message, [{"line": None, "reason": f"upload_key: slot {slot.state}"}])


def _finish(slot: UploadSlot, *, state: str, message: str = "", submission: Submission | None = None) -> None:
    """Spend a claimed slot (``used`` or ``refused``) and delete its object: it was read, or it is refused."""
    UploadSlot.objects.filter(pk=slot.pk, state=UploadSlot.State.CLAIMED).update(
        state=state, message=message[:500], submission=submission)
    _remove_object(slot.key)


def _remove_object(key: str) -> None:
    _run_storage().delete(key)
    UploadSlot.objects.filter(key=key).update(object_removed_at=timezone.now())


def slot_submission_create(*, user, split: Split, key: str, metadata: dict[str, Any]) -> Submission:
    """The submission of the file a slot of ``user`` received (``submission_create``'s checks and storage).

    ``UploadRefused`` for a key not theirs, given for another split or still empty (the slot stays open), and
    ``SlotSpent`` for a slot already used, refused, expired or being completed. Once claimed, the slot makes
    this submission or is refused, and its object is deleted either way.
    """
    storage = _run_storage()
    prefix, _, name = key.rpartition("/")
    slot = UploadSlot.objects.select_related("split__dataset").filter(key=key, user=user).first()
    if slot is None or not re.fullmatch(rf"{INCOMING}/{user.pk}/[0-9a-f]{{32}}", prefix):
        raise _refuse("not a key of yours", "upload_key is not one this site gave you: ask POST /api/v1/uploads/ "
                      "for a slot, POST the file with its upload_fields to its upload_url, then send its upload_key "
                      "to POST /api/v1/submissions/from-upload.")
    if slot.split_id != split.pk:
        raise _refuse("another split", f"This upload slot was given for {slot.split.dataset.slug} / "
                      f"{slot.split.name}: name that dataset and split with its upload_key.")
    # Fields not valid or provenance missing: said before the slot is spent (the file need not be sent again).
    check_provenance(split=slot.split, values=clean_metadata(metadata))
    now = timezone.now()
    claimed = UploadSlot.objects.filter(
        pk=slot.pk, state=UploadSlot.State.OPEN,
        expires_at__gt=now - timedelta(seconds=COMPLETE_GRACE_SECONDS)).update(
            state=UploadSlot.State.CLAIMED, claimed_at=now)
    if not claimed:
        if UploadSlot.objects.filter(pk=slot.pk, state=UploadSlot.State.OPEN).update(state=UploadSlot.State.EXPIRED):
            _remove_object(key)  # past its hour and grace: what it holds goes now, not at the next sweep
        slot.refresh_from_db()
        raise _spent(slot)
    try:
        size = storage.size(key)  # head_object: the size the storage holds, whatever the client said
    except FileNotFoundError:
        UploadSlot.objects.filter(pk=slot.pk, state=UploadSlot.State.CLAIMED).update(
            state=UploadSlot.State.OPEN, claimed_at=None)
        raise _refuse("no file there", "Nothing was uploaded to upload_key yet (or its hour is over): POST the "
                      "file with the slot's upload_fields to its upload_url first.") from None
    if size > slot.max_bytes:
        message = (f"The file is {_human_bytes(size)}; the limit is {_human_bytes(slot.max_bytes)} "
                   f"({slot.max_bytes:,} bytes). It was removed. Compress it with gzip, or keep at most the "
                   "dataset's depth of documents per query.")
        _finish(slot, state=UploadSlot.State.REFUSED, message=f"file size {size} bytes exceeds {slot.max_bytes}")
        raise UploadRefused(message, [{"line": None, "reason": f"file size {size} bytes exceeds {slot.max_bytes}"}])
    upload = UploadedFile(file=storage.open(key, "rb"), name=name, size=size)
    try:
        submission = submission_create(user=user, split=split, upload=upload, metadata=metadata)
    except UploadRefused as exc:
        upload.close()
        _finish(slot, state=UploadSlot.State.REFUSED, message=exc.message)
        raise
    upload.close()
    _finish(slot, state=UploadSlot.State.USED, submission=submission)  # the submission holds its own copy now
    return submission


def slots_sweep(*, now: datetime | None = None) -> dict[str, int]:
    """Expire slots never used and delete every object under ``incoming/`` that no open slot owns (Celery beat).

    An object is kept only while its slot is open (within its hour and the completion's grace) or claimed by a
    completion that is not stale; the object of a used, refused or expired slot (sent again after the slot was
    spent: the policy still signs it until its hour is over) and an object no slot names are deleted.
    """
    now = now or timezone.now()
    try:
        storage = _run_storage()
    except NoObjectStorage:
        return {"expired": 0, "removed": 0}
    expired = UploadSlot.objects.filter(
        Q(state=UploadSlot.State.OPEN, expires_at__lte=now - timedelta(seconds=COMPLETE_GRACE_SECONDS))
        | Q(state=UploadSlot.State.CLAIMED, claimed_at__lte=now - timedelta(seconds=CLAIM_STALE_SECONDS))
    ).update(state=UploadSlot.State.EXPIRED)
    client = storage.bucket.meta.client
    root = storage._normalize_name(f"{INCOMING}/")
    location = root[: -len(f"{INCOMING}/")]
    kept = {UploadSlot.State.OPEN, UploadSlot.State.CLAIMED}
    removed = 0
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=storage.bucket_name, Prefix=root):
        objects = page.get("Contents", [])
        keys = [item["Key"][len(location):] for item in objects]
        states = dict(UploadSlot.objects.filter(key__in=keys).values_list("key", "state"))
        for key in keys:
            if states.get(key) in kept:
                continue
            _remove_object(key)
            removed += 1
    if expired or removed:
        logger.info("upload slots: %s expired, %s incoming objects removed", expired, removed)
    return {"expired": expired, "removed": removed}
