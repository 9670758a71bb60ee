"""Classification and NER scoring for LEXTREME-style tasks: macro-F1, and the JSONL readers.

Three tasks, one file format (JSON Lines, one example per line, UTF-8):

- ``single`` (single-label classification): ``{"id": "doc-1", "label": "civil"}``
- ``multi`` (multi-label classification): ``{"id": "doc-1", "labels": ["civil", "tax"]}``
- ``ner`` (token-level BIO tags): ``{"id": "s-1", "tags": ["B-PER", "I-PER", "O"]}``

Gold files use the same lines (plus any other field, e.g. ``text``, ``tokens``
or ``language``, which are kept or ignored); a prediction file answers every gold
id exactly once.

Conventions (the contract, stated again in docs/metrics.md):

- Macro-F1 is the unweighted mean of the per-label F1 over the labels that
  occur in the gold or in the predictions — scikit-learn's
  ``f1_score(average="macro", zero_division=0)`` for single-label, and the same
  over ``MultiLabelBinarizer`` columns for multi-label. F1 = 2·TP / (2·TP + FP +
  FN); precision or recall with a zero denominator is 0 (``zero_division=0``),
  so a gold label never predicted has F1 0.
- NER is scored on entities, not tokens: an entity is a maximal typed span as
  seqeval's *default* (conlleval-compatible, non-strict) mode reads BIO tags —
  an ``I-X`` that follows ``O``, or a tag of another type, starts a new entity
  instead of being dropped (strict IOB2 mode would drop it). A predicted entity
  counts as a true positive only when its type, start and end all match a gold
  entity. Macro-F1 averages the per-type F1 (seqeval
  ``f1_score(average="macro")``).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO, cast

from evaluation.conventions import CLASSIFICATION_TASKS
from evaluation.errors import InputError, Notice, Problem, ProblemCollector

TASKS = CLASSIFICATION_TASKS

#: The field that holds a line's answer, per task.
ANSWER_FIELD = {"single": "label", "multi": "labels", "ner": "tags"}

_TAG = re.compile(r"^(?P<prefix>[BI])-(?P<type>\S.*)$")
_SHOWN_IDS = 5

Source = str | os.PathLike[str] | bytes | BinaryIO


class GoldFormatError(InputError):
    """A gold (labels) file is malformed."""


class PredictionFormatError(InputError):
    """A prediction file is malformed or does not answer the gold (unknown, missing or duplicate ids)."""


@dataclass(frozen=True)
class LabelScore:
    """Precision, recall and F1 of one label (or entity type), with its counts."""

    precision: float
    recall: float
    f1: float
    support: int  # gold occurrences (examples, or entities for NER)
    predicted: int  # predicted occurrences

    def to_dict(self) -> dict[str, object]:
        return {
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "support": self.support,
            "predicted": self.predicted,
        }


@dataclass(frozen=True)
class ClassificationResult:
    """Macro-F1 of a prediction set, the per-label scores behind it, and its notices."""

    task: str
    macro_f1: float
    per_label: dict[str, LabelScore]
    n_examples: int
    warnings: list[Notice] = field(default_factory=list)
    # Macro-F1 per language when the gold lines carry a ``language`` field: the
    # innermost level of the LEXTREME aggregate for multilingual datasets.
    per_language: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        """JSON-friendly form, as ``python -m evaluation classify --json`` prints it."""
        return {
            "task": self.task,
            "macro_f1": self.macro_f1,
            "n_examples": self.n_examples,
            "per_label": {label: s.to_dict() for label, s in self.per_label.items()},
            "per_language": dict(self.per_language),
            "warnings": [w.to_dict() for w in self.warnings],
        }


# --------------------------------------------------------------------------- the measures


def scores_from_counts(tp: Counter[str], fp: Counter[str], fn: Counter[str]) -> tuple[float, dict[str, LabelScore]]:
    """Macro-F1 and per-label scores from per-label true positives, false positives and false negatives.

    Every task reduces to these counts; the labels averaged over are those with
    any count, i.e. those in the gold or the predictions. An empty set of labels
    (nothing in the gold, nothing predicted) scores 0.
    """
    labels = sorted(set(tp) | set(fp) | set(fn))
    per_label: dict[str, LabelScore] = {}
    for label in labels:
        t, p, n = tp[label], fp[label], fn[label]
        precision = t / (t + p) if t + p else 0.0
        recall = t / (t + n) if t + n else 0.0
        f1 = 2 * t / (2 * t + p + n) if t else 0.0
        per_label[label] = LabelScore(precision, recall, f1, support=t + n, predicted=t + p)
    macro = sum(s.f1 for s in per_label.values()) / len(per_label) if per_label else 0.0
    return macro, per_label


#: Where an example's contribution goes: true positive, false positive, false negative (columns of the counts).
TP, FP, FN = 0, 1, 2


def contributions(task: str, gold: object, pred: object) -> Iterator[tuple[str, int]]:
    """One example's counts as ``(label, TP | FP | FN)`` pairs (a label may come more than once, for NER).

    ``pred`` None is no prediction at all (the Ladder's empty run): only the gold's false negatives.
    Every macro-F1 here is :func:`scores_from_counts` of these pairs summed over the examples.
    """
    if task == "single":
        if gold == pred:
            yield cast("str", gold), TP
        else:
            yield cast("str", gold), FN
            if pred is not None:
                yield cast("str", pred), FP
    elif task == "multi":
        gs, ps = set(cast("Iterable[str]", gold)), set(cast("Iterable[str]", pred or ()))
        yield from ((label, TP) for label in gs & ps)
        yield from ((label, FN) for label in gs - ps)
        yield from ((label, FP) for label in ps - gs)
    elif task == "ner":
        g = cast("Sequence[str]", gold)
        p = cast("Sequence[str]", pred) if pred is not None else ["O"] * len(g)
        if len(g) != len(p):
            raise ValueError(f"a sequence has {len(g)} gold tags but {len(p)} predicted tags")
        ge, pe = set(bio_entities(g)), set(bio_entities(p))
        yield from ((e[0], TP) for e in ge & pe)
        yield from ((e[0], FN) for e in ge - pe)
        yield from ((e[0], FP) for e in pe - ge)
    else:
        raise ValueError(f"unknown task {task!r}: expected one of {', '.join(TASKS)}")


def _task_f1(task: str, gold: Sequence[object], pred: Sequence[object]) -> tuple[float, dict[str, LabelScore]]:
    _same_length(gold, pred)
    counts: tuple[Counter[str], Counter[str], Counter[str]] = (Counter(), Counter(), Counter())
    for g, p in zip(gold, pred, strict=True):
        for label, column in contributions(task, g, p):
            counts[column][label] += 1
    return scores_from_counts(*counts)


def single_label_f1(gold: Sequence[str], pred: Sequence[str]) -> tuple[float, dict[str, LabelScore]]:
    """Macro-F1 of aligned single-label answers (sklearn ``f1_score(average="macro", zero_division=0)``)."""
    return _task_f1("single", gold, pred)


def multi_label_f1(
    gold: Sequence[Iterable[str]], pred: Sequence[Iterable[str]]
) -> tuple[float, dict[str, LabelScore]]:
    """Macro-F1 of aligned label sets: per-label F1 over the binarized columns, then their mean."""
    return _task_f1("multi", gold, pred)


def bio_entities(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """Entities ``(type, start, end)`` (end exclusive) of a BIO tag sequence, seqeval default mode.

    A new entity starts at ``B-X``, at ``I-X`` after ``O``, and at any tag whose
    type differs from the previous tag's; it ends before ``O``, ``B-`` or a
    change of type. Tags must already be valid (``O``, ``B-X`` or ``I-X``).
    """
    entities: list[tuple[str, int, int]] = []
    current: str | None = None
    start = 0
    for i, tag in enumerate(tags):
        if tag == "O":
            prefix, type_ = "O", None
        else:
            prefix, type_ = tag[0], tag[2:]
        if current is not None and (prefix != "I" or type_ != current):
            entities.append((current, start, i))
            current = None
        if type_ is not None and current is None:
            current, start = type_, i
    if current is not None:
        entities.append((current, start, len(tags)))
    return entities


def orphan_inside_tags(tags: Sequence[str]) -> int:
    """How many ``I-X`` tags do not continue an ``X`` entity (they start a new one, as seqeval's default mode)."""
    count = 0
    previous = "O"
    for tag in tags:
        if tag.startswith("I-") and (previous == "O" or previous[2:] != tag[2:]):
            count += 1
        previous = tag
    return count


def ner_f1(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> tuple[float, dict[str, LabelScore]]:
    """Entity-level macro-F1 of aligned BIO tag sequences (seqeval ``f1_score(average="macro")``, default mode)."""
    return _task_f1("ner", gold, pred)


def _same_length(gold: Sequence[object], pred: Sequence[object]) -> None:
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold answers but {len(pred)} predictions")


# --------------------------------------------------------------------------- the files


@dataclass(frozen=True)
class GoldSet:
    """The gold answers of a split, in file order, with the label set predictions are checked against.

    ``labels`` is the declared label set — class labels (single, multi) or
    entity types (ner) — that predictions are checked against, or None when
    none was declared: then any label is accepted, and one the gold lacks is a
    false positive. (Refusing labels the gold lacks would tell a participant
    which labels a hidden split lacks.)
    ``languages`` maps ids to the optional ``language`` field of gold lines.
    """

    task: str
    ids: tuple[str, ...]
    answers: dict[str, object]
    labels: frozenset[str] | None
    languages: dict[str, str] = field(default_factory=dict)
    warnings: list[Notice] = field(default_factory=list)


@dataclass(frozen=True)
class Predictions:
    """A prediction file checked against its gold: one answer per gold id."""

    task: str
    answers: dict[str, object]
    warnings: list[Notice] = field(default_factory=list)


def read_gold(
    source: Source, *, task: str, name: str | None = None, labels: Iterable[str] | None = None
) -> GoldSet:
    """Read a gold JSONL file; raise ``GoldFormatError`` listing every bad line (up to ``MAX_PROBLEMS``).

    ``labels``, when given, is the dataset's declared label set (entity types for
    NER): gold labels outside it are refused too.
    """
    _check_task(task)
    path, lines = _read_lines(source, name, GoldFormatError)
    problems = ProblemCollector(path, GoldFormatError)
    declared = frozenset(str(x) for x in labels) if labels is not None else None
    answers: dict[str, object] = {}
    first_line: dict[str, int] = {}
    languages: dict[str, str] = {}
    orphans = 0
    for lineno, obj in _json_objects(lines, problems):
        doc_id = _read_id(obj, lineno, problems)
        answer = _read_answer(obj, task, lineno, problems, declared)
        if doc_id is None or answer is None:
            continue
        if doc_id in first_line:
            problems.add(lineno, f"id {doc_id!r} already on line {first_line[doc_id]}; each id must appear once")
            continue
        language = obj.get("language")
        if language is not None:
            if not isinstance(language, str) or not language:
                problems.add(lineno, f'"language" must be a language code such as "fr", got {language!r}')
                continue
            languages[doc_id] = language
        first_line[doc_id] = lineno
        answers[doc_id] = answer
        if task == "ner":
            orphans += orphan_inside_tags(cast(Sequence[str], answer))
    if not answers and not problems:
        problems.add(None, f'no examples: expected one JSON object per line, e.g. {_example(task)}')
    problems.raise_if_any()
    warnings = []
    if orphans:
        warnings.append(_orphan_notice(orphans, "gold"))
    return GoldSet(task, tuple(answers), answers, declared, languages, warnings)


def gold_to_jsonl(gold: GoldSet) -> str:
    """The gold set as canonical JSONL text (file order; id, answer, language), which ``read_gold`` reads back.

    What a server stores for a split (e.g. gzip-compressed like qrels) and
    caches per version: the same answers always give the same text, so its
    hash identifies a version.
    """
    key = ANSWER_FIELD[gold.task]
    lines = []
    for doc_id in gold.ids:
        answer = gold.answers[doc_id]
        obj: dict[str, object] = {"id": doc_id, key: answer if gold.task == "single" else list(answer)}  # type: ignore[call-overload]
        if doc_id in gold.languages:
            obj["language"] = gold.languages[doc_id]
        lines.append(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")
    return "".join(lines)


def read_predictions(source: Source, *, gold: GoldSet, name: str | None = None) -> Predictions:
    """Read a prediction JSONL file against its gold; raise ``PredictionFormatError`` naming lines and fixes.

    Refused: lines that are not JSON objects, ids missing or of the wrong type,
    ids the gold does not have, ids twice, gold ids without a prediction,
    labels (or entity types) outside the declared label set, tag sequences
    whose length differs from the gold's.
    """
    task = gold.task
    path, lines = _read_lines(source, name, PredictionFormatError)
    problems = ProblemCollector(path, PredictionFormatError)
    answers: dict[str, object] = {}
    first_line: dict[str, int] = {}
    orphans = 0
    for lineno, obj in _json_objects(lines, problems):
        doc_id = _read_id(obj, lineno, problems)
        answer = _read_answer(obj, task, lineno, problems, gold.labels)
        if doc_id is None or answer is None:
            continue
        if doc_id in first_line:
            problems.add(lineno, f"id {doc_id!r} already predicted on line {first_line[doc_id]}; keep one prediction per id")
            continue
        if doc_id not in gold.answers:
            problems.add(lineno, f"id {doc_id!r} is not in the gold set; predict only the split's ids")
            continue
        if task == "ner":
            expected = len(gold.answers[doc_id])  # type: ignore[arg-type]
            if len(answer) != expected:  # type: ignore[arg-type]
                problems.add(
                    lineno,
                    f"id {doc_id!r} has {len(answer)} tags but the example has {expected} tokens; "  # type: ignore[arg-type]
                    "give one tag per token",
                )
                continue
            orphans += orphan_inside_tags(cast(Sequence[str], answer))
        first_line[doc_id] = lineno
        answers[doc_id] = answer
    if not problems:
        missing = [i for i in gold.ids if i not in answers]
        if missing and not answers:
            problems.add(None, f"no predictions: expected one JSON object per line, e.g. {_example(task)}")
        elif missing:
            shown = ", ".join(repr(i) for i in missing[:_SHOWN_IDS])
            more = f" and {len(missing) - _SHOWN_IDS} more" if len(missing) > _SHOWN_IDS else ""
            problems.add(None, f"{len(missing)} ids of the gold set have no prediction: {shown}{more}; predict every id")
    problems.raise_if_any()
    warnings = [_orphan_notice(orphans, "predictions")] if orphans else []
    return Predictions(task, answers, warnings)


def evaluate_predictions(gold: GoldSet, predictions: Predictions) -> ClassificationResult:
    """Macro-F1 of checked predictions against their gold, with the notices of both files."""
    measure = {"single": single_label_f1, "multi": multi_label_f1, "ner": ner_f1}[gold.task]
    macro, per_label = measure(
        [gold.answers[i] for i in gold.ids], [predictions.answers[i] for i in gold.ids]  # type: ignore[misc]
    )
    per_language: dict[str, float] = {}
    for language in sorted(set(gold.languages.values())):
        ids = [i for i in gold.ids if gold.languages.get(i) == language]
        per_language[language] = measure(
            [gold.answers[i] for i in ids], [predictions.answers[i] for i in ids]  # type: ignore[misc]
        )[0]
    warnings = list(gold.warnings) + list(predictions.warnings)
    never = sorted(label for label, s in per_label.items() if s.support and not s.predicted)
    if never:
        what = "entity types" if gold.task == "ner" else "labels"
        warnings.append(
            Notice(
                "never_predicted",
                f"{len(never)} {what} of the gold are never predicted ({', '.join(never[:10])}"
                f"{', …' if len(never) > 10 else ''}); their F1 is 0 and counts in the macro average",
                len(never),
            )
        )
    return ClassificationResult(gold.task, macro, per_label, len(gold.ids), warnings, per_language)


def score_files(
    gold_source: Source,
    pred_source: Source,
    *,
    task: str,
    labels: Iterable[str] | None = None,
    gold_name: str | None = None,
    pred_name: str | None = None,
) -> ClassificationResult:
    """Read, check and score a gold file and a prediction file (what the command line does)."""
    gold = read_gold(gold_source, task=task, name=gold_name, labels=labels)
    predictions = read_predictions(pred_source, gold=gold, name=pred_name)
    return evaluate_predictions(gold, predictions)


# --------------------------------------------------------------------------- parsing helpers


def _check_task(task: str) -> None:
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; choose one of {', '.join(TASKS)}")


def _example(task: str) -> str:
    return {
        "single": '{"id": "1", "label": "civil"}',
        "multi": '{"id": "1", "labels": ["civil", "tax"]}',
        "ner": '{"id": "1", "tags": ["B-PER", "I-PER", "O"]}',
    }[task]


def _read_lines(source: Source, name: str | None, error_class: type[InputError]) -> tuple[str, list[bytes]]:
    if isinstance(source, bytes):
        path, data = name or "<bytes>", source
    elif isinstance(source, str | os.PathLike):
        path = name or os.fspath(source)
        try:
            with open(source, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            raise error_class(path, [Problem(None, f"cannot read the file: {exc.strerror or exc}")]) from exc
    else:
        path, data = name or getattr(source, "name", None) or "<file>", source.read()
        if isinstance(path, int):
            path = "<file>"
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return str(path), data.split(b"\n")


def _json_objects(lines: list[bytes], problems: ProblemCollector) -> Iterator[tuple[int, dict[str, object]]]:
    """Yield ``(line number, object)`` for every non-blank line, recording lines that are not JSON objects."""
    for lineno, raw in enumerate(lines, start=1):
        raw = raw.rstrip(b"\r")
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.add(lineno, f"not UTF-8 (byte {exc.start + 1}); save the file as UTF-8")
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            problems.add(lineno, f"not valid JSON ({exc.msg} at column {exc.colno}); write one JSON object per line")
            continue
        if not isinstance(obj, dict):
            problems.add(lineno, f"expected a JSON object such as {{\"id\": ...}}, got a JSON {_json_type(obj)}")
            continue
        yield lineno, obj


def _json_type(value: object) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number"


def _read_id(obj: dict[str, object], lineno: int, problems: ProblemCollector) -> str | None:
    """The line's id as a string; ints are accepted (``7`` and ``"7"`` are the same id)."""
    if "id" not in obj:
        problems.add(lineno, 'no "id" field; every line needs the id of the example it answers')
        return None
    value = obj["id"]
    if isinstance(value, bool) or not isinstance(value, str | int):
        problems.add(lineno, f'"id" must be a string or an integer, got a JSON {_json_type(value)}')
        return None
    text = str(value)
    if not text.strip():
        problems.add(lineno, '"id" is empty')
        return None
    return text


def _read_answer(
    obj: dict[str, object], task: str, lineno: int, problems: ProblemCollector, labels: frozenset[str] | None
) -> object | None:
    """The line's answer for ``task`` (a label, a label list or a tag list), or None after recording why not."""
    key = ANSWER_FIELD[task]
    if key not in obj:
        others = [f'"{k}" ({t})' for t, k in ANSWER_FIELD.items() if k != key and k in obj]
        hint = f"; this line has {others[0]}: is the task right?" if others else ""
        problems.add(lineno, f'no "{key}" field; a {task} line looks like {_example(task)}{hint}')
        return None
    value = obj[key]
    if task == "single":
        label = _label(value)
        if label is None:
            problems.add(lineno, f'"label" must be a string (or an integer), got a JSON {_json_type(value)}')
            return None
        if labels is not None and label not in labels:
            problems.add(lineno, f"unknown label {label!r}; the labels are {_shown(labels)}")
            return None
        return label
    if not isinstance(value, list):
        problems.add(lineno, f'"{key}" must be a JSON array, got a JSON {_json_type(value)}')
        return None
    if task == "multi":
        out: list[str] = []
        for item in value:
            label = _label(item)
            if label is None:
                problems.add(lineno, f'"labels" must hold strings (or integers), got a JSON {_json_type(item)}')
                return None
            if labels is not None and label not in labels:
                problems.add(lineno, f"unknown label {label!r}; the labels are {_shown(labels)}")
                return None
            if label not in out:
                out.append(label)
        return tuple(out)
    tags: list[str] = []
    for position, tag in enumerate(value, start=1):
        if not isinstance(tag, str):
            problems.add(lineno, f"tag {position} must be a string such as \"B-PER\" or \"O\", got a JSON {_json_type(tag)}")
            return None
        if tag != "O":
            match = _TAG.match(tag)
            if match is None:
                problems.add(lineno, f"tag {position} {tag!r} is not a BIO tag; use \"O\", \"B-TYPE\" or \"I-TYPE\"")
                return None
            if labels is not None and match["type"] not in labels:
                problems.add(lineno, f"tag {position} {tag!r}: unknown entity type; the types are {_shown(labels)}")
                return None
        tags.append(tag)
    return tuple(tags)


def _label(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    return str(value)


def _shown(labels: Iterable[str], limit: int = 12) -> str:
    ordered = sorted(labels)
    text = ", ".join(repr(x) for x in ordered[:limit])
    return text + (f" and {len(ordered) - limit} more" if len(ordered) > limit else "")


def _orphan_notice(count: int, where: str) -> Notice:
    return Notice(
        "orphan_inside_tags",
        f"{count} I- tags in the {where} do not continue an entity of their type; as in seqeval's default "
        "(conlleval) mode each starts a new entity",
        count,
    )
