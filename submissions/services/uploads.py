"""Uploads: the cheap checks in the request, then a queued row and the file, atomically.

Every refusal names the line and the fix and comes before the upload costs
a slot (:class:`~submissions.errors.UploadRefused`). Quota: per user and
split, ``Split.daily_limit`` submissions in any rolling 24 hours and
``Split.total_limit`` in total; every submission counts, including files that
failed because of their content and withdrawn ones (otherwise "submit, look,
withdraw" would make a hidden split an oracle), except failures caused by the
service, files refused by the cheap checks and curators' baselines.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import zlib
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from evaluation.errors import Problem
from evaluation.runs import sniff_run
from leaderboard.models import Dataset, Split

from ..errors import QuotaExceeded, UploadRefused
from ..models import Submission
from ..selectors import submission_quota
from .predictions import EXAMPLES, predictions_head_problems
from .queue import submission_enqueue
from .results import corpus_ids_for
from .storage import storage_refusal

logger = logging.getLogger(__name__)

logger = logging.getLogger(__name__)


GZIP_MAGIC = b"\x1f\x8b"
#: How much of the (decompressed) file the cheap checks look at.
SNIFF_BYTES = 256 * 1024
SNIFF_LINES = 50
#: When more than this share of the first lines' docids is unknown, the id scheme is wrong.
UNKNOWN_DOCID_SHARE = 0.5

#: The metadata a participant gives and may edit later.
METADATA_FIELDS = (
    "system_name",
    "description",
    "team",
    "paper_url",
    "code_url",
    "family",
    "used_training_data",
    "params",
    "latency_ms",
    "llm_calls_per_query",
    "llm_tokens_per_query",
    "hardware",
    "visibility",
)


def _human_bytes(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} bytes"  # pragma: no cover


def problems_to_details(problems: list[Problem]) -> list[dict]:
    return [{"line": p.line, "reason": p.reason} for p in problems]

# --- the cheap checks ------------------------------------------------------------


@dataclass(frozen=True)
class InspectedUpload:
    """What the cheap checks learnt about an upload."""

    size: int
    sha256: str
    compressed: bool
    decompressed_size: int


def _read_head_and_size(upload: UploadedFile, *, compressed: bool) -> tuple[bytes, int]:
    """The first ``SNIFF_BYTES`` of the content and its full (decompressed) size.

    A gzip file is decompressed in bounded chunks and refused as soon as it
    passes ``LEXBOARD_MAX_DECOMPRESSED_BYTES``: a gzip bomb costs at most the
    cap in CPU and one chunk in memory, never its full size.
    """
    upload.seek(0)
    if not compressed:
        head = upload.read(SNIFF_BYTES)
        upload.seek(0)
        return head, upload.size
    cap = settings.LEXBOARD_MAX_DECOMPRESSED_BYTES
    head = bytearray()
    total = 0
    try:
        with gzip.GzipFile(fileobj=upload, mode="rb") as gz:
            while True:
                chunk = gz.read(1 << 20)
                if not chunk:
                    break
                total += len(chunk)
                if total > cap:
                    raise UploadRefused(
                        f"The gzip file decompresses to more than {_human_bytes(cap)}, the limit. "
                        "Keep at most the dataset's depth of documents per query, or split the run.",
                        [{"line": None, "reason": f"decompressed size exceeds {_human_bytes(cap)}"}],
                    )
                if len(head) < SNIFF_BYTES:
                    head += chunk[: SNIFF_BYTES - len(head)]
    except (EOFError, gzip.BadGzipFile, zlib.error, OSError) as exc:
        raise UploadRefused(
            "The file starts like gzip but cannot be decompressed (it is truncated or corrupt). "
            "Compress it again with `gzip run.txt`, or upload the plain text file.",
            [{"line": None, "reason": f"gzip: {exc}"}],
        ) from None
    finally:
        upload.seek(0)
    return bytes(head), total


def _complete_lines(head: bytes, *, whole: bool) -> bytes:
    """Drop a last, cut-off line so the sniffer does not report our cut as the user's error."""
    if whole:
        return head if head.endswith(b"\n") else head + b"\n"
    cut = head.rfind(b"\n")
    return head[: cut + 1] if cut >= 0 else head


