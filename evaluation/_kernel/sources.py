"""Opening what the readers are given: a path, bytes or a binary stream, gunzipped by its magic bytes.

Invariant the rest of the kernel relies on: whatever came in, the readers get
a binary stream of the file's uncompressed bytes (text mode is refused), and
the first bytes can be looked at (``sniff_content``) without being lost, even
on a pipe that cannot seek (``_Prepended``).
"""

from __future__ import annotations

import gzip
import io
import os
from typing import TYPE_CHECKING, BinaryIO, cast

if TYPE_CHECKING:
    pass


#: What the readers accept: a path, the bytes themselves, or a binary file object.
Source = str | os.PathLike[str] | bytes | bytearray | memoryview | BinaryIO


UTF8_BOM = b"\xef\xbb\xbf"


def open_source(source: Source, name: str | None) -> tuple[BinaryIO, str, bool]:
    """Open a path, bytes or binary file object; gunzip by magic bytes.

    Returns (stream, display name, whether we own the stream).
    """
    own = False
    if isinstance(source, (str, os.PathLike)):
        display = name or str(source)
        raw: BinaryIO = open(source, "rb")
        own = True
    elif isinstance(source, (bytes, bytearray, memoryview)):
        display = name or "<bytes>"
        raw = io.BytesIO(bytes(source))
        own = True
    else:
        display = name or getattr(source, "name", None) or "<stream>"
        display = str(display)
        raw = source
    raw, head = _peek(raw, 2)
    if isinstance(head, str):
        raise TypeError("open the file in binary mode ('rb'): runs and qrels are read as bytes")
    if head == b"\x1f\x8b":
        return cast(BinaryIO, gzip.GzipFile(fileobj=raw, mode="rb")), display, True
    return raw, display, own


class _Prepended:
    """A stream whose first bytes were already read (for pipes that cannot seek)."""

    def __init__(self, head: bytes, rest: BinaryIO):
        self.head = head
        self.rest = rest

    def read(self, n: int = -1) -> bytes:
        if self.head:
            if n is None or n < 0:
                out, self.head = self.head + self.rest.read(), b""
                return out
            out, self.head = self.head[:n], self.head[n:]
            if len(out) < n:
                out += self.rest.read(n - len(out))
            return out
        return self.rest.read(n)

    def close(self) -> None:
        self.rest.close()


def _peek(stream: BinaryIO, n: int) -> tuple[BinaryIO, bytes]:
    """The first ``n`` bytes without consuming them; returns the stream to read from."""
    if hasattr(stream, "peek"):
        try:
            return stream, stream.peek(n)[:n]
        except (OSError, ValueError):
            pass
    try:
        if stream.seekable():
            pos = stream.tell()
            data = stream.read(n)
            stream.seek(pos)
            return stream, data
    except (OSError, ValueError, AttributeError):
        pass
    data = stream.read(n)
    return cast(BinaryIO, _Prepended(data, stream)), data


def sniff_content(head: bytes) -> str | None:
    """Recognise files that are not text tables at all; return a reason or None."""
    stripped = head.lstrip(UTF8_BOM).lstrip()
    low = stripped[:200].lower()
    if head.startswith(b"PK\x03\x04"):
        return ("this looks like a spreadsheet export or a zip archive (.xlsx, .ods, .zip), "
                "not a text file; export plain text with one row per line, columns separated by spaces")
    if head.startswith(b"\xd0\xcf\x11\xe0"):
        return "this looks like an Excel spreadsheet (.xls), not a text file; export plain text instead"
    if head.startswith(b"%PDF"):
        return "this looks like a PDF document, not a text file"
    if low.startswith((b"<!doctype", b"<html", b"<?xml", b"<head", b"<body")) or (low.startswith(b"<") and b"<html" in low):
        return ("this looks like an HTML page (perhaps a download link's error or login page was saved), "
                "not a run file")
    if low.startswith((b"{", b"[")):
        return "this looks like JSON, not a whitespace-separated TREC file"
    if b"\x00" in head[:65536]:
        return "this file contains NUL bytes, so it is binary (or UTF-16), not UTF-8 text"
    return None
