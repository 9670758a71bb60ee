"""Results: compute a submission's scores on a qrels version with the metric core, and store them.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import logging
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from functools import lru_cache
from typing import IO

import numpy as np
from django.conf import settings

from campaigns.selectors import phase_partition
from catalogue.models import Corpus, Dataset, QrelsVersion, Split
from evaluation import conventions
from evaluation.corpus import CorpusIds
from evaluation.errors import InputError, QrelsFormatError
from evaluation.fastevaluate import evaluate_stored
from evaluation.measures import Measure, parse_measure
from evaluation.qrels import Qrels, read_qrels
from evaluation.reference import read_plain_qrels
from evaluation.reference_json import JsonRunRefused, read_json_run
from evaluation.runs import Run, read_run
from evaluation.scoring import Evaluation, evaluate, recall_curve
from evaluation.verify import Check, Disagreement, Part, begin
from evaluation.verify_classification import verify_predictions

from ..disclosure import HIDDEN_GROUP_FLOOR, min_group_size
from ..models import Result, Submission
from .fusion import fused_run_ensure
from .partition import parts_of, parts_store
from .predictions import read_stored_predictions, score_for_task

logger = logging.getLogger(__name__)

#: The part of a stored run file the scoring process reads for the double entry, the rest in the process it forks:
#: less than half, because it runs the first entry meanwhile (~30 ms of the ~0.2 s of reading at BSARD scale).
DOUBLE_ENTRY_SHARE = 0.45


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
    #: What the second implementation checked and agreed with (every task): ``Verification.record``, e.g.
    #: {"method": "pytrec_eval", "measures": [...], "values_compared": n, "means": true, "parts": [...],
    #: "source": "trec" | "json" | "predictions"}; empty when nothing was checked (never stored then).
    verified_by: dict = dataclasses.field(default_factory=dict)
    #: While a shared task partitions the split: {part: (scores, primary, n_queries, per_query)} (.partition).
    parts: dict = dataclasses.field(default_factory=dict)


class ScoresDisagree(Exception):
    """The core and the second implementation gave different per-query values: our fault, nothing is stored."""

    def __init__(self, disagreement: Disagreement, method: str, version: QrelsVersion):
        super().__init__(f"scores disagree on qrels v{version.version} ({method}): {disagreement}")
        self.disagreement = disagreement
        self.method = method
        self.version = version

    def to_dict(self) -> dict:
        """What curators see: the first differing query, the measure, both values, which check."""
        d = self.disagreement
        return {"qid": d.qid, "measure": d.measure, "core": d.core, "reference": d.reference,
                "method": self.method, "qrels_version": self.version.version}


class UnverifiedScores(Exception):
    """A computed result without a second implementation's agreement reached ``result_store``: our bug, not stored."""


#: The warning code of a failure marker: a rescoring on a pending version that could not be done.
RESCORING_FAILED = "rescoring_failed"


def read_stored_run(submission: Submission):
    """Parse the stored run file (the caps of the settings apply; errors are ``InputError``).

    For classification and NER datasets, the prediction file's bytes
    (parsed against the gold by :func:`result_compute`). A fusion whose
    fused run was not written yet gets it written first, here in the worker
    (:func:`.fusion.fused_run_ensure`; ``FusionFailed`` when a part
    cannot be read).
    """

    if submission.fusion_params and not submission.run_file:
        fused_run_ensure(submission=submission)
    if submission.split.dataset.task != Dataset.Task.RETRIEVAL:
        return _read_stored_predictions(submission)

    with open_run(submission) as fh:
        return read_run(
            fh,
            name=submission.original_name or "run",
            max_lines=settings.LEXBOARD_MAX_RUN_LINES,
            max_bytes=settings.LEXBOARD_MAX_DECOMPRESSED_BYTES,
        )


