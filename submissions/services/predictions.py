"""Scoring of the non-retrieval tasks (single-label, multi-label classification and NER) on the server.

A classification or NER dataset uses the same records as a retrieval one,
so uploads, quotas, the worker, rescoring on new judgments and the
leaderboards need nothing new:

* a split's gold labels are a :class:`~catalogue.models.QrelsVersion` whose
  text is ``evaluation.classification.gold_to_jsonl(gold)`` (hidden exactly
  like qrels: in the database, never under a served path);
* an upload is a JSONL prediction file, one ``{"id", "label"}`` /
  ``{"id", "labels"}`` / ``{"id", "tags"}`` object per line, checked cheaply
  in the request (:func:`predictions_check_head`) and fully by the worker with
  the metric core's ``read_predictions``;
* the result's scores are ``{"macro-F1": ...}`` plus ``"macro-F1/<language>"``
  when the gold lines carry a language.

:mod:`submissions.services.results` and :mod:`.uploads` dispatch on ``dataset.task`` in one place each for
the cheap check, reading the stored file and computing a result; everything
task-specific lives here.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import cast

from django.conf import settings

from catalogue.models import Dataset, QrelsVersion, Split
from evaluation.classification import (
    ANSWER_FIELD,
    GoldFormatError,
    GoldSet,
    PredictionFormatError,
    bio_entities,
    evaluate_predictions,
    read_gold,
    read_predictions,
)
from evaluation.errors import Notice, Problem, QrelsFormatError
from evaluation.measures import MACRO_F1, language_measure

#: How many first lines of an upload the request checks.
SNIFF_LINES = 50

EXAMPLES: dict[str, str] = {
    Dataset.Task.SINGLE: '{"id": "doc-1", "label": "civil"}',
    Dataset.Task.MULTI: '{"id": "doc-1", "labels": ["civil", "tax"]}',
    Dataset.Task.NER: '{"id": "s-1", "tags": ["B-PER", "I-PER", "O"]}',
}



# --- the cheap check, in the request -----------------------------------------------------


def predictions_head_problems(head: bytes, *, task: str) -> list[Problem]:
    """Problems of the first ``SNIFF_LINES`` lines of a prediction file: JSON objects with an id and the answer.

    ``head`` holds complete lines only. Labels and ids are not checked here
    (the worker checks them against the gold): this only refuses files that
    are obviously not prediction files for this task, e.g. a TREC run.
    """
    key = ANSWER_FIELD[task]
    problems: list[Problem] = []
    seen = 0
    for lineno, raw in enumerate(head.split(b"\n"), start=1):
        raw = raw.rstrip(b"\r")
        if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        if not raw.strip():
            continue
        seen += 1
        if seen > SNIFF_LINES:
            break
        try:
            obj = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            problems.append(Problem(lineno, "not UTF-8; save the file as UTF-8"))
            continue
        except json.JSONDecodeError as exc:
            problems.append(Problem(lineno, f"not a JSON object ({exc.msg}); write one object per line, "
                                            f"e.g. {EXAMPLES[task]}"))
            continue
        if not isinstance(obj, dict):
            problems.append(Problem(lineno, f"not a JSON object; write one object per line, e.g. {EXAMPLES[task]}"))
            continue
        if "id" not in obj:
            problems.append(Problem(lineno, 'no "id" field; every line needs the id of the example it answers'))
            continue
        if key not in obj:
            others = [k for k in ANSWER_FIELD.values() if k != key and k in obj]
            hint = f' (it has "{others[0]}": this dataset\'s task is {task})' if others else ""
            problems.append(Problem(lineno, f'no "{key}" field{hint}; a line looks like {EXAMPLES[task]}'))
            continue
        value = obj[key]
        if task == Dataset.Task.SINGLE and (isinstance(value, bool) or not isinstance(value, str | int)):
            problems.append(Problem(lineno, '"label" must be a string, e.g. "civil"'))
        elif task != Dataset.Task.SINGLE and not isinstance(value, list):
            problems.append(Problem(lineno, f'"{key}" must be a JSON array, e.g. {EXAMPLES[task]}'))
        if len(problems) >= 20:
            break
    if seen == 0:
        problems.append(Problem(None, f"no prediction in the file; write one JSON object per line, e.g. {EXAMPLES[task]}"))
    return problems


# --- the gold, per version ------------------------------------------------------------------


@lru_cache(maxsize=16)
def _gold_cached(version_id: int, sha256: str, task: str) -> GoldSet:
    """A split's gold per (immutable) version and content hash, parsed once per worker."""
    version = QrelsVersion.objects.only("qrels_gz", "version").get(pk=version_id)
    try:
        return read_gold(gzip.decompress(bytes(version.qrels_gz)), task=task, name=f"gold v{version.version}")
    except GoldFormatError as exc:
        # The stored gold is ours: a service failure, never the participant's.
        raise QrelsFormatError(exc.path, exc.problems) from exc


def gold_for(*, version: QrelsVersion, task: str) -> GoldSet:
    """The parsed gold of one version (cached per version id and content hash)."""
    return _gold_cached(version.pk, version.sha256, task)


