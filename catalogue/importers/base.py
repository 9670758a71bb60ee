"""What every importer shares: the parsed form of a release, refusals, and file sources.

An importer reads released files (given as ``{relative name: bytes}``, so the
command line, the admin upload form and the tests feed it the same way) and
returns an :class:`ImportData` without touching the database. Writing is one
service, :func:`catalogue.services.dataset_import`, inside one transaction:
a refused file writes nothing, and the three formats store data identically.
"""

from __future__ import annotations

import io
import json
import os
import re
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evaluation.errors import MAX_PROBLEMS, InputError, Problem

SPLIT_NAME = re.compile(r"^[-a-zA-Z0-9_]{1,32}$")


class DatasetFileError(InputError):
    """A released dataset file (topics, corpus, qrels) is malformed."""


class ImportRefused(Exception):
    """One or more files were refused; nothing was written.

    ``str(err)`` gives one ``file:line: reason`` line per problem, across files.
    """

    def __init__(self, errors: Sequence[InputError]):
        self.errors = list(errors)
        super().__init__(str(self))

    @property
    def lines(self) -> list[str]:
        return [line for err in self.errors for line in str(err).splitlines()]

    def __str__(self) -> str:
        return "\n".join(self.lines)


class Problems:
    """Problems of one file, stopping the file's parse after ``MAX_PROBLEMS``."""

    class Full(Exception):
        pass

    def __init__(self, path: str):
        self.path = path
        self.items: list[Problem] = []

    def add(self, line: int | None, reason: str) -> None:
        self.items.append(Problem(line, reason))
        if len(self.items) >= MAX_PROBLEMS:
            raise Problems.Full

    def error(self) -> DatasetFileError | None:
        if not self.items:
            return None
        items = sorted(self.items, key=lambda p: (p.line is not None, p.line or 0))
        return DatasetFileError(self.path, items)

    def __bool__(self) -> bool:
        return bool(self.items)


@dataclass
class TopicRow:
    qid: str
    text: str
    category: str = ""
    subcategory: str = ""
    extra: dict = field(default_factory=dict)


@dataclass
class SplitData:
    """One split as released: its topics and its judgments (qid → docid → grade)."""

    name: str
    hidden: bool
    topics: list[TopicRow]
    qrels: dict[str, dict[str, int]]
    sources: list[str] = field(default_factory=list)
    #: False when the files hold judgments only (a new qrels version): the split's topics are not touched.
    topics_given: bool = True

    @property
    def kind(self) -> str:
        return self.name if self.name in ("train", "dev", "test") else ("test" if self.hidden else "dev")


@dataclass
class ImportData:
    """A parsed release: corpus ids (None when the release has none) and its splits."""

    format: str
    corpus_ids: list[str] | None
    splits: list[SplitData]
    notices: list[str] = field(default_factory=list)
    corpus_source: str = ""
    #: The documents' text when the release has it ({"_id", "title", "text"}), kept for participants to download.
    corpus_documents: list[dict] | None = None


def decode_text(data: bytes, problems: Problems) -> str | None:
    """UTF-8 text (a BOM is accepted), or None with a problem naming the line of the bad byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        problems.add(line, f"byte 0x{data[exc.start]:02x} is not UTF-8 — save the file as UTF-8 text")
        return None


def jsonl_objects(text: str, problems: Problems, *, example: str):
    """(line number, object) for each non-blank line that holds a JSON object.

    Other lines are noted in ``problems``, with ``example`` (one valid line)
    in the message so the fix is plain.
    """
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.add(n, f"not valid JSON ({exc.msg} at column {exc.colno}) — write one JSON object per line")
            continue
        if not isinstance(obj, dict):
            problems.add(n, f"not a JSON object — write one object per line, e.g. {example}")
            continue
        yield n, obj


def refuse_if_any(problem_lists: Iterable[Problems]) -> None:
    errors = [err for p in problem_lists if (err := p.error()) is not None]
    if errors:
        raise ImportRefused(errors)


# --- File sources ---------------------------------------------------------------
# Every importer takes ``{relative/name: bytes}``. These build that mapping.


def files_from_directory(path: str | os.PathLike, *, names: Iterable[str] | None = None) -> dict[str, bytes]:
    """The files under ``path`` (relative names with '/'), or only ``names`` when given."""
    root = Path(path)
    if not root.is_dir():
        raise ImportRefused([DatasetFileError(str(root), [Problem(None, "is not a folder")])])
    out: dict[str, bytes] = {}
    if names is not None:
        for name in names:
            p = root / name
            if p.is_file():
                out[name] = p.read_bytes()
        return out
    for p in sorted(root.rglob("*")):
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts):
            out[p.relative_to(root).as_posix()] = p.read_bytes()
    return out


def files_from_zip(data: bytes, *, max_bytes: int, name: str = "upload.zip") -> dict[str, bytes]:
    """The files of a zip archive, with a common top folder removed ("bsard/articles_fr.csv" → "articles_fr.csv").

    ``max_bytes`` caps the decompressed total, so a zip bomb is refused before it is inflated.
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise ImportRefused([DatasetFileError(name, [Problem(None, "is not a zip archive")])]) from None
    infos = [
        i
        for i in archive.infolist()
        if not i.is_dir() and not i.filename.startswith("__MACOSX/") and "/." not in "/" + i.filename
    ]
    total = sum(i.file_size for i in infos)
    if total > max_bytes:
        reason = f"holds {total} bytes once decompressed, more than the limit of {max_bytes}"
        raise ImportRefused([DatasetFileError(name, [Problem(None, reason)])])
    names = [i.filename for i in infos]
    prefix = os.path.commonpath(names) if len(names) > 1 else os.path.dirname(names[0]) if names else ""
    if prefix in names:  # a single file: commonpath is the file itself
        prefix = os.path.dirname(prefix)
    if prefix.rsplit("/", 1)[-1] == "qrels":  # a zip of qrels files only keeps the BEIR layout
        prefix = os.path.dirname(prefix)
    out: dict[str, bytes] = {}
    for info in infos:
        rel = info.filename[len(prefix) :].lstrip("/") if prefix else info.filename
        if ".." in rel.split("/"):
            continue
        out[rel] = archive.read(info)
    return out


def files_from_uploads(uploads: Iterable, *, max_bytes: int) -> dict[str, bytes]:
    """Uploaded files (objects with ``.name`` and ``.read()``) as a release mapping.

    A zip is unpacked. Browsers send loose files without their folder, so a
    loose ``test.tsv`` is taken as ``qrels/test.tsv`` (the BEIR layout).
    """
    out: dict[str, bytes] = {}
    for upload in uploads:
        name = os.path.basename(upload.name)
        data = upload.read()
        if name.lower().endswith(".zip"):
            out.update(files_from_zip(data, max_bytes=max_bytes, name=name))
        elif name.lower().endswith(".tsv"):
            out[f"qrels/{name}"] = data
        else:
            out[name] = data
    return out


def pick(files: Mapping[str, bytes], name: str) -> tuple[str, bytes] | None:
    """The file called ``name`` in the mapping, at its root or in one folder below."""
    if name in files:
        return name, files[name]
    for key, data in files.items():
        if key.rsplit("/", 1)[-1] == name and key.count("/") <= 1:
            return key, data
    return None