class LazyRun:
    """A stored run the numpy path's reader parses only when asked (``parsed``): the first entry's fast path
    reads the stored file itself (:func:`first_entry`), and most runs are never parsed in Python at all."""

    def __init__(self, load: Callable[[], Run]):
        self._load = load
        self._run: Run | None = None

    @property
    def loaded(self) -> bool:
        """Whether the numpy path's reader has read it."""
        return self._run is not None

    def parsed(self) -> Run:
        if self._run is None:
            self._run = self._load()
        return self._run


def read_stored_run_lazily(submission: Submission):
    """What the worker scores: a retrieval run as a :class:`LazyRun` (parsed only if the numpy path scores it);
    else what :func:`read_stored_run` reads (prediction files, and runs whose whole-file query checks were left
    to the worker, ``checked_in_worker``: those checks read the parsed run). A fusion's run is written first."""
    if submission.fusion_params and not submission.run_file:
        fused_run_ensure(submission=submission)
    if submission.split.dataset.task != Dataset.Task.RETRIEVAL or submission.checked_in_worker:
        return read_stored_run(submission)
    return LazyRun(lambda: read_stored_run(submission))


def _read_stored_predictions(submission: Submission) -> bytes:

    with open_run(submission) as fh:
        return read_stored_predictions(fh, max_bytes=settings.LEXBOARD_MAX_DECOMPRESSED_BYTES)


def _result_compute_for_task(*, dataset: Dataset, version: QrelsVersion, data: bytes, source: Callable[[], IO[bytes]],
                             name: str, hidden: bool, min_group: int) -> ComputedResult:
    """Classification and NER: macro-F1 of a prediction file on one gold version (:mod:`.predictions`), double-entered.

    The second implementation (``evaluation.verify_classification``) reads the stored prediction file
    (``source``) and the stored gold itself and recomputes every score; a difference is ``ScoresDisagree``.
    """

    started = time.monotonic()
    task = score_for_task(dataset=dataset, version=version, data=data, name=name, hidden=hidden,
                          min_group=min_group)
    with source() as fh:
        stored = fh.read()
    check = verify_predictions(_stored_gold_cached(version.pk, version.sha256), stored, task.scores,
                               task=dataset.task, min_group=min_group)
    if check.disagreement is not None:
        raise ScoresDisagree(check.disagreement, check.method, version)
    return ComputedResult(
        version_id=version.pk,
        scores=task.scores,
        primary_score=task.scores.get(dataset.primary_measure),
        n_queries=task.n_examples,
        per_query=task.per_query,
        warnings=task.warnings,
        duration_seconds=time.monotonic() - started,
        verified_by={"method": check.method, "measures": sorted(task.scores), "source": "predictions"},
    )