def _first_docids(head: bytes) -> list[tuple[int, str]]:
    """(line number, docid) of the first data lines; the format itself is the sniffer's job."""
    rows = []
    for lineno, raw in enumerate(head.split(b"\n"), start=1):
        text = raw.decode("utf-8", errors="replace").lstrip("\ufeff").strip()
        if not text or text.startswith("#"):
            continue
        parts = text.split()
        if len(parts) >= 3:
            rows.append((lineno, parts[2]))
        if len(rows) >= SNIFF_LINES:
            break
    return rows


def _check_docid_scheme(head: bytes, *, dataset: Dataset) -> None:
    """Refuse a run whose first docids are mostly unknown to the corpus: the id scheme is wrong."""
    corpus = corpus_ids_for(dataset=dataset)
    if corpus is None:
        return
    rows = _first_docids(head)
    if not rows:
        return
    unknown = [(line, docid) for line, docid in rows if docid not in corpus]
    if len(unknown) <= UNKNOWN_DOCID_SHARE * len(rows):
        return
    example = dataset.docid_example or "(see the dataset page)"
    details = [
        {"line": line, "reason": f"document id {docid[:60]!r} is not in the {dataset.name} corpus"}
        for line, docid in unknown[:5]
    ]
    raise UploadRefused(
        f"{len(unknown)} of the first {len(rows)} document ids are not in the {dataset.name} corpus: "
        f"the id scheme looks wrong. {dataset.name} uses ids like `{example}` in the third column.",
        details,
    )


def _check_prediction_head(head: bytes, *, dataset: Dataset) -> None:
    """Classification and NER uploads: the first lines must be JSONL predictions for the dataset's task."""

    problems = predictions_head_problems(head, task=dataset.task)
    if problems:
        count = f"{len(problems)} problems" if len(problems) > 1 else "a problem"
        raise UploadRefused(
            f"The first lines of the prediction file have {count} (listed with their line numbers). "
            f"Fix them and upload again; {dataset.name} takes one JSON object per line, e.g. "
            f"{EXAMPLES[dataset.task]}",
            problems_to_details(problems),
        )


def upload_inspect(*, upload: UploadedFile, dataset: Dataset) -> InspectedUpload:
    """Run the cheap checks on an upload; raise ``UploadRefused`` or describe the file.

    Size cap, gzip (by magic bytes) with a cap on the decompressed size, the
    first lines parse, and the docid scheme matches the dataset's corpus.
    """

    size = upload.size or 0
    limit = settings.LEXBOARD_MAX_UPLOAD_BYTES
    if size == 0:
        raise UploadRefused("The file is empty. Upload a TREC run: `qid Q0 docid rank score tag` per line.")
    if size > limit:
        raise UploadRefused(
            f"The file is {_human_bytes(size)}; the limit is {_human_bytes(limit)}. "
            "Compress it with gzip, or keep at most the dataset's depth of documents per query.",
            [{"line": None, "reason": f"file size {size} bytes exceeds {limit}"}],
        )
    upload.seek(0)
    compressed = upload.read(2) == GZIP_MAGIC
    head, total = _read_head_and_size(upload, compressed=compressed)
    if total == 0:
        raise UploadRefused("The file is empty once decompressed. Upload a TREC run.")
    if dataset.task != Dataset.Task.RETRIEVAL:
        _check_prediction_head(_complete_lines(head, whole=total <= len(head)), dataset=dataset)
    else:
        problems = sniff_run(_complete_lines(head, whole=total <= len(head)), n_lines=SNIFF_LINES)
        if problems:
            count = f"{len(problems)} problems" if len(problems) > 1 else "a problem"
            raise UploadRefused(
                f"The first lines of the run have {count} (listed with their line numbers). "
                "Fix them and upload again; a run has one line per document: qid Q0 docid rank score tag.",
                problems_to_details(problems),
            )
        _check_docid_scheme(head, dataset=dataset)

    digest = hashlib.sha256()
    for chunk in upload.chunks():
        digest.update(chunk)
    upload.seek(0)
    return InspectedUpload(size=size, sha256=digest.hexdigest(), compressed=compressed, decompressed_size=total)


