"""Uploads that go straight to object storage: a run larger than the proxy's body limit, sent once, to S3.

With the run storage in S3 (``LEXBOARD_S3_BUCKET``), :func:`upload_slot` gives
the caller a presigned ``PUT`` address for one object under
``incoming/<user id>/<random>/<file name>``, valid for an hour; the caller
sends the file there (not through the site), then names the key in
``POST /api/v1/submissions/from-upload`` (``upload_key``) instead of attaching the file.
:func:`uploaded_file` opens it as an upload like any other, for the same
checks and the same storage; the incoming object is removed once the
submission holds its copy. Without S3 there is no slot (:class:`NoObjectStorage`).
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.core.files.uploadedfile import UploadedFile
from django.utils import timezone
from storages.backends.s3 import S3Storage

from ..errors import UploadRefused
from ..models import Submission

#: How long a presigned address stays valid.
SLOT_SECONDS = 3600
INCOMING = "incoming"
FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class NoObjectStorage(Exception):
    """The site keeps runs on its own disk: upload the file in the request's body instead."""


@dataclass(frozen=True)
class UploadSlot:
    url: str
    key: str
    expires_at: datetime


def _run_storage() -> S3Storage:
    storage = Submission._meta.get_field("run_file").storage
    if not isinstance(storage, S3Storage):
        raise NoObjectStorage("This site keeps runs on its own disk, not in object storage: send the file in the "
                              "upload's multipart body (run_file).")
    return storage


def upload_slot(*, user, file_name: str) -> UploadSlot:
    """A presigned PUT address for one run of ``user`` (``NoObjectStorage`` without S3)."""
    storage = _run_storage()
    key = f"{INCOMING}/{user.pk}/{secrets.token_hex(16)}/{file_name}"
    url = storage.bucket.meta.client.generate_presigned_url(
        "put_object", Params={"Bucket": storage.bucket_name, "Key": storage._normalize_name(key)},
        ExpiresIn=SLOT_SECONDS)
    return UploadSlot(url=url, key=key, expires_at=timezone.now() + timedelta(seconds=SLOT_SECONDS))


def uploaded_file(*, user, key: str) -> UploadedFile:
    """The object a slot of ``user`` received, as an upload; ``UploadRefused`` for a key not theirs or still empty."""
    storage = _run_storage()
    prefix, _, name = key.rpartition("/")
    if not re.fullmatch(rf"{INCOMING}/{user.pk}/[0-9a-f]{{32}}", prefix) or not FILE_NAME.fullmatch(name):
        raise UploadRefused("upload_key is not one this site gave you: ask POST /api/v1/uploads/ for a slot, PUT the "
                            "file to its upload_url, then send its upload_key to POST /api/v1/submissions/from-upload.",
                            [{"line": None, "reason": "upload_key: not a key of yours"}])
    if not storage.exists(key):
        raise UploadRefused("Nothing was uploaded to upload_key yet (or its hour is over): PUT the file to the "
                            "slot's upload_url first.", [{"line": None, "reason": "upload_key: no file there"}])
    size = storage.size(key)
    return UploadedFile(file=storage.open(key, "rb"), name=name, size=size)


def slot_release(*, key: str) -> None:
    """Remove an incoming object once its submission holds its own copy (or was refused)."""
    _run_storage().delete(key)