def result_compute(*, dataset: Dataset, version: QrelsVersion, run, source: Callable[[], IO[bytes]],
                   progress: Callable[..., None] | None = None,
                   json_source: Callable[[], IO[bytes]] | None = None) -> ComputedResult:
    """Score a parsed run on one qrels version with the dataset's measures, depth and corpus.

    The one path for first scoring and rescoring, so a result on a new
    version is computed exactly like the first one. ``version`` may come
    without its ``qrels_gz`` blob: qrels are parsed once per version and
    content hash (:func:`_qrels_cached`). ``source`` opens the stored file
    ``run`` was read from (:func:`stored_run_opener`): the double entry reads
    it again with its own reader. ``json_source`` opens the JSON the
    participant uploaded when ``run`` was converted from one
    (:func:`stored_json_opener`): the double entry reads that instead.
    """

    if dataset.task != Dataset.Task.RETRIEVAL:  # ``run`` is a prediction file's bytes (``read_stored_run``)
        split = Split.objects.filter(pk=version.split_id).select_related("dataset").first()
        hidden = split is None or split.hidden
        return _result_compute_for_task(dataset=dataset, version=version, data=run, source=source, name="predictions",
                                        hidden=hidden, min_group=min_group_size(split) if split else HIDDEN_GROUP_FLOOR)
    started = time.monotonic()
    measures = [parse_measure(name) for name in dataset.measures]
    corpus = corpus_ids_for(dataset=dataset)
    plain_qrels = _plain_qrels_cached(version.pk, version.sha256)
    # The double entry's reading of the stored file's later half begins now, in a process of its own, beside the
    # first entry (a run uploaded as JSON is read from the JSON after it, as its reader decides: _double_entry).
    begun = (_double_entry_begun(plain_qrels, source, measures, dataset=dataset, corpus=corpus)
             if json_source is None else nullcontext())
    with begun as check:
        evaluation = first_entry(
            run=run, source=source,
            qrels_text=lambda: _stored_gold_cached(version.pk, version.sha256),
            qrels=lambda: _qrels_cached(version.pk, version.sha256, dataset.relevance_threshold),
            measures=measures, depth=dataset.depth, threshold=dataset.relevance_threshold,
            score_precision=conventions.score_precision(dataset.score_precision),
            empty_queries=conventions.empty_queries(dataset.empty_queries),
            corpus=corpus, docid_example=dataset.docid_example or None, progress=progress,
        )
        names = [m.name for m in measures]
        scores = {name: float(evaluation.means[name]) for name in names}
        per_query = per_query_pack(evaluation, names)
        # A shared task's phase: the public, private and full parts of the topics (.partition; result_store picks).
        public = phase_partition(split_id=version.split_id)
        parts = {} if public is None else parts_of(per_query=per_query, scores=scores,
                                                   primary_measure=dataset.primary_measure, public=public)
        verified_by = _double_entry(plain_qrels, source, evaluation, dataset=dataset, version=version, corpus=corpus,
                                    scores=scores, parts=_parts_to_check(parts, public), json_source=json_source,
                                    check=check)
    return ComputedResult(
        version_id=version.pk,
        scores=scores,
        primary_score=scores.get(dataset.primary_measure),
        n_queries=len(evaluation.qids),
        per_query=per_query,
        warnings=[w.to_dict() for w in evaluation.warnings],
        duration_seconds=time.monotonic() - started,
        verified_by=verified_by,
        parts=parts,
    )


def first_entry(*, run: Run | LazyRun, source: Callable[[], IO[bytes]], qrels_text: Callable[[], bytes],
                qrels: Callable[[], Qrels], measures: list[Measure], depth: int, threshold: int,
                score_precision: conventions.ScorePrecision, empty_queries: conventions.EmptyQueries,
                corpus: CorpusIds | None = None, docid_example: str | None = None,
                progress: Callable[..., None] | None = None) -> Evaluation:
    """The first implementation's scores of a retrieval run: the compiled fast path when it takes the run, else
    the numpy path; the same ``Evaluation`` bit for bit either way (per-query vectors included).

    The fast path (``evaluation.fastevaluate``, what ``python -m evaluation score`` takes) is offered a run not
    parsed yet (``LazyRun``: the worker's own uploads), with the dataset's corpus when it has one (BSARD's,
    GreekBarRetrieval's: a run naming a document outside it is handed back); it reads the stored file (``source``) and the version's stored
    judgments (``qrels_text``) itself, within the same caps as the numpy path's reader (``LEXBOARD_MAX_RUN_LINES``,
    ``LEXBOARD_MAX_DECOMPRESSED_BYTES``). Anything it hands back (a refusal to say, a notice it does not count, a
    measure it does not compute, a deep nDCG cutoff) is parsed and scored by the numpy path, which says it.
    The double entry (:func:`_double_entry`) does not depend on which path computed ``Evaluation``.
    """
    if isinstance(run, LazyRun):
        fast = evaluate_stored(open_run=source, qrels=qrels_text(), measures=measures, depth=depth,
                               threshold=threshold, score_precision=score_precision,
                               empty_queries=empty_queries, max_lines=settings.LEXBOARD_MAX_RUN_LINES,
                               max_bytes=settings.LEXBOARD_MAX_DECOMPRESSED_BYTES, corpus=corpus)
        if fast is not None:
            if progress is not None:
                progress(1.0)
            return fast
        run = run.parsed()
    return evaluate(qrels(), run, measures, depth=depth, corpus=corpus, docid_example=docid_example,
                    progress=progress, score_precision=score_precision, empty_queries=empty_queries)


