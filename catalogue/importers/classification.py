"""Classification and NER datasets (LEXTREME-style): one split per file, JSONL or CSV.

Each line (or CSV row) is one example: its id, its text (or tokens for NER),
its gold answer and optionally its language.

JSONL, one object per line (other fields are ignored)::

    {"id": "fr-1", "text": "Le bail est résilié…", "label": "civil", "language": "fr"}      # --task single
    {"id": "fr-1", "text": "…", "labels": ["civil", "tax"], "language": "fr"}                   # --task multi
    {"id": "s-1", "tokens": ["Anna", "Meier", "klagt"], "tags": ["B-PER", "I-PER", "O"]}       # --task ner

CSV (a header row; ``.tsv`` files are tab-separated): columns ``id``, ``text``
and ``label`` (single); ``labels`` as a JSON list or ``a|b`` (multi);
``tokens`` and ``tags`` as JSON lists or space-separated (ner); ``language``
optional everywhere.

The examples become the split's topics (the text, the language as category,
NER tokens in ``extra``), and the gold answers a version of the split's
judgments whose text is ``evaluation.classification.gold_to_jsonl(gold)``
(:func:`gold_version_add`) — hidden like qrels, scored by
``submissions.services.predictions``. A refused file writes nothing and names
``file:line: reason``; importing the same file again changes nothing.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from typing import cast

from django.db import transaction
from django.db.models import Max

from evaluation.classification import ANSWER_FIELD, TASKS, GoldSet, bio_entities, gold_to_jsonl, read_gold
from evaluation.errors import InputError, Problem
from lexboard.text import count, plural

from ..models import QrelsVersion, Split
from ..services import qrels_version_publish
from .base import SPLIT_NAME, DatasetFileError, ImportRefused, Problems, TopicRow, decode_text, jsonl_objects
from .report import ImportReport, SplitReport
from .topics import topics_store

FORMAT = "classification"


@dataclass
class ClassificationData:
    """One parsed split of a classification or NER dataset."""

    task: str
    split: str
    hidden: bool
    topics: list[TopicRow]
    gold: GoldSet
    source: str
    format: str = FORMAT
    notices: list[str] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return self.split if self.split in ("train", "dev", "test") else ("test" if self.hidden else "dev")


@dataclass
class GoldSplitReport(SplitReport):
    """A split report in the words of classification: examples and labels, not topics and judgments."""

    labels: int = 0  # distinct labels (entity types for NER)
    answers: int = 0  # labels given (entities for NER)
    task: str = "single"

    def line(self) -> str:
        state = "hidden" if self.hidden else "public"
        head = f"split {self.name} ({state}{', new' if self.split_created else ''}): "
        if self.topics_created or self.topics_updated:
            t = f"{count(self.topics, 'example')} ({self.topics_created} new, {self.topics_updated} updated)"
        else:
            t = f"{count(self.topics, 'example')} (unchanged)"
        what = "entities" if self.task == "ner" else "labels"
        kinds = "entity types" if self.task == "ner" else "distinct labels"
        j = f"{self.answers} gold {what} ({self.labels} {kinds})"
        if self.qrels_created and self.published:
            g = f"gold v{self.qrels_version} added and published"
        elif self.qrels_created:
            g = (f"gold v{self.qrels_version} added, NOT published (v{self.current_version} stays current; "
                 "publish it in the admin or import again with --publish)")
        elif self.published:
            g = f"gold unchanged (v{self.qrels_version}), now published"
        else:
            g = f"gold unchanged (v{self.qrels_version}{', current' if self.current_version == self.qrels_version else ''})"
        if self.rescored:
            g += f", {count(self.rescored, 'submission')} queued for rescoring"
        return head + "; ".join([t, j, g])


# --- parsing -------------------------------------------------------------------------------


def _str_list(value, *, sep: str | None) -> list[str] | None:
    """A JSON list of strings, or (CSV) a string split on ``sep``; None when neither."""
    if isinstance(value, list):
        return [str(v) for v in value] if all(isinstance(v, str | int) and not isinstance(v, bool) for v in value) else None
    if isinstance(value, str) and sep is not None:
        text = value.strip()
        if text.startswith("["):
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError:
                return None
            return _str_list(parsed, sep=None)
        return [v.strip() for v in (text.split(sep) if sep != " " else text.split()) if v.strip()]
    return None


def _rows_jsonl(text: str, problems: Problems):
    example = '{"id": "1", "text": "…", "label": "civil"}'
    for n, obj in jsonl_objects(text, problems, example=example):
        yield n, obj, False


def _rows_csv(text: str, name: str, problems: Problems):
    delimiter = "\t" if name.lower().endswith(".tsv") else ","
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    if not reader.fieldnames or "id" not in [f.strip() for f in reader.fieldnames]:
        problems.add(1, "the first row must name the columns: id, text, label (or labels, or tokens and tags), "
                        "and optionally language")
        return
    reader.fieldnames = [f.strip() for f in reader.fieldnames]
    for row in reader:
        # The row's first line: the reader counts every physical line it read, blank ones and the
        # line breaks inside quoted fields included.
        line = reader.line_num - sum(str(v).count("\n") for v in row.values() if v)
        if None in row:
            problems.add(line, f"has more columns than the header ({len(reader.fieldnames)})")
            continue
        if not any((v or "").strip() for v in row.values()):
            continue
        yield line, {k: v for k, v in row.items() if v is not None}, True


def _example(task: str) -> str:
    return {
        "single": '{"id": "1", "text": "…", "label": "civil"}',
        "multi": '{"id": "1", "text": "…", "labels": ["civil", "tax"]}',
        "ner": '{"id": "1", "tokens": ["Anna", "klagt"], "tags": ["B-PER", "O"]}',
    }[task]


def parse_classification(*, task: str, split: str, file: tuple[str, bytes], hidden: bool = False) -> ClassificationData:
    """Parse one split's examples and gold answers (JSONL, or CSV/TSV by the file's extension).

    Raises :class:`ImportRefused` listing every bad line (up to the usual cap);
    the gold itself is checked by the metric core's ``read_gold``, so the
    importer accepts exactly what scoring reads.
    """
    name, data = file
    errors: list[InputError] = []
    if task not in TASKS:
        errors.append(DatasetFileError("--task", [Problem(None, f'"{task}" is not a task; use single, multi or ner')]))
    if not SPLIT_NAME.match(split or ""):
        errors.append(DatasetFileError("--split", [Problem(None, f'"{split}" is not a split name, e.g. test or train')]))
    if errors:
        raise ImportRefused(errors)
    problems = Problems(name)
    topics: list[TopicRow] = []
    gold_lines: list[str] = []
    line_of: list[int] = []  # gold line i+1 → the file's line
    key = ANSWER_FIELD[task]
    try:
        text = decode_text(data, problems)
        if text is not None:
            is_csv = name.lower().endswith((".csv", ".tsv"))
            rows = _rows_csv(text, name, problems) if is_csv else _rows_jsonl(text, problems)
            for n, obj, from_csv in rows:
                row = _example_row(obj, n, task, key, from_csv, problems)
                if row is None:
                    continue
                topic, gold = row
                topics.append(topic)
                gold_lines.append(json.dumps(gold, ensure_ascii=False))
                line_of.append(n)
            if not topics and not problems:
                problems.add(None, f"holds no example — one per line, e.g. {_example(task)}")
    except Problems.Full:
        pass
    if (err := problems.error()) is not None:
        raise ImportRefused([err])
    try:
        gold = read_gold(("\n".join(gold_lines) + "\n").encode(), task=task, name=name)
    except InputError as exc:
        mapped = [Problem(line_of[p.line - 1] if p.line else None, p.reason) for p in exc.problems]
        raise ImportRefused([DatasetFileError(name, mapped)]) from None
    notices = [f"{name}: {w.message}" for w in gold.warnings]
    return ClassificationData(task=task, split=split, hidden=hidden, topics=topics, gold=gold, source=name, notices=notices)


def _example_row(obj: dict, n: int, task: str, key: str, from_csv: bool, problems: Problems):
    """One example as (topic, gold line object), or None after recording why not."""
    raw_id = obj.get("id")
    if isinstance(raw_id, bool) or not isinstance(raw_id, str | int) or not str(raw_id).strip():
        problems.add(n, 'no "id" — every example needs an id (a string or an integer)')
        return None
    doc_id = str(raw_id).strip()
    if len(doc_id) > 100 or any(c.isspace() for c in doc_id):
        problems.add(n, f"id {doc_id[:40]!r} is longer than 100 characters or contains spaces")
        return None
    language = obj.get("language")
    if language in ("", None):
        language = None
    elif not isinstance(language, str) or len(language) > 100:
        problems.add(n, f'"language" must be a language code such as "fr", got {language!r}')
        return None
    tokens = None
    if task == "ner":
        tokens = _str_list(obj.get("tokens"), sep=" " if from_csv else None)
        if not tokens:
            problems.add(n, f'no "tokens" — an NER example is a list of tokens with one tag each, e.g. {_example(task)}')
            return None
    text = obj.get("text")
    if text is None and tokens is not None:
        text = " ".join(tokens)
    if not isinstance(text, str) or not text.strip():
        problems.add(n, f'no "text" — every example needs its text, e.g. {_example(task)}')
        return None
    if key not in obj or obj[key] in (None, ""):
        if not (task == "multi" and obj.get(key) == "" and from_csv):
            problems.add(n, f'no "{key}" — a {task} example looks like {_example(task)}')
            return None
    answer = obj.get(key)
    if from_csv and task == "multi":
        answer = _str_list(answer or "", sep="|")
    elif from_csv and task == "ner":
        answer = _str_list(answer, sep=" ")
    if task == "ner" and tokens is not None and isinstance(answer, list) and len(answer) != len(tokens):
        problems.add(n, f"{len(tokens)} tokens but {len(answer)} tags — give one tag per token")
        return None
    gold: dict = {"id": doc_id, key: answer}
    if language:
        gold["language"] = language
    extra = {"tokens": tokens} if tokens is not None else {}
    return TopicRow(qid=doc_id, text=text.strip(), category=(language or "")[:100], extra=extra), gold


# --- storing ------------------------------------------------------------------------------


def gold_counts(gold: GoldSet) -> tuple[int, int]:
    """(answers, distinct labels): labels given (entities for NER) and the labels (entity types) they use."""
    if gold.task == "ner":
        entities = [e for tags in gold.answers.values() for e in bio_entities(tags)]  # type: ignore[arg-type]
        return len(entities), len({e[0] for e in entities})
    if gold.task == "multi":
        # A multi-label gold's answers are tuples of labels (read_gold).
        labels = [label for answer in gold.answers.values() for label in cast("tuple[str, ...]", answer)]
        return len(labels), len(set(labels))
    return len(gold.answers), len(set(gold.answers.values()))


@transaction.atomic
def gold_version_add(*, split, gold: GoldSet, note: str = "", user=None, publish: bool | None = None):
    """Add the gold answers as a new version of the split's judgments, unless identical ones exist.

    The classification counterpart of ``catalogue.services.qrels_version_add``
    (same versioning, hashing and publication rules): the stored text is
    ``gold_to_jsonl(gold)``, canonical, so the same answers give one version.
    Returns (version, created).
    """
    blob, digest = QrelsVersion.pack(gold_to_jsonl(gold))
    existing = QrelsVersion.objects.filter(split=split, sha256=digest).first()
    if existing is not None:
        return existing, False
    Split.objects.select_for_update(no_key=True).filter(pk=split.pk).first()
    last = QrelsVersion.objects.filter(split=split).aggregate(m=Max("version"))["m"] or 0
    answers, _ = gold_counts(gold)
    version = QrelsVersion.objects.create(
        split=split, version=last + 1, qrels_gz=blob, sha256=digest, n_topics=len(gold.ids),
        n_judgments=answers, n_relevant=answers, note=note, created_by=user,
    )
    if publish is None:
        publish = split.current_qrels_id is None
    if publish:
        qrels_version_publish(split=split, version=version)
    return version, True


def classification_import(*, dataset, data: ClassificationData, user=None, note: str = "",
                          dry_run: bool = False, keep_topics: bool = False) -> ImportReport:
    """Store a parsed split in one transaction: the examples as topics, the gold as a judgments version.

    The dataset's task must be the file's (a single-label gold cannot score
    NER predictions). The first gold version of a split is published; a later
    one by ``submissions.services.release_import(publish=True)``, which
    rescores the split's submissions.
    Existing splits keep their hidden flag and caps; examples are stored as topics by
    :func:`.topics.topics_store` (with ``keep_topics``, existing ones are left as they are). With ``dry_run``
    everything is checked and reported, then rolled back.
    """
    if dataset.task != data.task:
        reason = (f"dataset {dataset.slug} is a {dataset.get_task_display()} dataset (task {dataset.task}), "
                  f"not {data.task} — import with --task {dataset.task}, or change the dataset's task in the admin")
        raise ImportRefused([DatasetFileError("--task", [Problem(None, reason)])])
    report = ImportReport(dataset=dataset.slug, format=FORMAT, dry_run=dry_run, notices=list(data.notices),
                          corpus_status="")
    with transaction.atomic():
        split, created = Split.objects.get_or_create(
            dataset=dataset, name=data.split, defaults={"kind": data.kind, "hidden": data.hidden}
        )
        sr = GoldSplitReport(name=split.name, hidden=split.hidden, split_created=created, task=data.task)
        report.splits.append(sr)
        if not created and split.hidden != data.hidden:
            sr.warnings.append(
                f"the split exists and is {'hidden' if split.hidden else 'public'}; the import keeps that "
                f"(the command asked for {'hidden' if data.hidden else 'public'}) — change it in the admin if needed"
            )
        sr.topics = len(data.topics)
        changes = topics_store(split=split, rows=data.topics, keep_existing=keep_topics)
        sr.topics_created, sr.topics_updated, sr.topics_kept = changes.created, changes.updated, changes.kept
        sr.topic_notes = changes.notes(thing="example", things="examples")
        if sr.topics_kept:
            sr.warnings.append(f"{count(sr.topics_kept, 'example')} already in the split "
                               f"{plural(sr.topics_kept, 'is', 'are')} not in this file; "
                               f"{plural(sr.topics_kept, 'it was', 'they were')} kept as topics but "
                               f"{plural(sr.topics_kept, 'is', 'are')} not in the new gold")
        sr.answers, sr.labels = gold_counts(data.gold)
        sr.judged_topics = len(data.gold.ids)
        version, version_created = gold_version_add(split=split, gold=data.gold, note=note, user=user)
        split.refresh_from_db(fields=["current_qrels", "pending_qrels"])
        sr.qrels_version, sr.qrels_created = version.version, version_created
        sr.published = version_created and split.current_qrels_id == version.pk
        sr.current_version = split.current_qrels.version if split.current_qrels is not None else None
        if (sr.topics_created or sr.topics_updated) and not sr.published:
            split.bump_cache_version()
        if dry_run:
            transaction.set_rollback(True)
    return report


def import_classification(*, dataset, task: str, split: str, file: tuple[str, bytes], hidden: bool = False,
                          **options) -> ImportReport:
    """Parse and store one split of a classification or NER dataset (``file`` given as (name, bytes))."""
    return classification_import(dataset=dataset, data=parse_classification(task=task, split=split, file=file,
                                                                             hidden=hidden), **options)
