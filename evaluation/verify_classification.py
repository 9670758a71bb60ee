"""Double entry for classification and NER: every stored macro-F1 recomputed from the stored files.

The core (``evaluation.classification``) reads a prediction file against its gold, splits BIO tags into
entities and sums each example's contributions into per-label counts. This second implementation shares
none of that code:

* its own reader of both JSON Lines files (gzip or not, a leading BOM, CRLF), with the same acceptance rules:
  ids are strings or integers, a single label a string or an integer, labels a list of them, tags a list of
  strings, one line per id, every gold id answered, one tag per token;
* its own entity splitter, written as seqeval writes it (a chunk ends and a chunk starts by comparing the
  previous tag and type with the current ones), not as the core's one-pass scan;
* per-label one-vs-rest counts over sets of ``(example, label)`` items (``(example, entity)`` for NER), and
  F1 as the harmonic mean of precision and recall (scikit-learn's way), not the core's
  2·TP / (2·TP + FP + FN).

:func:`verify_predictions` compares every score the worker stores (``macro-F1`` and each
``macro-F1/<language>`` whose language has at least ``min_group`` gold examples) within
``verify.TOLERANCE``, and returns the first disagreement, as ``verify.verify`` does for retrieval.
"""

from __future__ import annotations

import gzip
import json
import math
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from .measures import MACRO_F1, language_measure
from .verify import TOLERANCE, Disagreement, Verification

#: The second implementation's name, stored as ``Result.verified_by`` (as for retrieval on float64 datasets).
METHOD = "plain"
#: The "query" a disagreement names: macro-F1 has no per-example value, only the whole file's (or a language's).
ALL_EXAMPLES = "(all examples)"

_FIELD = {"single": "label", "multi": "labels", "ner": "tags"}


class Unreadable(Exception):
    """The second reader cannot take a file the core took: a disagreement of the two readers."""


@dataclass(frozen=True)
class Answers:
    """One file as this reader reads it: answers by id in file order, and the gold's ``language`` fields."""

    task: str
    answers: dict[str, object]
    languages: dict[str, str] = field(default_factory=dict)


def read_answers(data: bytes, *, task: str, gold: bool) -> Answers:
    """Read a gold (``gold``) or prediction JSON Lines file; ``Unreadable`` on anything the core refuses."""
    if task not in _FIELD:
        raise Unreadable(f"unknown task {task!r}")
    key = _FIELD[task]
    answers: dict[str, object] = {}
    languages: dict[str, str] = {}
    for number, obj in _objects(data):
        raw_id = obj.get("id")
        if type(raw_id) not in (str, int) or not str(raw_id).strip():
            raise Unreadable(f"line {number}: no usable id")
        doc_id = str(raw_id)
        if doc_id in answers:
            raise Unreadable(f"line {number}: id {doc_id!r} twice")
        if key not in obj:
            raise Unreadable(f"line {number}: no {key!r}")
        answers[doc_id] = _answer(obj[key], task, number)
        if gold and "language" in obj and obj["language"] is not None:
            language = obj["language"]
            if type(language) is not str or not language:
                raise Unreadable(f"line {number}: a language that is not a code")
            languages[doc_id] = language
    if not answers:
        raise Unreadable("no examples")
    return Answers(task, answers, languages)


def _objects(data: bytes) -> Iterator[tuple[int, dict[str, object]]]:
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise Unreadable("not UTF-8") from exc
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip(" \t\r\n\f\v"):
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise Unreadable(f"line {number}: not JSON") from exc
        if type(obj) is not dict:
            raise Unreadable(f"line {number}: not an object")
        yield number, obj


def _answer(value: object, task: str, number: int) -> object:
    if task == "single":
        if type(value) not in (str, int):
            raise Unreadable(f"line {number}: a label that is not a string")
        return str(value)
    if type(value) is not list:
        raise Unreadable(f"line {number}: not a list")
    if task == "multi":
        if any(type(x) not in (str, int) for x in value):
            raise Unreadable(f"line {number}: a label that is not a string")
        return frozenset(str(x) for x in value)
    if any(type(x) is not str for x in value):
        raise Unreadable(f"line {number}: a tag that is not a string")
    return tuple(value)


# --------------------------------------------------------------------------- entities, seqeval's way


def _parts(tag: str) -> tuple[str, str]:
    return ("O", "") if tag == "O" else (tag[0], tag[2:])


def _chunk_ends(prev_tag: str, tag: str, prev_type: str, type_: str) -> bool:
    if prev_tag in ("B", "I") and tag in ("B", "O"):
        return True
    return prev_tag != "O" and prev_type != type_


def _chunk_starts(prev_tag: str, tag: str, prev_type: str, type_: str) -> bool:
    if tag == "B" or (prev_tag == "O" and tag == "I"):
        return True
    return tag != "O" and prev_type != type_