def _parts_to_check(parts: dict, public: frozenset[str] | None) -> list[Part]:
    """The parts about to be stored, each with its topics as the partition says (not as ``parts_of`` cut them)."""
    if not parts or public is None:
        return []
    topics = {"public": public.__contains__, "private": lambda q: q not in public, "full": lambda q: True}
    return [Part(name, topics[name], part_scores, n) for name, (part_scores, _primary, n, _blob) in parts.items()]


def _double_entry(qrels: dict[str, dict[str, int]], source: Callable[[], IO[bytes]], evaluation: Evaluation, *,
                  dataset: Dataset, version: QrelsVersion, corpus: CorpusIds | None, scores: dict[str, float],
                  parts: list[Part], json_source: Callable[[], IO[bytes]] | None = None,
                  check: Check | None = None) -> dict:
    """Recompute every per-query value, every mean and every part's mean; what was checked, or ScoresDisagree.

    The second implementation reads the stored run file itself (``source``),
    with its own reader, order and depth cut, and the judgments as its own
    reader read them (``qrels``, :func:`_plain_qrels_cached`): a fault in the
    core's parsing is caught as surely as one in its measures. A run uploaded
    as JSON is read from the uploaded JSON (``json_source``) by a reader of its
    own (``evaluation.reference_json``), so a fault in the conversion is caught
    too; a JSON file that reader refuses is a disagreement.

    The means to be stored (``scores``) and the parts' means (``parts``) are
    recomputed from the second implementation's own per-query values under the
    dataset's averaging convention. Every measure is checked: each family
    declares its second implementation (``evaluation.measures.Family``).

    ``check``: the double entry of the stored file begun before the first entry (:func:`_double_entry_begun`),
    finished here; without it (a JSON run) the check is made here from the start.
    """
    method = "pytrec_eval" if dataset.score_precision == "float32" else "plain"
    run_input: Callable[[], IO[bytes]] | dict[str, dict[str, float]] = source
    if json_source is not None:
        try:
            run_input = read_json_run(json_source)
        except JsonRunRefused as exc:
            logger.error("the double entry's JSON reader refuses a file the converter accepted: %s", exc)
            raise ScoresDisagree(Disagreement("(the uploaded JSON)", "reading the run", 1.0, 0.0), method,
                                 version) from None
    if check is None:
        with _double_entry_begun(qrels, run_input, evaluation.measures, dataset=dataset, corpus=corpus) as begun:
            verification = begun.finish(evaluation, means=scores, parts=parts)
    else:
        verification = check.finish(evaluation, means=scores, parts=parts)
    if verification.disagreement is not None:
        raise ScoresDisagree(verification.disagreement, verification.method, version)
    return verification.record(source="json" if json_source is not None else "trec")


def _double_entry_begun(qrels: dict[str, dict[str, int]], run: Callable[[], IO[bytes]] | dict[str, dict[str, float]],
                        measures: Sequence[Measure], *, dataset: Dataset, corpus: CorpusIds | None) -> Check:
    """The double entry of ``run`` with the dataset's options, begun (``evaluation.verify.begin``): a stored run
    file's later half is read and scored in another process from now on (``LEXBOARD_DOUBLE_ENTRY_PROCESSES``)."""
    return begin(qrels, run, measures, depth=dataset.depth, threshold=dataset.relevance_threshold,
                 score_precision=conventions.score_precision(dataset.score_precision),
                 empty_queries=conventions.empty_queries(dataset.empty_queries), corpus=corpus,
                 processes=settings.LEXBOARD_DOUBLE_ENTRY_PROCESSES, share=DOUBLE_ENTRY_SHARE)




