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
  silent (its heartbeat is stale).

Quota: per user and split, ``Split.daily_limit`` submissions in any rolling
24 hours and ``Split.total_limit`` in total. Every submission counts, including
files that failed because of their content and withdrawn ones (otherwise
"submit, look, withdraw" would make a hidden split an oracle), except failures
caused by the service (``failure_kind == "service"``), files refused by the
cheap checks (nothing is written for them) and curators' baselines.
"""

from __future__ import annotations

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
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import UploadedFile
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from evaluation.errors import InputError, Problem, QrelsFormatError
from leaderboard.models import Corpus, Dataset, QrelsVersion, Split

from .errors import ActionRefused, QuotaExceeded, UploadRefused
from .models import Result, Submission
from .selectors import submission_quota

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
    if split.dataset.task != Dataset.Task.RETRIEVAL:
        raise UploadRefused(f"{split.dataset.name} is not a retrieval dataset; it does not take TREC runs.")


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
    """Queue every scored submission of the split again, e.g. after new qrels are published.

    Failures of the service get another chance too; failures caused by the
    file do not (the file has not changed). Old results stay in each
    submission's history, keyed by their qrels version. Returns the count.
    """
    ids = list(
        Submission.objects.filter(split=split)
        .filter(Q(status=Submission.Status.SCORED) | Q(status=Submission.Status.FAILED,
                                                     failure_kind=Submission.FailureKind.SERVICE))
        .values_list("pk", flat=True)
    )
    count = 0
    with transaction.atomic():
        for submission in Submission.objects.filter(pk__in=ids):
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
    return CorpusIds.from_iterable(corpus.ids())


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


def submission_score(submission_id: int, *, progress: Callable[[float], None] | None = None) -> None:
    """Score one submission if it is queued: claim, evaluate, store the result and mark it scored.

    Safe to call twice or concurrently: only the caller whose claim succeeds
    scores, and the result is stored once per (submission, qrels version).
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
    except QrelsFormatError:
        logger.exception("the qrels of %s cannot be read", submission.split)
        _fail(submission.pk, attempt, kind=Submission.FailureKind.SERVICE,
              message="The split's relevance judgments cannot be read. This is our fault and does not count "
                      "against your quota; the curators have been told.")
    except InputError as exc:
        problems = exc.problems
        first = problems[0] if problems else None
        where = (f"line {first.line}: " if first and first.line is not None else "") + (first.reason if first else "")
        more = f" (and {len(problems) - 1} more problem(s) listed below)" if len(problems) > 1 else ""
        _fail(
            submission.pk,
            attempt,
            kind=Submission.FailureKind.INPUT,
            message=f"The run file cannot be scored: {where}{more}. Fix the file and resubmit it.",
            details=_problems_to_details(problems),
        )
    except Exception as exc:  # our fault (or the time limit): retry, then give up without counting it
        logger.exception("scoring submission %s failed (attempt %s)", submission_id, attempt)
        _retry_or_fail(submission.pk, attempt, reason=type(exc).__name__)
    finally:
        heartbeat.stop()


def _score_claimed(submission: Submission, attempt: int, heartbeat: _Heartbeat,
                   progress: Callable[[float], None] | None) -> None:
    from evaluation.measures import parse_measure
    from evaluation.runs import read_run
    from evaluation.scoring import evaluate

    started = time.monotonic()
    split = (
        Split.objects.select_related("dataset", "current_qrels")
        .defer("current_qrels__qrels_gz")  # parsed once per version by _qrels_cached, not read every time
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

    qrels = _qrels_cached(version.pk, version.sha256, dataset.relevance_threshold)
    corpus = corpus_ids_for(dataset=dataset)
    measures = [parse_measure(name) for name in dataset.measures]
    with _open_run(submission) as fh:
        run = read_run(
            fh,
            name=submission.original_name or "run",
            max_lines=settings.LEXBOARD_MAX_RUN_LINES,
            max_bytes=settings.LEXBOARD_MAX_DECOMPRESSED_BYTES,
        )
    report(0.3)
    evaluation = evaluate(
        qrels,
        run,
        measures,
        depth=dataset.depth,
        corpus=corpus,
        docid_example=dataset.docid_example or None,
        progress=lambda f, *rest: report(0.3 + 0.6 * float(f)),
    )
    report(0.95)
    names = [m.name for m in measures]
    scores = {name: float(evaluation.means[name]) for name in names}
    warnings = [w.to_dict() for w in evaluation.warnings]
    blob = per_query_pack(evaluation, names)
    duration = time.monotonic() - started

    with transaction.atomic():
        row = _locked_attempt(submission.pk, attempt)
        if row is None:
            logger.info("submission %s was taken from this worker while scoring; result dropped", submission.pk)
            return
        Result.objects.update_or_create(
            submission=row,
            qrels_version=version,
            defaults={
                "scores": scores,
                "primary_score": scores.get(dataset.primary_measure),
                "n_queries": len(evaluation.qids),
                "per_query": blob,
                "warnings": warnings,
                "duration_seconds": duration,
            },
        )
        current = Split.objects.filter(pk=split.pk).values_list("current_qrels_id", flat=True).first()
        if current != version.pk:
            # New judgments were published while we scored: keep this result as history, score again.
            if row.requeue(message="new relevance judgments were published while scoring; scoring again"):
                _enqueue_after_commit(row.pk)
        else:
            row.mark_scored(warnings=warnings)
        split.bump_cache_version()
    logger.info("submission %s scored in %.2fs: %s", submission.pk, duration, scores)


def submission_score_now(submission_id: int) -> Submission:
    """Score synchronously, in this process (the demo loader's baselines; no worker needed)."""
    submission_score(submission_id)
    return Submission.objects.get(pk=submission_id)


# --- the sweep -----------------------------------------------------------------------------


def submissions_sweep(*, now=None) -> dict[str, int]:
    """Repair what a lost message or a dead worker left behind; run by Celery beat.

    * queued rows never sent (``enqueued_at`` null, older than a short grace)
      or sent more than ``LEXBOARD_QUEUED_RESEND_SECONDS`` ago are sent again
      (a duplicate message is harmless: only one claim succeeds);
    * scoring rows whose heartbeat is older than
      ``LEXBOARD_HEARTBEAT_STALE_SECONDS`` are requeued and sent, or failed
      with a service error once ``LEXBOARD_MAX_SCORING_ATTEMPTS`` is reached.

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
    if any(counts.values()):
        logger.info("sweep: %s", counts)
    return counts