def entities(tags: tuple[str, ...]) -> set[tuple[str, int, int]]:
    """``(type, first, last)`` (last inclusive) of a BIO sequence, by seqeval's ``end_of_chunk``/``start_of_chunk``."""
    found: set[tuple[str, int, int]] = set()
    prev_tag, prev_type, begin = "O", "", -1
    for i, tag in enumerate((*tags, "O")):
        now_tag, now_type = _parts(tag)
        if begin >= 0 and _chunk_ends(prev_tag, now_tag, prev_type, now_type):
            found.add((prev_type, begin, i - 1))
            begin = -1
        if _chunk_starts(prev_tag, now_tag, prev_type, now_type):
            begin = i
        prev_tag, prev_type = now_tag, now_type
    return found


# --------------------------------------------------------------------------- macro-F1, one label at a time


def _items(task: str, doc_id: str, answer: object) -> set[tuple[str, str, object]]:
    """An example's answer as ``(label, example, what)`` items: a prediction is right where an item is shared."""
    if task == "single":
        return {(str(answer), doc_id, None)}
    if task == "multi":
        assert isinstance(answer, frozenset)
        return {(label, doc_id, None) for label in answer}
    assert isinstance(answer, tuple)
    return {(kind, doc_id, (first, last)) for kind, first, last in entities(answer)}


def macro_f1(task: str, ids: list[str], gold: Mapping[str, object], predicted: Mapping[str, object]) -> float:
    """Mean over the labels in the gold or the predictions of ``ids`` of each label's F1 (0 with no label)."""
    truth: set[tuple[str, str, object]] = set()
    guess: set[tuple[str, str, object]] = set()
    for doc_id in ids:
        truth |= _items(task, doc_id, gold[doc_id])
        guess |= _items(task, doc_id, predicted[doc_id])
    labels = sorted({item[0] for item in truth | guess})
    scores = []
    for label in labels:
        relevant = {x for x in truth if x[0] == label}
        chosen = {x for x in guess if x[0] == label}
        hits = len(relevant & chosen)
        precision = hits / len(chosen) if chosen else 0.0
        recall = hits / len(relevant) if relevant else 0.0
        scores.append(2 * precision * recall / (precision + recall) if precision + recall else 0.0)
    return math.fsum(scores) / len(scores) if scores else 0.0


def recompute(gold: Answers, predictions: Answers, *, min_group: int = 1) -> dict[str, float]:
    """Every score the worker stores for these files: macro-F1, and each language's with ``min_group`` examples."""
    missing = [i for i in gold.answers if i not in predictions.answers]
    extra = [i for i in predictions.answers if i not in gold.answers]
    if missing or extra:
        raise Unreadable(f"{len(missing)} gold ids unanswered, {len(extra)} answers to no gold id")
    if gold.task == "ner":
        for doc_id, tags in gold.answers.items():
            if len(predictions.answers[doc_id]) != len(tags):  # type: ignore[arg-type]
                raise Unreadable(f"id {doc_id!r}: not one tag per token")
    ids = list(gold.answers)
    scores = {MACRO_F1: macro_f1(gold.task, ids, gold.answers, predictions.answers)}
    for language in sorted(set(gold.languages.values())):
        subset = [i for i in ids if gold.languages.get(i) == language]
        if len(subset) >= min_group:
            scores[language_measure(language)] = macro_f1(gold.task, subset, gold.answers, predictions.answers)
    return scores


def verify_predictions(gold_data: bytes, prediction_data: bytes, scores: Mapping[str, float], *, task: str,
                       min_group: int = 1, tolerance: float = TOLERANCE) -> Verification:
    """Recompute ``scores`` (what the core computed) from the stored gold and prediction files; compare each."""
    try:
        gold = read_answers(gold_data, task=task, gold=True)
        expected = recompute(gold, read_answers(prediction_data, task=task, gold=False), min_group=min_group)
    except (Unreadable, OSError, EOFError, zlib.error) as exc:  # the last three: a gzip stream it cannot inflate
        return Verification(METHOD, 0, Disagreement(ALL_EXAMPLES, f"reading the files: {exc}", 1.0, 0.0))
    for name in sorted(set(expected) | set(scores)):
        if name not in expected or name not in scores:  # a score one side has: 1.0 there, 0.0 on the other
            return Verification(METHOD, len(expected),
                                Disagreement(ALL_EXAMPLES, f"{name} (stored by one side only)",
                                             float(name in scores), float(name in expected)))
        if not abs(scores[name] - expected[name]) <= tolerance:
            return Verification(METHOD, len(expected), Disagreement(ALL_EXAMPLES, name, scores[name], expected[name]))
    return Verification(METHOD, len(expected), None)


__all__ = ["METHOD", "Answers", "Unreadable", "entities", "macro_f1", "read_answers", "recompute",
           "verify_predictions"]