def result_store(*, submission: Submission, computed: ComputedResult) -> Result:
    """Store the result of ``submission`` on ``computed``'s version: one row per (submission, version).

    ``update_or_create`` on the unique pair, so a redelivered or repeated
    scoring replaces its own row and never adds a second one.

    On a split with the Ladder a new row starts *not released*: only
    :func:`~submissions.services.ladder.ladder_judge` (on the current
    version, or the replay when a pending one becomes current) releases it.
    A result no Ladder ever judges (stored on a version that was staged and
    then replaced, or on the old version by a scoring the switch overtook)
    must not show a number the Ladder would have held back. A row that
    exists keeps its judgment (``ladder_judge`` leaves a judged row alone)
    unless its scores changed: then it is unjudged again.

    While a shared task partitions the split (decided now, not when computed:
    the reveal may have come in between), the row holds the public topics'
    values and the parts are kept beside it (:mod:`.partition`).

    Scores no second implementation agreed with are never stored (``UnverifiedScores``): every task's
    ``result_compute`` double-enters what it computes, and a new task must bring its own check.
    """
    if not computed.failed and not computed.verified_by:
        raise UnverifiedScores(f"scores on version {computed.version_id} were not checked by a second "
                               "implementation; they are not stored")
    scores, primary, n_queries, per_query = (computed.scores, computed.primary_score, computed.n_queries,
                                             computed.per_query)
    if computed.parts:
        parts_store(submission_id=submission.pk, version_id=computed.version_id, parts=computed.parts)
        if phase_partition(split_id=submission.split_id) is not None:
            scores, primary, n_queries, per_query = computed.parts["public"]
    unjudged = {"released": not submission.split.uses_ladder, "ladder_message": "", "ladder_p": None,
                "released_score": None, "released_step": None}
    stored = Result.objects.filter(submission=submission, qrels_version_id=computed.version_id).only("scores").first()
    values = {
        "scores": scores,
        "primary_score": primary,
        "n_queries": n_queries,
        "per_query": per_query,
        "warnings": computed.warnings,
        "duration_seconds": computed.duration_seconds,
        "verified_by": computed.verified_by,
    }
    result, _ = Result.objects.update_or_create(
        submission=submission,
        qrels_version_id=computed.version_id,
        defaults=values if stored is None or stored.scores == scores else {**values, **unjudged},
        create_defaults={**values, **unjudged},
    )
    return result


def failure_marker(version: QrelsVersion, exc: Exception | None, *, task: str = Dataset.Task.RETRIEVAL,
                    reason: str = "") -> ComputedResult:
    """What is stored when a run cannot be scored on a pending version: the reason, no scores.

    The reason is ``reason`` when given, else said from the exception ``exc``.
    """
    if not reason:
        if isinstance(exc, ScoresDisagree):
            reason = (f"the two independent computations of the scores on qrels v{version.version} disagree; "
                      "the curators have been told")
        elif isinstance(exc, QrelsFormatError):
            reason = f"the judgments of qrels v{version.version} cannot be read"
        elif isinstance(exc, InputError):
            reason = input_error_message(exc, task=task)
        else:
            reason = f"scoring on qrels v{version.version} failed on our side ({type(exc).__name__})"
    return ComputedResult(
        version_id=version.pk, scores={}, primary_score=None, n_queries=0, per_query=b"",
        warnings=[{"code": RESCORING_FAILED, "message": reason, "count": 1}], duration_seconds=0.0, failed=True,
    )


def is_failure_marker(result: Result) -> bool:
    """True for the stored trace of a rescoring that could not be done (no scores, the reason)."""
    return not result.scores and any(w.get("code") == RESCORING_FAILED for w in (result.warnings or []))