def gold_labels(gold: GoldSet) -> frozenset[str]:
    """Class labels of a gold set, or entity types for NER."""
    if gold.task == Dataset.Task.NER:
        return frozenset(t for tags in gold.answers.values() for t, _, _ in bio_entities(tags))  # type: ignore[arg-type]
    if gold.task == Dataset.Task.MULTI:
        # A multi-label gold's answers are tuples of labels (read_gold).
        return frozenset(label for labels in gold.answers.values() for label in cast("tuple[str, ...]", labels))
    return frozenset(str(label) for label in gold.answers.values())


def dataset_labels(*, dataset: Dataset) -> frozenset[str]:
    """The dataset's label set (entity types for NER): the labels of every split's current gold.

    Predictions are checked against the whole dataset's labels, not the
    split's: refusing a label that only the hidden split lacks would tell a
    participant so. Empty when no gold is published yet.
    """
    versions = QrelsVersion.objects.filter(
        pk__in=Split.objects.filter(dataset=dataset, current_qrels__isnull=False).values("current_qrels")
    ).only("pk", "sha256")
    labels: set[str] = set()
    for version in versions:
        labels |= gold_labels(gold_for(version=version, task=dataset.task))
    return frozenset(labels)


# --- the stored file and its scores, in the worker ---------------------------------------


def read_stored_predictions(fileobj, *, max_bytes: int | None = None) -> bytes:
    """The prediction file's bytes, gunzipped when it starts like gzip, refused past ``max_bytes``."""
    max_bytes = max_bytes or settings.LEXBOARD_MAX_DECOMPRESSED_BYTES
    head = fileobj.read(2)
    fileobj.seek(0)
    name = getattr(fileobj, "name", "predictions") or "predictions"
    if head != b"\x1f\x8b":
        data = fileobj.read(max_bytes + 1)
    else:
        chunks, total = [], 0
        try:
            with gzip.GzipFile(fileobj=fileobj, mode="rb") as gz:
                while total <= max_bytes:
                    chunk = gz.read(1 << 20)
                    if not chunk:
                        break
                    chunks.append(chunk)
                    total += len(chunk)
        except (EOFError, OSError, zlib.error) as exc:
            raise PredictionFormatError(str(name), [Problem(None, f"cannot be decompressed ({exc}); "
                                                                  "compress it again or upload plain text")]) from None
        data = b"".join(chunks)
    if len(data) > max_bytes:
        raise PredictionFormatError(str(name), [Problem(None, f"larger than {max_bytes} bytes once decompressed")])
    return data


@dataclass(frozen=True)
class TaskScores:
    """What scoring a prediction file gives: the scores, the per-example blob and the warnings."""

    scores: dict[str, float]
    per_query: bytes
    warnings: list[dict]
    n_examples: int


def aligned_answers(*, gold: GoldSet, data: bytes, name: str = "predictions") -> list[object]:
    """A prediction file's answers in the order of the gold's examples (checked against ``gold``'s labels)."""
    answers = read_predictions(data, gold=gold, name=name).answers
    return [answers[i] for i in gold.ids]


def score_for_task(*, dataset: Dataset, version: QrelsVersion, data: bytes, name: str = "predictions",
                   hidden: bool = True, min_group: int = 1) -> TaskScores:
    """Check a prediction file against a gold version and score it by macro-F1 (and per language).

    Raises ``PredictionFormatError`` (an ``InputError``: the participant's
    file) naming lines and fixes, and ``QrelsFormatError`` when the stored
    gold cannot be read (ours). On a hidden split the warnings do not name
    gold labels (which labels a hidden split holds is part of its answers).
    No per-example vectors are stored: a per-example macro-F1 does not exist.
    A language with fewer than ``min_group`` gold examples gets no score of
    its own (on a hidden split a language of one example would give that
    example's label per submission: ``participants.analysis.min_group_size``).
    """
    gold = gold_for(version=version, task=dataset.task)
    labels = dataset_labels(dataset=dataset) | gold_labels(gold)
    gold = GoldSet(gold.task, gold.ids, gold.answers, labels, gold.languages, gold.warnings)
    predictions = read_predictions(data, gold=gold, name=name)
    result = evaluate_predictions(gold, predictions)
    scores = {MACRO_F1: float(result.macro_f1)}
    sizes = Counter(gold.languages.get(i) for i in gold.ids)
    for language, value in result.per_language.items():
        if sizes[language] >= min_group:
            scores[language_measure(language)] = float(value)
    warnings = []
    for notice in result.warnings:
        if hidden and notice in gold.warnings:
            continue  # a fact about the hidden gold itself (e.g. its own orphan I- tags), not about the file
        if hidden and notice.code == "never_predicted":
            what = "entity types" if dataset.task == Dataset.Task.NER else "labels"
            notice = Notice(notice.code, f"{notice.count} {what} of the gold are never predicted; their F1 is 0 "
                                         "and counts in the macro average", notice.count)
        warnings.append(notice.to_dict())
    return TaskScores(scores=scores, per_query=b"", warnings=warnings, n_examples=result.n_examples)