def clean_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(metadata) - set(METADATA_FIELDS))
    if unknown:
        raise UploadRefused(
            f"Unknown field(s): {', '.join(unknown)}.",
            [{"line": None, "reason": f"{name}: not a submission field"} for name in unknown],
        )
    values = {name: metadata[name] for name in METADATA_FIELDS if name in metadata}
    for name in ("latency_ms", "llm_calls_per_query", "llm_tokens_per_query"):
        if values.get(name) == "":
            values[name] = None
    probe = Submission(**values)
    try:
        probe.full_clean(exclude=["user", "split", "run_file"], validate_unique=False, validate_constraints=False)
    except ValidationError as exc:
        details = [
            {"line": None, "reason": f"{field}: {' '.join(messages)}"}
            for field, messages in exc.message_dict.items()
        ]
        raise UploadRefused("Some fields are not valid: " + "; ".join(d["reason"] for d in details), details) from None
    return {name: getattr(probe, name) for name in values}


def _check_accepts(split: Split) -> None:
    if not split.accepts_submissions:
        raise UploadRefused(f"{split} does not accept submissions at the moment.")
    if split.current_qrels_id is None and not split.open_before_judgments:
        raise UploadRefused(
            f"{split} is not open for uploads yet: its relevance judgments are not published, so a run could "
            "not be scored. Come back when the dataset page shows a leaderboard for it."
        )


def _check_quota(*, user, split: Split) -> None:
    quota = submission_quota(user=user, split=split)
    if quota.allowed:
        return
    raise QuotaExceeded(quota.message, [{"line": None, "reason": quota.message}], retry_at=quota.next_allowed_at)

# --- creating submissions -----------------------------------------------------------


def submission_create(
    *,
    user,
    split: Split,
    upload: UploadedFile,
    metadata: dict[str, Any],
    is_baseline: bool = False,
    enqueue: bool = True,
    replaces: Submission | None = None,
) -> Submission:
    """Check an upload cheaply, then save it and a queued submission; score it after commit.

    Raises ``UploadRefused`` (nothing written) when the split is closed, the
    metadata is invalid, the quota is used up or the file is obviously wrong.
    """
    split = Split.objects.select_related("dataset").get(pk=split.pk)
    _check_accepts(split)
    values = clean_metadata(metadata)
    if not values.get("system_name"):
        raise UploadRefused("Give the system a name.", [{"line": None, "reason": "system_name: required"}])
    if not is_baseline:
        _check_quota(user=user, split=split)  # early, to spare a long check of a file that cannot be taken
        if refusal := storage_refusal(user=user, incoming_bytes=upload.size or 0):  # storage.py: bytes stored
            raise QuotaExceeded(refusal, [{"line": None, "reason": refusal}])
    inspected = upload_inspect(upload=upload, dataset=split.dataset)

    original_name = (getattr(upload, "name", "") or "run.txt").replace("\\", "/").rsplit("/", 1)[-1][:300]
    submission = Submission(
        user=user,
        split=split,
        is_baseline=is_baseline,
        replaces=replaces,
        original_name=original_name,
        file_size=inspected.size,
        sha256=inspected.sha256,
        **values,
    )
    # The file first, outside the transaction: copying a large file must not hold
    # the database's write lock (SQLite has one for everyone). Removed again if
    # the row is not saved.
    submission.run_file.save(original_name, upload, save=False)
    stored_name = submission.run_file.name
    try:
        with transaction.atomic():
            # Serialise one user's uploads so two parallel requests cannot both pass the quota.
            get_user_model().objects.select_for_update().filter(pk=user.pk).first()
            if not is_baseline:
                _check_quota(user=user, split=split)
            submission.save()
            if enqueue:
                submission_id = submission.pk
                transaction.on_commit(lambda: submission_enqueue(submission_id=submission_id))
    except BaseException:
        submission.run_file.storage.delete(stored_name)
        raise
    logger.info("submission %s created for %s by user %s", submission.pk, split, user.pk)
    return submission
