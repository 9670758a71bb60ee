"""Writes of the submissions side: upload, scoring, the life cycle and the sweep.

The database row is the record of the job and the broker only a doorbell:

* ``submission_create`` runs the cheap checks inside the request, saves the
  file and a queued row atomically, and rings the bell after commit. If the
  broker is down the upload is still accepted; the sweep rings again later.
* ``submission_score`` (called by the Celery task) claims the row with a
  conditional UPDATE, scores it with the metric core and stores the result and
  the new status in one transaction. A duplicated or redelivered message finds
  the row already claimed and does nothing.
* ``submissions_sweep`` (Celery beat) re-sends queued rows whose message was
  lost and requeues, or fails with a service error, rows whose worker went
  silent (its heartbeat is stale); it also finishes or re-sends rescorings.
* New judgments: ``split_qrels_publish`` stages a new qrels version when the
  split has scored submissions, ``submission_rescore_on`` (the
  ``rescore_submission`` task) stores each submission's result on it while
  the submission stays scored, and ``split_finish_rescoring`` switches the
  leaderboard in one UPDATE once all are there (details above those
  functions). Results are kept per qrels version: the old scores stay.

Quota: per user and split, ``Split.daily_limit`` submissions in any rolling
24 hours and ``Split.total_limit`` in total. Every submission counts, including
files that failed because of their content and withdrawn ones (otherwise
"submit, look, withdraw" would make a hidden split an oracle), except failures
caused by the service (``failure_kind == "service"``), files refused by the
cheap checks (nothing is written for them) and curators' baselines.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import logging
import threading
import time
import zlib
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from functools import lru_cache
from typing import Any

import numpy as np
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import UploadedFile
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone

from evaluation.errors import InputError, Problem, QrelsFormatError
from leaderboard.models import Corpus, Dataset, QrelsVersion, Split

from .errors import ActionRefused, QuotaExceeded, UploadRefused
from .fusion_service import FusionFailed, fused_run_ensure
from .models import Result, Submission
from .selectors import rescoring_targets, rescoring_waiting, submission_quota

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

#: Sending a message must not hold a web request for long when the broker is down.
SEND_RETRY_POLICY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5}


def _human_bytes(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} bytes"  # pragma: no cover


def _problems_to_details(problems: list[Problem]) -> list[dict]:
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
    from .scoring_tasks import EXAMPLES, predictions_head_problems

    problems = predictions_head_problems(head, task=dataset.task)
    if problems:
        count = f"{len(problems)} problems" if len(problems) > 1 else "a problem"
        raise UploadRefused(
            f"The first lines of the prediction file have {count} (listed with their line numbers). "
            f"Fix them and upload again; {dataset.name} takes one JSON object per line, e.g. "
            f"{EXAMPLES[dataset.task]}",
            _problems_to_details(problems),
        )


def upload_inspect(*, upload: UploadedFile, dataset: Dataset) -> InspectedUpload:
    """Run the cheap checks on an upload; raise ``UploadRefused`` or describe the file.

    Size cap, gzip (by magic bytes) with a cap on the decompressed size, the
    first lines parse, and the docid scheme matches the dataset's corpus.
    """
    from evaluation.runs import sniff_run

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
                _problems_to_details(problems),
            )
        _check_docid_scheme(head, dataset=dataset)

    digest = hashlib.sha256()
    for chunk in upload.chunks():
        digest.update(chunk)
    upload.seek(0)
    return InspectedUpload(size=size, sha256=digest.hexdigest(), compressed=compressed, decompressed_size=total)


def _clean_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
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
    values = _clean_metadata(metadata)
    if not values.get("system_name"):
        raise UploadRefused("Give the system a name.", [{"line": None, "reason": "system_name: required"}])
    if not is_baseline:
        _check_quota(user=user, split=split)  # early, to spare a long check of a file that cannot be taken
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


def submission_enqueue(*, submission_id: int, countdown: float | None = None) -> bool:
    """Ring the doorbell: send ``score_submission``. Never raises.

    When the broker cannot be reached the row stays queued with no
    ``enqueued_at`` and the sweep sends it again; the user loses nothing.
    """
    from evaluation.tasks import score_submission

    try:
        score_submission.apply_async(
            args=[submission_id], countdown=countdown, retry=True, retry_policy=SEND_RETRY_POLICY
        )
    except Exception:
        logger.warning("could not send submission %s to the broker; the sweep will resend it", submission_id,
                       exc_info=True)
        return False
    try:
        Submission.objects.filter(pk=submission_id, status=Submission.Status.QUEUED).update(
            enqueued_at=timezone.now()
        )
    except Exception:
        logger.warning("sent submission %s but could not record it", submission_id, exc_info=True)
    return True


def _enqueue_after_commit(submission_id: int, *, countdown: float | None = None) -> None:
    transaction.on_commit(lambda: submission_enqueue(submission_id=submission_id, countdown=countdown))


# --- metadata, visibility, withdrawal, resubmission -------------------------------------


def submission_update_metadata(*, submission: Submission, data: dict[str, Any]) -> Submission:
    """Change what the participant says about the system (not the file, not the scores)."""
    values = _clean_metadata(data)
    if "system_name" in values and not values["system_name"]:
        raise UploadRefused("Give the system a name.", [{"line": None, "reason": "system_name: required"}])
    for name, value in values.items():
        setattr(submission, name, value)
    submission.save(update_fields=[*values, "updated_at"])
    submission.split.bump_cache_version()
    return submission


def submission_set_visibility(*, submission: Submission, visibility: str) -> Submission:
    """Public, anonymous or private; the leaderboard follows at once."""
    if visibility not in Submission.Visibility.values:
        raise ActionRefused(f"Unknown visibility {visibility!r}; use one of {', '.join(Submission.Visibility.values)}.")
    Submission.objects.filter(pk=submission.pk).update(visibility=visibility, updated_at=timezone.now())
    submission.visibility = visibility
    submission.split.bump_cache_version()
    return submission


def submission_withdraw(*, submission: Submission) -> Submission:
    """Take a submission off the leaderboard for good; the file and scores stay for the record.

    A withdrawn submission still counts against the quota (see the module docstring).
    """
    updated = Submission.objects.filter(pk=submission.pk, withdrawn_at=None).update(
        withdrawn_at=timezone.now(), updated_at=timezone.now()
    )
    if not updated:
        raise ActionRefused("This submission is already withdrawn.")
    submission.refresh_from_db(fields=["withdrawn_at", "updated_at"])
    submission.split.bump_cache_version()
    return submission


def submission_resubmit(*, submission: Submission, upload: UploadedFile) -> Submission:
    """A corrected file as a new submission with the same metadata, linked to the old one."""
    if submission.withdrawn_at is not None:
        raise ActionRefused("This submission is withdrawn; make a new submission instead.")
    metadata = {name: getattr(submission, name) for name in METADATA_FIELDS}
    return submission_create(
        user=submission.user,
        split=submission.split,
        upload=upload,
        metadata=metadata,
        is_baseline=submission.is_baseline,
        replaces=submission,
    )


def submission_rescore(*, submission: Submission) -> bool:
    """Score one scored or failed submission again (a curator's action)."""
    with transaction.atomic():
        ok = submission.reset_for_rescore()
        if ok:
            _enqueue_after_commit(submission.pk)
    return ok


def split_rescore(*, split: Split) -> int:
    """Score the split's submissions again on its judgments; returns how many were sent or queued.

    While a published version is pending (:func:`split_qrels_publish`), this
    re-sends the rescoring tasks still missing (a duplicate is harmless) and
    the leaderboard keeps its current numbers. Otherwise it queues again the
    scored submissions that have no result on the current version: they are
    off the leaderboard anyway (e.g. after ``qrels_version_publish`` switched
    without rescoring). Failures of the service get another chance too;
    failures caused by the file do not (the file has not changed). Old results
    stay in each submission's history, keyed by their qrels version.
    """
    with transaction.atomic():
        current_id, pending_id = _lock_split(split.pk)
        count = _requeue_service_failures(split.pk)
        if pending_id is not None:
            missing = list(rescoring_waiting(split_id=split.pk, version_id=pending_id).values_list("pk", flat=True))
            _send_rescoring_after_commit(missing, pending_id, split_id=split.pk)
            count += len(missing)
        else:
            lacking = rescoring_targets(split_id=split.pk).exclude(
                Exists(Result.objects.filter(submission=OuterRef("pk"), qrels_version_id=current_id))
            )
            for submission in lacking:
                if submission.reset_for_rescore():
                    _enqueue_after_commit(submission.pk)
                    count += 1
        split.bump_cache_version()
    logger.info("rescoring %s submissions of %s", count, split)
    return count


# --- scoring -----------------------------------------------------------------------------


@lru_cache(maxsize=16)
def _qrels_cached(version_id: int, sha256: str, threshold: int):
    """Parsed qrels per (immutable) version: a worker parses each version once.

    The content hash is part of the key so that a reused id (a restored
    backup, a test database) can never serve another version's judgments.
    """
    from evaluation.qrels import read_qrels

    version = QrelsVersion.objects.only("qrels_gz", "split_id", "version").get(pk=version_id)
    return read_qrels(gzip.decompress(bytes(version.qrels_gz)), name=f"qrels v{version.version}", threshold=threshold)


@lru_cache(maxsize=8)
def _corpus_cached(corpus_id: int, sha256: str):
    """Corpus ids per content hash: a changed corpus has a new hash, hence a new entry."""
    from evaluation.corpus import CorpusIds

    corpus = Corpus.objects.only("ids_gz").get(pk=corpus_id)
    # The vectorized reader takes the stored gzip as it is: no list of millions of strings.
    return CorpusIds.read(bytes(corpus.ids_gz), name="corpus ids")


def corpus_ids_for(*, dataset: Dataset):
    """The dataset's corpus ids (cached per content), or None when no corpus was imported."""
    row = Corpus.objects.filter(dataset=dataset).only("pk", "sha256").first()
    if row is None:
        return None
    return _corpus_cached(row.pk, row.sha256)


class _Heartbeat(threading.Thread):
    """Tells the sweep, every few seconds, that the worker scoring a row is alive.

    A thread, not calls from the metric core, because parsing a large run can
    take longer than the staleness limit without any progress callback; if the
    process dies, so does the thread, and the heartbeat goes stale. It writes
    only while the row is still this attempt's (status and attempt number).
    """

    def __init__(self, submission_id: int, attempt: int):
        super().__init__(name=f"heartbeat-{submission_id}", daemon=True)
        self.submission_id = submission_id
        self.attempt = attempt
        self.progress = 0.0
        self.interval = max(1.0, min(5.0, settings.LEXBOARD_HEARTBEAT_STALE_SECONDS / 4))
        self._stopped = threading.Event()

    def run(self) -> None:
        try:
            while not self._stopped.wait(self.interval):
                Submission.objects.filter(
                    pk=self.submission_id, status=Submission.Status.SCORING, attempts=self.attempt
                ).update(heartbeat_at=timezone.now(), progress=round(self.progress, 4))
        except Exception:
            logger.warning("heartbeat of submission %s stopped", self.submission_id, exc_info=True)
        finally:
            connection.close()

    def stop(self) -> None:
        self._stopped.set()


@contextmanager
def _open_run(submission: Submission):
    """The stored run file as a binary stream (the core gunzips it by its magic bytes)."""
    fh = submission.run_file.open("rb")
    try:
        yield fh
    finally:
        fh.close()


def per_query_pack(evaluation, measures: list[str]) -> bytes:
    """The per-query vectors as compressed npz bytes (see ``selectors.load_per_query``).

    Arrays aligned with ``qids``: one per measure, ``n_relevant``,
    ``first_relevant_rank``, ``judged_at_10``; plus ``rel_ranks`` /
    ``rel_offsets`` (the ranks of the relevant documents found, per query) and
    ``recall_curve`` (mean R@k for k = 1..depth) for the analyses.
    """
    from evaluation.scoring import recall_curve

    arrays: dict[str, np.ndarray] = {"qids": np.asarray(list(evaluation.qids), dtype=str)}
    for name in measures:
        arrays[name] = np.asarray(evaluation.per_query[name], dtype=np.float64)
    for name in ("n_relevant", "first_relevant_rank", "judged_at_10", "rel_ranks", "rel_offsets"):
        value = getattr(evaluation, name, None)
        if value is not None:
            arrays[name] = np.asarray(value)
    arrays["recall_curve"] = np.asarray(recall_curve(evaluation), dtype=np.float64)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return buffer.getvalue()


def _locked_attempt(submission_id: int, attempt: int) -> Submission | None:
    """The row, locked, if it is still in scoring by this attempt; else None (someone else has it)."""
    return (
        Submission.objects.select_for_update()
        .filter(pk=submission_id, status=Submission.Status.SCORING, attempts=attempt)
        .first()
    )


def _fail(submission_id: int, attempt: int, *, kind: str, message: str, details: list[dict] | None = None) -> None:
    with transaction.atomic():
        row = _locked_attempt(submission_id, attempt)
        if row is not None:
            row.mark_failed(kind=kind, message=message, details=details)


def _retry_or_fail(submission_id: int, attempt: int, *, reason: str) -> None:
    """After our own error: queue again with a delay, or give up as a service failure."""
    with transaction.atomic():
        row = _locked_attempt(submission_id, attempt)
        if row is None:
            return
        if row.attempts < settings.LEXBOARD_MAX_SCORING_ATTEMPTS:
            if row.requeue(message=f"attempt {row.attempts} failed on our side; trying again"):
                _enqueue_after_commit(row.pk, countdown=min(300, 10 * 2 ** (row.attempts - 1)))
        else:
            row.mark_failed(
                kind=Submission.FailureKind.SERVICE,
                message=(
                    f"Scoring failed on our side after {row.attempts} attempts ({reason}). "
                    "This does not count against your quota; the curators have been told, "
                    "and you may resubmit the same file."
                ),
            )


def _input_error_message(exc: InputError, *, task: str = Dataset.Task.RETRIEVAL) -> str:
    """The first problem of a refused run (or prediction file) with its line, for the failure message."""
    problems = exc.problems
    first = problems[0] if problems else None
    where = (f"line {first.line}: " if first and first.line is not None else "") + (first.reason if first else "")
    more = f" (and {len(problems) - 1} more problem(s) listed below)" if len(problems) > 1 else ""
    what = "run file" if task == Dataset.Task.RETRIEVAL else "predictions file"
    return f"The {what} cannot be scored: {where}{more}. Fix the file and resubmit it."


def submission_score(submission_id: int, *, progress: Callable[[float], None] | None = None) -> None:
    """Score one submission if it is queued: claim, evaluate, store the result and mark it scored.

    Safe to call twice or concurrently: only the caller whose claim succeeds
    scores, and the result is stored once per (submission, qrels version).
    While a new qrels version is pending, the run is scored on it too, so a
    submission scored during a rescoring never holds up the switch.
    """
    submission = Submission.objects.select_related("split__dataset").filter(pk=submission_id).first()
    if submission is None:
        logger.warning("submission %s does not exist (deleted?); nothing to score", submission_id)
        return
    if not submission.claim():
        logger.info("submission %s is not queued (status %s); someone else has it", submission_id,
                    submission.status)
        return
    attempt = submission.attempts
    heartbeat = _Heartbeat(submission.pk, attempt)
    heartbeat.start()
    try:
        _score_claimed(submission, attempt, heartbeat, progress)
    except FusionFailed as exc:  # a part of a fusion cannot be read: ours, not the user's
        _fail(submission.pk, attempt, kind=Submission.FailureKind.SERVICE, message=exc.message)
    except QrelsFormatError:
        logger.exception("the qrels of %s cannot be read", submission.split)
        _fail(submission.pk, attempt, kind=Submission.FailureKind.SERVICE,
              message="The split's relevance judgments cannot be read. This is our fault and does not count "
                      "against your quota; the curators have been told.")
    except InputError as exc:
        _fail(
            submission.pk,
            attempt,
            kind=Submission.FailureKind.INPUT,
            message=_input_error_message(exc, task=submission.split.dataset.task),
            details=_problems_to_details(exc.problems),
        )
    except Exception as exc:  # our fault (or the time limit): retry, then give up without counting it
        logger.exception("scoring submission %s failed (attempt %s)", submission_id, attempt)
        _retry_or_fail(submission.pk, attempt, reason=type(exc).__name__)
    finally:
        heartbeat.stop()


@dataclass(frozen=True)
class ComputedResult:
    """The scores of one run on one qrels version, computed and not stored yet.

    ``failed`` marks a rescoring that could not be done (see
    :func:`submission_rescore_on`): no scores, the reason in ``warnings``.
    """

    version_id: int
    scores: dict[str, float]
    primary_score: float | None
    n_queries: int
    per_query: bytes
    warnings: list[dict]
    duration_seconds: float
    failed: bool = False


#: The warning code of a failure marker: a rescoring on a pending version that could not be done.
RESCORING_FAILED = "rescoring_failed"


def _read_stored_run(submission: Submission):
    """Parse the stored run file (the caps of the settings apply; errors are ``InputError``).

    For classification and NER datasets, the prediction file's bytes
    (parsed against the gold by :func:`result_compute`). A fusion whose
    fused run was not written yet gets it written first, here in the worker
    (:func:`fusion_service.fused_run_ensure`; ``FusionFailed`` when a part
    cannot be read).
    """
    from evaluation.runs import read_run

    if submission.fusion_params and not submission.run_file:
        fused_run_ensure(submission=submission)
    if submission.split.dataset.task != Dataset.Task.RETRIEVAL:
        return _read_stored_predictions(submission)

    with _open_run(submission) as fh:
        return read_run(
            fh,
            name=submission.original_name or "run",
            max_lines=settings.LEXBOARD_MAX_RUN_LINES,
            max_bytes=settings.LEXBOARD_MAX_DECOMPRESSED_BYTES,
        )


def _read_stored_predictions(submission: Submission) -> bytes:
    from .scoring_tasks import read_stored_predictions

    with _open_run(submission) as fh:
        return read_stored_predictions(fh, max_bytes=settings.LEXBOARD_MAX_DECOMPRESSED_BYTES)


def _result_compute_for_task(*, dataset: Dataset, version: QrelsVersion, data: bytes, name: str,
                             hidden: bool) -> ComputedResult:
    """Classification and NER: macro-F1 of a prediction file on one gold version (``scoring_tasks``)."""
    from .scoring_tasks import score_for_task

    started = time.monotonic()
    task = score_for_task(dataset=dataset, version=version, data=data, name=name, hidden=hidden)
    return ComputedResult(
        version_id=version.pk,
        scores=task.scores,
        primary_score=task.scores.get(dataset.primary_measure),
        n_queries=task.n_examples,
        per_query=task.per_query,
        warnings=task.warnings,
        duration_seconds=time.monotonic() - started,
    )


def result_compute(*, dataset: Dataset, version: QrelsVersion, run,
                   progress: Callable[..., None] | None = None) -> ComputedResult:
    """Score a parsed run on one qrels version with the dataset's measures, depth and corpus.

    The one path for first scoring and rescoring, so a result on a new
    version is computed exactly like the first one. ``version`` may come
    without its ``qrels_gz`` blob: qrels are parsed once per version and
    content hash (:func:`_qrels_cached`).
    """
    from evaluation.measures import parse_measure
    from evaluation.scoring import evaluate

    if dataset.task != Dataset.Task.RETRIEVAL:  # ``run`` is a prediction file's bytes (``_read_stored_run``)
        hidden = Split.objects.filter(pk=version.split_id).values_list("hidden", flat=True).first()
        return _result_compute_for_task(dataset=dataset, version=version, data=run, name="predictions",
                                        hidden=hidden is not False)
    started = time.monotonic()
    qrels = _qrels_cached(version.pk, version.sha256, dataset.relevance_threshold)
    measures = [parse_measure(name) for name in dataset.measures]
    evaluation = evaluate(
        qrels,
        run,
        measures,
        depth=dataset.depth,
        corpus=corpus_ids_for(dataset=dataset),
        docid_example=dataset.docid_example or None,
        progress=progress,
    )
    names = [m.name for m in measures]
    scores = {name: float(evaluation.means[name]) for name in names}
    return ComputedResult(
        version_id=version.pk,
        scores=scores,
        primary_score=scores.get(dataset.primary_measure),
        n_queries=len(evaluation.qids),
        per_query=per_query_pack(evaluation, names),
        warnings=[w.to_dict() for w in evaluation.warnings],
        duration_seconds=time.monotonic() - started,
    )


def result_store(*, submission: Submission, computed: ComputedResult) -> Result:
    """Store the result of ``submission`` on ``computed``'s version: one row per (submission, version).

    ``update_or_create`` on the unique pair, so a redelivered or repeated
    scoring replaces its own row and never adds a second one.
    """
    result, _ = Result.objects.update_or_create(
        submission=submission,
        qrels_version_id=computed.version_id,
        defaults={
            "scores": computed.scores,
            "primary_score": computed.primary_score,
            "n_queries": computed.n_queries,
            "per_query": computed.per_query,
            "warnings": computed.warnings,
            "duration_seconds": computed.duration_seconds,
        },
    )
    return result


def _failure_marker(version: QrelsVersion, exc: Exception | None, *, task: str = Dataset.Task.RETRIEVAL,
                    reason: str = "") -> ComputedResult:
    """What is stored when a run cannot be scored on a pending version: the reason, no scores.

    The reason is ``reason`` when given, else said from the exception ``exc``.
    """
    if not reason:
        if isinstance(exc, QrelsFormatError):
            reason = f"the judgments of qrels v{version.version} cannot be read"
        elif isinstance(exc, InputError):
            reason = _input_error_message(exc, task=task)
        else:
            reason = f"scoring on qrels v{version.version} failed on our side ({type(exc).__name__})"
    return ComputedResult(
        version_id=version.pk, scores={}, primary_score=None, n_queries=0, per_query=b"",
        warnings=[{"code": RESCORING_FAILED, "message": reason, "count": 1}], duration_seconds=0.0, failed=True,
    )


def is_failure_marker(result: Result) -> bool:
    """True for the stored trace of a rescoring that could not be done (no scores, the reason)."""
    return not result.scores and any(w.get("code") == RESCORING_FAILED for w in (result.warnings or []))


def _lock_split(split_id: int) -> tuple[int | None, int | None]:
    """Lock the split row; its (current, pending) qrels version ids.

    Every transaction that stores results or switches versions takes this
    lock first (then submission rows), so the switch and a store never
    interleave and the lock order is always the same.
    """
    return (
        Split.objects.select_for_update()
        .filter(pk=split_id)
        .values_list("current_qrels_id", "pending_qrels_id")
        .get()
    )


def _score_claimed(submission: Submission, attempt: int, heartbeat: _Heartbeat,
                   progress: Callable[[float], None] | None) -> None:
    started = time.monotonic()
    split = (
        Split.objects.select_related("dataset", "current_qrels", "pending_qrels")
        # parsed once per version by _qrels_cached, not read every time
        .defer("current_qrels__qrels_gz", "pending_qrels__qrels_gz")
        .get(pk=submission.split_id)
    )
    dataset = split.dataset
    version = split.current_qrels
    if version is None:
        _fail(submission.pk, attempt, kind=Submission.FailureKind.SERVICE,
              message="This split has no published relevance judgments yet. It will be scored when the "
                      "curators publish them; this does not count against your quota.")
        return

    def report(fraction: float, *_: Any) -> None:
        heartbeat.progress = float(fraction)
        if progress is not None:
            progress(float(fraction))

    pending = split.pending_qrels if split.pending_qrels_id not in (None, version.pk) else None
    share = 0.6 if pending is None else 0.3
    run = _read_stored_run(submission)
    report(0.3)
    current = result_compute(
        dataset=dataset, version=version, run=run, progress=lambda f, *rest: report(0.3 + share * float(f))
    )
    computed = [dataclasses.replace(current, duration_seconds=time.monotonic() - started)]
    if pending is not None:
        # Scored on the version waiting to be published as well, so that this
        # submission does not hold up the switch.
        try:
            computed.append(result_compute(
                dataset=dataset, version=pending, run=run, progress=lambda f, *rest: report(0.6 + 0.3 * float(f))
            ))
        except (OperationalError, InterfaceError):
            raise
        except Exception as exc:
            logger.warning("submission %s cannot be scored on pending %s", submission.pk, pending, exc_info=True)
            computed.append(_failure_marker(pending, exc, task=dataset.task))
    report(0.95)

    with transaction.atomic():
        current_id, pending_id = _lock_split(split.pk)
        row = _locked_attempt(submission.pk, attempt)
        if row is None:
            logger.info("submission %s was taken from this worker while scoring; result dropped", submission.pk)
            return
        by_version = {c.version_id: c for c in computed}
        for c in computed:
            if not c.failed or c.version_id == pending_id:  # a failure marker only for a version still pending
                result_store(submission=row, computed=c)
        on_current = by_version.get(current_id)
        if on_current is None or on_current.failed:
            # New judgments were published while we scored: keep these results as history, score again.
            if row.requeue(message="new relevance judgments were published while scoring; scoring again"):
                _enqueue_after_commit(row.pk)
        else:
            row.mark_scored(warnings=on_current.warnings)
            if pending_id is not None and pending_id not in by_version:
                # Published after this scoring started: the rescoring waits for this one too.
                _send_rescoring_after_commit([row.pk], pending_id)
        split.bump_cache_version()
        # Again once committed: a page rendered between the bump above and the commit
        # (still without this result) must not stay cached under the new key.
        _bump_caches_after_commit(split)
    if pending_id is not None:
        split_finish_rescoring(split=split)
    logger.info("submission %s scored in %.2fs: %s", submission.pk, time.monotonic() - started, current.scores)


def submission_score_now(submission_id: int) -> Submission:
    """Score synchronously, in this process (the demo loader's baselines; no worker needed)."""
    submission_score(submission_id)
    return Submission.objects.get(pk=submission_id)


# --- new judgments: staged publication, rescoring, the switch -------------------------------
#
# Publishing a new qrels version on a split that has scored submissions stages
# it (``Split.pending_qrels``) and sends one ``rescore_submission`` task per
# scored submission. The submissions stay "scored" and the leaderboard keeps
# showing the current version's results. Each rescoring stores a Result for
# the pending version (unique per submission and version) and asks
# ``split_finish_rescoring`` whether every scored, non-withdrawn submission
# now has one; the first time the answer is yes, one UPDATE of the split row
# makes the pending version current, so every row of the leaderboard changes
# version at the same moment. A run that cannot be scored on the new version
# leaves a failure marker (a Result without scores, the reason in its
# warnings) instead of holding up the switch forever; at the switch the
# marker is removed and the submission is queued again, so the ordinary
# scoring path retries it and, if it fails again, records the failure on the
# submission itself.


@dataclass(frozen=True)
class PublishOutcome:
    """What publishing a qrels version did: switched at once, or staged with rescorings started."""

    switched: bool
    rescoring: int = 0  # rescoring tasks sent for the pending version
    requeued: int = 0  # failures of the service queued again


def _requeue_service_failures(split_id: int) -> int:
    """Give failures of ours another chance on new judgments (the file's own failures stay)."""
    count = 0
    failed = Submission.objects.filter(
        split_id=split_id, status=Submission.Status.FAILED, failure_kind=Submission.FailureKind.SERVICE,
        withdrawn_at__isnull=True,
    )
    for submission in failed:
        if submission.reset_for_rescore():
            _enqueue_after_commit(submission.pk)
            count += 1
    return count


def _rescoring_key(kind: str, *ids: int) -> str:
    """A cache key for rescoring bookkeeping, scoped to this database.

    Row ids repeat from one database to another (e.g. test sessions sharing
    one Redis), so the database's name is part of the key.
    """
    scope = hashlib.sha256(str(connection.settings_dict.get("NAME", "")).encode()).hexdigest()[:12]
    return f"lexboard:rescoring-{kind}:{scope}:" + ":".join(str(i) for i in ids)


def _rescoring_sent_key(split_id: int, version_id: int) -> str:
    return _rescoring_key("sent", split_id, version_id)


def _send_rescoring(submission_ids: list[int], version_id: int, *, split_id: int | None = None,
                    now=None) -> int:
    """Ring the doorbell once per submission; never raises.

    Stops at the first broker error rather than waiting on each of a
    thousand sends: the sweep sends the missing ones again later. With
    ``split_id`` (a whole split's batch), a successful send is remembered for
    ``split_rescoring_resend``, which waits a while before sending again.
    """
    from evaluation.tasks import rescore_submission

    sent = 0
    for submission_id in submission_ids:
        try:
            rescore_submission.apply_async(
                args=[submission_id, version_id], retry=True, retry_policy=SEND_RETRY_POLICY
            )
        except Exception:
            logger.warning("could not send the rescoring of submission %s; the sweep will resend it",
                           submission_id, exc_info=True)
            break
        sent += 1
    if sent and split_id is not None:
        window = settings.LEXBOARD_QUEUED_RESEND_SECONDS
        cache.set(_rescoring_sent_key(split_id, version_id), (now or timezone.now()).timestamp(), window)
    return sent


def _send_rescoring_after_commit(submission_ids: list[int], version_id: int, *, split_id: int | None = None) -> None:
    if submission_ids:
        ids = list(submission_ids)
        transaction.on_commit(lambda: _send_rescoring(ids, version_id, split_id=split_id))


def _drop_failure_markers(version_id: int) -> list[Result]:
    """Delete the failure markers on ``version_id``; returns them (they never outlive the pending state)."""
    markers = [
        r for r in Result.objects.filter(qrels_version_id=version_id, primary_score__isnull=True).defer("per_query")
        if is_failure_marker(r)
    ]
    if markers:
        Result.objects.filter(pk__in=[r.pk for r in markers]).delete()
    return markers


def _bump_caches_after_commit(split: Split) -> None:
    """Once the switch is visible, make every cached page stale again.

    The switch's UPDATE already changes the leaderboard rows' cache key; this
    also moves the whole-page cache on (``Split.bump_cache_version`` does both),
    after commit so that a page rendered from the old version in between
    cannot be cached under the new key.
    """
    split_id = split.pk
    transaction.on_commit(lambda: Split(pk=split_id).bump_cache_version(), robust=True)


def split_qrels_publish(*, split: Split, version: QrelsVersion) -> PublishOutcome:
    """Publish ``version`` of the split's judgments, the curator's way.

    With no scored submission on the split, the version becomes current at
    once. Otherwise it is staged as ``pending_qrels`` and every scored
    submission without a result on it is sent for rescoring (after commit,
    so a rolled-back import sends nothing); the leaderboard switches when
    the last one is stored (:func:`split_finish_rescoring`). Publishing the
    current version again cancels a pending one; publishing another version
    while one is pending replaces it. Failures of the service are queued
    again either way.
    """
    if version.split_id != split.pk:
        raise ValueError(f"{version} is not a version of {split}'s judgments.")
    with transaction.atomic():
        current_id, pending_id = _lock_split(split.pk)
        requeued = _requeue_service_failures(split.pk)
        if pending_id is not None and pending_id != version.pk:
            _drop_failure_markers(pending_id)  # that version will never be switched to
        if current_id == version.pk:
            Split.objects.filter(pk=split.pk).update(pending_qrels=None)
            _bump_caches_after_commit(split)  # pages stop saying "rescoring in progress"
            outcome = PublishOutcome(switched=True, requeued=requeued)
        elif not rescoring_targets(split_id=split.pk).exists():
            Split.objects.filter(pk=split.pk).update(
                current_qrels=version, pending_qrels=None, cache_version=F("cache_version") + 1
            )
            _bump_caches_after_commit(split)
            outcome = PublishOutcome(switched=True, requeued=requeued)
        else:
            Split.objects.filter(pk=split.pk).update(pending_qrels=version)
            _bump_caches_after_commit(split)  # pages say "rescoring in progress" at once
            missing = list(rescoring_waiting(split_id=split.pk, version_id=version.pk).values_list("pk", flat=True))
            _send_rescoring_after_commit(missing, version.pk, split_id=split.pk)
            # Nothing missing (back to a version everyone was scored on): switch now.
            switched = not missing and split_finish_rescoring(split=split)
            outcome = PublishOutcome(switched=switched, rescoring=len(missing), requeued=requeued)
    split.refresh_from_db(fields=["current_qrels", "pending_qrels", "cache_version"])
    logger.info("%s published on %s: %s", version, split, outcome)
    return outcome


def split_finish_rescoring(*, split: Split) -> bool:
    """Make the pending qrels current if every scored submission has a result on them; True if it did.

    Called after each stored rescoring and by the sweep; cheap when there is
    nothing to do. The check and the switch happen under the split's row
    lock, and the switch is one UPDATE of the split (current, pending and the
    cache version together): readers see either every row on the old
    version or every row on the new one. Submissions whose rescoring failed
    lose their marker and are queued again in the same transaction (the
    ordinary scoring path retries them and records a failure on the
    submission). The submissions' warnings follow their new results.
    """
    with transaction.atomic():
        _, pending_id = _lock_split(split.pk)
        if pending_id is None or rescoring_waiting(split_id=split.pk, version_id=pending_id).exists():
            return False
        Split.objects.filter(pk=split.pk).update(
            current_qrels_id=pending_id, pending_qrels=None, cache_version=F("cache_version") + 1
        )
        _bump_caches_after_commit(split)
        failed = {m.submission_id: m for m in _drop_failure_markers(pending_id)}
        for submission in Submission.objects.filter(pk__in=list(failed), status=Submission.Status.SCORED):
            if submission.reset_for_rescore():
                _enqueue_after_commit(submission.pk)
        new_warnings = dict(
            Result.objects.filter(qrels_version_id=pending_id, submission__status=Submission.Status.SCORED)
            .values_list("submission_id", "warnings")
        )
        for submission_id, old in Submission.objects.filter(pk__in=list(new_warnings)).values_list("pk", "warnings"):
            if old != new_warnings[submission_id]:
                Submission.objects.filter(pk=submission_id).update(warnings=new_warnings[submission_id])
    split.refresh_from_db(fields=["current_qrels", "pending_qrels", "cache_version"])
    logger.info("%s now shows qrels version id %s (%s rescorings failed and were queued again)",
                split, pending_id, len(failed))
    return True


def submission_rescore_on(*, submission_id: int, qrels_version_id: int) -> str:
    """Score a scored submission on another qrels version of its split (the pending one); idempotent.

    Returns ``"stored"``, ``"failed"`` (a failure marker was stored),
    ``"exists"`` (a result is already there: a redelivered message) or
    ``"skipped"`` (the submission is gone, withdrawn or not scored — queued
    ones are scored on the pending version by their own scoring — or the
    version was superseded). The submission's status does not change, so
    the leaderboard keeps showing it on the current version meanwhile.
    Transient database errors propagate (the task retries them); any other
    error stores a failure marker so that the switch is not held up.
    """
    submission = Submission.objects.select_related("split__dataset").filter(pk=submission_id).first()
    if submission is None:
        return "skipped"
    split = submission.split
    if Result.objects.filter(submission_id=submission_id, qrels_version_id=qrels_version_id).exists():
        split_finish_rescoring(split=split)  # a redelivery after a crash between storing and finishing
        return "exists"
    if qrels_version_id not in (split.current_qrels_id, split.pending_qrels_id):
        return "skipped"
    if submission.status != Submission.Status.SCORED or submission.withdrawn_at is not None:
        return "skipped"
    version = QrelsVersion.objects.defer("qrels_gz").get(pk=qrels_version_id)
    attempt = _rescoring_attempt(submission_id, qrels_version_id)
    if attempt > settings.LEXBOARD_MAX_SCORING_ATTEMPTS:
        # Earlier attempts never came back (the worker was killed: memory, hard time limit).
        logger.error("giving up rescoring submission %s on %s after %s attempts", submission_id, version, attempt - 1)
        computed = _failure_marker(
            version, None, reason=f"the worker rescoring it on qrels v{version.version} stopped {attempt - 1} times"
        )
    else:
        try:
            computed = result_compute(dataset=split.dataset, version=version, run=_read_stored_run(submission))
        except (OperationalError, InterfaceError):
            raise
        except Exception as exc:
            logger.warning("submission %s cannot be rescored on %s", submission_id, version, exc_info=True)
            computed = _failure_marker(version, exc, task=split.dataset.task)

    with transaction.atomic():
        current_id, pending_id = _lock_split(split.pk)
        row = Submission.objects.filter(pk=submission_id).first()
        if row is None or row.status != Submission.Status.SCORED or qrels_version_id not in (current_id, pending_id):
            return "skipped"
        if Result.objects.filter(submission=row, qrels_version_id=qrels_version_id).exists():
            return "exists"
        if qrels_version_id == current_id:
            # The split switched while this ran (or the result was missing on the current version).
            if computed.failed:
                if row.reset_for_rescore():
                    _enqueue_after_commit(row.pk)
                return "failed"
            result_store(submission=row, computed=computed)
            _bump_caches_after_commit(split)
            return "stored"
        result_store(submission=row, computed=computed)
    split_finish_rescoring(split=split)
    return "failed" if computed.failed else "stored"


def _rescoring_attempt(submission_id: int, version_id: int) -> int:
    """Count an attempt at rescoring (submission, version); returns its number.

    A run that kills its worker (memory, the hard time limit) would otherwise
    be re-sent forever and hold up the switch. Kept in the cache (Redis in a
    deployment, shared by the workers) for a week: there is no row to keep it
    in, as the submission itself stays scored meanwhile.
    """
    key = _rescoring_key("attempts", submission_id, version_id)
    week = 7 * 24 * 3600
    cache.add(key, 0, week)
    try:
        return cache.incr(key)
    except ValueError:  # evicted between add and incr
        cache.set(key, 1, week)
        return 1


def split_rescoring_resend(*, split: Split, now=None) -> int:
    """Send again the rescorings still missing on the pending version if they seem lost; returns how many.

    "Lost" means: no result on the pending version was stored, and no batch
    was sent successfully, for ``LEXBOARD_QUEUED_RESEND_SECONDS`` (so a
    publication made while the broker was down is sent at the next sweep). While the workers make
    progress nothing is re-sent, so a long rescoring does not fill the queue
    with duplicates (which would be harmless, only wasteful).
    """
    now = now or timezone.now()
    split = Split.objects.get(pk=split.pk)
    pending_id = split.pending_qrels_id
    if pending_id is None:
        return 0
    window = settings.LEXBOARD_QUEUED_RESEND_SECONDS
    key = _rescoring_sent_key(split.pk, pending_id)
    last_sent = cache.get(key)
    if last_sent is not None and now.timestamp() - last_sent < window:
        return 0
    recent = Result.objects.filter(
        qrels_version_id=pending_id, submission__split_id=split.pk, created_at__gte=now - timedelta(seconds=window)
    )
    if recent.exists():
        return 0
    missing = list(rescoring_waiting(split_id=split.pk, version_id=pending_id).values_list("pk", flat=True))
    return _send_rescoring(missing, pending_id, split_id=split.pk, now=now)


# --- the sweep -----------------------------------------------------------------------------


def submissions_sweep(*, now=None) -> dict[str, int]:
    """Repair what a lost message or a dead worker left behind; run by Celery beat.

    * queued rows never sent (``enqueued_at`` null, older than a short grace)
      or sent more than ``LEXBOARD_QUEUED_RESEND_SECONDS`` ago are sent again
      (a duplicate message is harmless: only one claim succeeds);
    * scoring rows whose heartbeat is older than
      ``LEXBOARD_HEARTBEAT_STALE_SECONDS`` are requeued and sent, or failed
      with a service error once ``LEXBOARD_MAX_SCORING_ATTEMPTS`` is reached.

    * splits with a pending qrels version are switched when every scored
      submission has a result on it (e.g. the last missing one was
      withdrawn), else their missing rescorings are re-sent when no progress
      was made for ``LEXBOARD_QUEUED_RESEND_SECONDS`` (``split_rescoring_resend``).

    So a submission whose worker was killed is scored again within about
    stale + sweep interval seconds (3 minutes with the defaults).
    """
    now = now or timezone.now()
    resend_before = now - timedelta(seconds=settings.LEXBOARD_QUEUED_RESEND_SECONDS)
    grace_before = now - timedelta(seconds=min(30, settings.LEXBOARD_QUEUED_RESEND_SECONDS))
    stale_before = now - timedelta(seconds=settings.LEXBOARD_HEARTBEAT_STALE_SECONDS)
    counts = {"resent": 0, "requeued": 0, "failed": 0}

    lost = Submission.objects.filter(status=Submission.Status.QUEUED).filter(
        Q(enqueued_at__isnull=True, updated_at__lt=grace_before) | Q(enqueued_at__lt=resend_before)
    )
    for submission_id in lost.values_list("pk", flat=True):
        if submission_enqueue(submission_id=submission_id):
            counts["resent"] += 1

    stale = Submission.objects.filter(status=Submission.Status.SCORING).filter(
        Q(heartbeat_at__lt=stale_before) | Q(heartbeat_at__isnull=True, updated_at__lt=stale_before)
    )
    for submission_id in stale.values_list("pk", flat=True):
        with transaction.atomic():
            row = (
                Submission.objects.select_for_update()
                .filter(pk=submission_id, status=Submission.Status.SCORING)
                .filter(Q(heartbeat_at__lt=stale_before) | Q(heartbeat_at__isnull=True))
                .first()
            )
            if row is None:
                continue
            if row.attempts >= settings.LEXBOARD_MAX_SCORING_ATTEMPTS:
                row.mark_failed(
                    kind=Submission.FailureKind.SERVICE,
                    message=(
                        f"The worker scoring this submission stopped answering {row.attempts} times. "
                        "This is our fault and does not count against your quota; you may resubmit."
                    ),
                )
                counts["failed"] += 1
            elif row.requeue(message="the worker scoring it went silent; queued again"):
                _enqueue_after_commit(row.pk)
                counts["requeued"] += 1

    # Splits waiting for a rescoring: switch the ones that are done (e.g. after
    # a withdrawal), re-send what looks lost. Counted only when something happened.
    for split in Split.objects.filter(pending_qrels__isnull=False):
        if split_finish_rescoring(split=split):
            counts["switched"] = counts.get("switched", 0) + 1
        else:
            resent = split_rescoring_resend(split=split, now=now)
            if resent:
                counts["rescoring_resent"] = counts.get("rescoring_resent", 0) + resent
    if any(counts.values()):
        logger.info("sweep: %s", counts)
    return counts
