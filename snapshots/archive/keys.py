"""The operator's key for an archive's hidden material: Fernet (AES-128-CBC and HMAC-SHA256, ``cryptography``).

The key never goes into an archive; the manifest holds its fingerprint, so an import with another key is
refused before anything is read or written, naming both fingerprints.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken

#: The environment variable that may hold the key itself (instead of ``--key-file``).
KEY_ENV = "LEXBOARD_ARCHIVE_KEY"


class ArchiveKeyError(Exception):
    """A key is missing, malformed or not the archive's: the message says which and what to do."""


def key_generate(path: Path) -> str:
    """Write a new key to ``path`` (readable by its owner only) and return its fingerprint; refuses to overwrite."""
    key = Fernet.generate_key()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError as exc:
        raise ArchiveKeyError(f"{path} exists already: choose another path (a key is never overwritten).") from exc
    with os.fdopen(fd, "wb") as fh:
        fh.write(key + b"\n")
    return fingerprint(key)


def key_load(path: str | None) -> bytes | None:
    """The key from ``path``, else from the environment (``LEXBOARD_ARCHIVE_KEY``), else None."""
    if path:
        try:
            raw = Path(path).read_bytes().strip()
        except OSError as exc:
            raise ArchiveKeyError(f"Cannot read the key file {path}: {exc.strerror}.") from exc
        where = path
    elif os.environ.get(KEY_ENV):
        raw, where = os.environ[KEY_ENV].strip().encode(), KEY_ENV
    else:
        return None
    try:
        Fernet(raw)
    except ValueError as exc:
        raise ArchiveKeyError(f"{where} does not hold a Fernet key (44 characters of URL-safe base64): make one "
                              "with `manage.py export_benchmark --generate-key PATH`.") from exc
    return raw


def fingerprint(key: bytes) -> str:
    """16 hex digits that name a key without revealing it (a salted sha256)."""
    return hashlib.sha256(b"lexboard-archive-key\0" + key).hexdigest()[:16]


def encrypt(key: bytes, data: bytes) -> bytes:
    return Fernet(key).encrypt(data)


def decrypt(key: bytes, token: bytes, *, member: str) -> bytes:
    try:
        return Fernet(key).decrypt(token)
    except InvalidToken as exc:
        raise ArchiveKeyError(f"{member} does not open with this key (its fingerprint matches, so the member was "
                              "changed): the archive is damaged.") from exc