@lru_cache(maxsize=16)
def _qrels_cached(version_id: int, sha256: str, threshold: int):
    """Parsed qrels per (immutable) version: a worker parses each version once.

    The content hash is part of the key so that a reused id (a restored
    backup, a test database) can never serve another version's judgments.
    """

    version = QrelsVersion.objects.only("qrels_gz", "split_id", "version").get(pk=version_id)
    return read_qrels(gzip.decompress(bytes(version.qrels_gz)), name=f"qrels v{version.version}", threshold=threshold)


@lru_cache(maxsize=8)
def _plain_qrels_cached(version_id: int, sha256: str) -> dict[str, dict[str, int]]:
    """A version's judgments as the second implementation reads them (``evaluation.reference``), once per version."""

    version = QrelsVersion.objects.only("qrels_gz").get(pk=version_id)
    return read_plain_qrels(gzip.decompress(bytes(version.qrels_gz)))


@lru_cache(maxsize=8)
def _stored_gold_cached(version_id: int, sha256: str) -> bytes:
    """A version's file as stored: a classification version's gold, for the second implementation to read
    itself; a retrieval version's qrels, for the first entry's fast path (:func:`first_entry`)."""

    version = QrelsVersion.objects.only("qrels_gz").get(pk=version_id)
    return gzip.decompress(bytes(version.qrels_gz))


@lru_cache(maxsize=8)
def _corpus_cached(corpus_id: int, sha256: str):
    """Corpus ids per content hash: a changed corpus has a new hash, hence a new entry."""

    corpus = Corpus.objects.only("ids_gz").get(pk=corpus_id)
    # The vectorized reader takes the stored gzip as it is: no list of millions of strings.
    return CorpusIds.read(bytes(corpus.ids_gz), name="corpus ids")


def corpus_ids_for(*, dataset: Dataset):
    """The dataset's corpus ids (cached per content), or None when no corpus was imported."""
    row = Corpus.objects.filter(dataset=dataset).only("pk", "sha256").first()
    if row is None:
        return None
    return _corpus_cached(row.pk, row.sha256)


def stored_run_opener(submission: Submission) -> Callable[[], IO[bytes]]:
    """A function opening the submission's stored file afresh (a new binary stream from its storage) per call."""
    storage, name = submission.run_file.storage, submission.run_file.name
    return lambda: storage.open(name, "rb")


def stored_json_opener(submission: Submission) -> Callable[[], IO[bytes]] | None:
    """A function opening the JSON the run was converted from (``Submission.json_file``), or None: not a JSON upload."""
    if not submission.json_file:
        return None
    storage, name = submission.json_file.storage, submission.json_file.name
    return lambda: storage.open(name, "rb")


@contextmanager
def open_run(submission: Submission):
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

    arrays: dict[str, np.ndarray] = {"qids": np.asarray(list(evaluation.qids), dtype=str)}
    for name in measures:
        arrays[name] = np.asarray(evaluation.per_query[name], dtype=np.float64)
    for name in ("n_relevant", "first_relevant_rank", "judged_at_10", "rel_ranks", "rel_offsets"):
        value = getattr(evaluation, name, None)
        if value is not None:
            arrays[name] = np.asarray(value)
    arrays["recall_curve"] = np.asarray(recall_curve(evaluation), dtype=np.float64)
    buffer = io.BytesIO()
    # mypy matches a **dict against numpy's keyword-only allow_pickle: bool as well as **kwds.
    np.savez_compressed(buffer, **arrays)  # type: ignore[arg-type]
    return buffer.getvalue()


def input_error_message(exc: InputError, *, task: str = Dataset.Task.RETRIEVAL) -> str:
    """The first problem of a refused run (or prediction file) with its line, for the failure message."""
    problems = exc.problems
    first = problems[0] if problems else None
    where = (f"line {first.line}: " if first and first.line is not None else "") + (first.reason if first else "")
    more = f" (and {len(problems) - 1} more problem(s) listed below)" if len(problems) > 1 else ""
    what = "run file" if task == Dataset.Task.RETRIEVAL else "predictions file"
    return f"The {what} cannot be scored: {where}{more}. Fix the file and resubmit it."
