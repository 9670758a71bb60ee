"""What a system was trained on, which models it uses, what it could have seen: the provenance of an entry.

One home for the vocabulary (:class:`TrainingData`, :class:`CouldHaveSeen`), the
``models_used`` format (one ``id licence`` per line, read by :func:`parse_models`
with line-numbered problems), the one rule of when an entry's provenance is
complete (:func:`provenance_gaps`: the board's "disclosed" mark, the refusal of a
split that requires it) and how a fusion's provenance follows from its parts
(:func:`fused_provenance`). The values are stated by participants; nothing here
checks them against the system.

The vocabulary is code, not data: the forms, the API schema's enums and the
board's filters read these classes, so a value cannot appear in one and not the
others.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from django.core.exceptions import ValidationError
from django.db import models


class TrainingData(models.TextChoices):
    """The data closest to the task that the system was trained or tuned on (when several: the closest one)."""

    NONE = "none", "none (nothing trained, e.g. BM25)"
    TRAIN_SPLIT = "train_split", "this dataset's train split"
    OTHER_LEGAL = "other_legal", "other legal corpora"
    WEB_SCALE = "web_scale", "web-scale data only"
    UNKNOWN = "unknown", "unknown (not stated)"


class CouldHaveSeen(models.TextChoices):
    """Whether the system (its training data, its models' pre-training) could have seen this split's test data."""

    NO = "no", "neither the corpus nor the test questions"
    CORPUS = "corpus", "the corpus"
    TEST_QUESTIONS = "test_questions", "the test questions"
    BOTH = "both", "the corpus and the test questions"
    UNKNOWN = "unknown", "unknown (not stated)"


#: Short words for a table cell (the LaTeX export, the board's mark).
TRAINING_SHORT = {"none": "none", "train_split": "train", "other_legal": "legal", "web_scale": "web",
                  "unknown": "?"}
SEEN_SHORT = {"no": "no", "corpus": "corpus", "test_questions": "questions", "both": "both", "unknown": "?"}

#: From the least to the most task-specific: a fusion states the most specific of its parts' (unknown above all).
_TRAINING_ORDER = [TrainingData.NONE, TrainingData.WEB_SCALE, TrainingData.OTHER_LEGAL, TrainingData.TRAIN_SPLIT,
                   TrainingData.UNKNOWN]

NOTE_MAX_LENGTH = 500
MAX_MODELS = 20
MODEL_ID_MAX_LENGTH = 200
LICENCE_MAX_LENGTH = 100
MODELS_MAX_LENGTH = MAX_MODELS * (MODEL_ID_MAX_LENGTH + LICENCE_MAX_LENGTH + 2)
#: A model identifier: a hub name (``BAAI/bge-m3``), an API model (``openai:text-embedding-3-large``), a file name.
_MODEL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$")
#: A licence that says nothing: the entry's provenance is not complete with it.
UNKNOWN_LICENCES = frozenset({"unknown", "?", "n/a", "na", "none", "-"})
MODELS_EXAMPLE = "BAAI/bge-m3 MIT"
MODELS_FORMAT = ("one model per line: its identifier, a space, its licence (an SPDX id such as Apache-2.0, or "
                 f"`proprietary`), e.g. `{MODELS_EXAMPLE}`")


#: The words of the forms (upload, edit, image) and of the API's schema.
FIELD_LABELS = {
    "training_data": "Trained on",
    "training_data_note": "Training data, in words",
    "models_used": "Models and their licences",
    "could_have_seen": "Could have seen the test data",
}
FIELD_HELP = {
    "training_data": "The data closest to this task that the system (or a model it uses) was trained or tuned on; "
    "when several apply, the closest: this dataset's train split, then other legal corpora, then web-scale data.",
    "training_data_note": "In a few words: which data, how it was used (fine-tuning, few-shot examples, …).",
    "models_used": "One model per line: its identifier, a space, its licence, e.g. “BAAI/bge-m3 MIT” or "
    "“openai:gpt-4o proprietary”. Leave empty when nothing was trained (e.g. BM25).",
    "could_have_seen": "Could the system or its models have seen this split's corpus or its test questions "
    "(in their training data, a web crawl, or while tuning)?",
}


@dataclass(frozen=True)
class ModelUsed:
    """One line of ``models_used``."""

    id: str
    licence: str

    def as_dict(self) -> dict[str, str]:
        return {"id": self.id, "licence": self.licence}


def _model_problems(text: str) -> tuple[list[ModelUsed], list[str]]:
    models_: list[ModelUsed] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate((text or "").splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        model_id, _, licence = line.partition(" ")
        model_id, licence = model_id.strip(), " ".join(licence.split())
        if not licence:
            problems.append(f"line {number}: {model_id!r} has no licence; write {MODELS_FORMAT}")
        elif len(model_id) > MODEL_ID_MAX_LENGTH or not _MODEL_ID.match(model_id):
            problems.append(f"line {number}: {model_id[:60]!r} is not a model identifier (letters, digits and "
                            f". _ : / @ + -, at most {MODEL_ID_MAX_LENGTH} characters), e.g. `{MODELS_EXAMPLE}`")
        elif len(licence) > LICENCE_MAX_LENGTH:
            problems.append(f"line {number}: the licence is longer than {LICENCE_MAX_LENGTH} characters; give its "
                            "SPDX id or name (e.g. Apache-2.0) and put details in the training data note")
        elif model_id in seen:
            continue  # listed once: the first line's licence is kept (normalize_models stores the list without it)
        else:
            seen[model_id] = number
            models_.append(ModelUsed(model_id, licence))
    if len(models_) > MAX_MODELS:
        problems.append(f"{len(models_)} models; list at most {MAX_MODELS} (the ones that make the ranking)")
    return models_, problems


#: The exact text the API takes (its schema's pattern): 1 to MAX_MODELS lines ``id licence``, one space between,
#: ``\n`` between lines, nothing around; the licence up to five words of printable ASCII (an SPDX id, `proprietary`,
#: `CC BY 4.0`). What a form or the client sends is put in this shape first (:func:`normalize_models`). The empty
#: field (nothing trained) is the schema's other branch (``maxLength: 0``), not this pattern's: a pattern that took
#: ``""`` as well made ``""`` match both branches of the schema's ``oneOf``, i.e. refused by the schema while the
#: server takes it (Schemathesis' live run failed on it, stop 44).
_LINE = r"[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199} [!-~]{1,19}(?: [!-~]{1,19}){0,4}"
MODELS_PATTERN = rf"^{_LINE}(?:\n{_LINE}){{0,{MAX_MODELS - 1}}}$"


def validate_models_used(text: str) -> None:
    """The model field's validator: every problem with its line (``line 2: 'bge' has no licence; …``)."""
    _, problems = _model_problems(text)
    if problems:
        raise ValidationError(problems)


def parse_models(text: str) -> list[ModelUsed]:
    """The models of a stored (valid) ``models_used``; lines that do not read are skipped."""
    return _model_problems(text)[0]


def normalize_models(text: str) -> str:
    """``models_used`` as stored: one ``id licence`` per line, blank lines and repeated spaces removed."""
    return "\n".join(f"{m.id} {m.licence}" for m in parse_models(text))


class Provenanced(Protocol):
    training_data: str
    could_have_seen: str
    models_used: str


@dataclass(frozen=True)
class Gap:
    """A part of the provenance that is not stated: the field and what to do."""

    field: str
    fix: str

    @property
    def reason(self) -> str:
        return f"{self.field}: {self.fix}"


def provenance_gaps(*, training_data: str, could_have_seen: str, models_used: str) -> list[Gap]:
    """THE rule of complete provenance (the "disclosed" mark; what a split that requires it asks at upload).

    Complete: the training data and what the system could have seen are stated (not ``unknown``), and a system
    trained on anything lists its models, each with a licence that says something.
    """
    gaps: list[Gap] = []
    if training_data not in TrainingData.values or training_data == TrainingData.UNKNOWN:
        gaps.append(Gap("training_data", "say what the system was trained on: "
                                         + ", ".join(v for v in TrainingData.values if v != TrainingData.UNKNOWN)))
    if could_have_seen not in CouldHaveSeen.values or could_have_seen == CouldHaveSeen.UNKNOWN:
        gaps.append(Gap("could_have_seen", "say whether the system could have seen this split's corpus or test "
                                           "questions: "
                                           + ", ".join(v for v in CouldHaveSeen.values if v != CouldHaveSeen.UNKNOWN)))
    listed = parse_models(models_used)
    if not listed and training_data not in (TrainingData.NONE, TrainingData.UNKNOWN):
        gaps.append(Gap("models_used", f"list the models the system uses, {MODELS_FORMAT}"))
    for model in listed:
        if model.licence.lower() in UNKNOWN_LICENCES:
            gaps.append(Gap("models_used", f"give the licence of {model.id} (an SPDX id such as Apache-2.0, or "
                                           "`proprietary`)"))
    return gaps


def gaps_of(entry: Provenanced) -> list[Gap]:
    return provenance_gaps(training_data=entry.training_data, could_have_seen=entry.could_have_seen,
                           models_used=entry.models_used)


def refusal_message(gaps: list[Gap], *, split_name: str) -> str:
    """What an upload to a split that requires provenance is told (before it costs a slot)."""
    fields = ", ".join(dict.fromkeys(g.field for g in gaps))
    return (f"The split {split_name} asks every entry to state its provenance, and this one does not yet "
            f"({fields}): " + "; ".join(g.reason for g in gaps) + ". Add them and upload again; nothing was "
            "counted against your quota.")


def fused_provenance(parts: Iterable[Provenanced]) -> dict[str, str]:
    """A fusion's provenance from its parts': the most task-specific training data (``unknown`` if any part's
    is), every part's models, and whatever any part could have seen (``unknown`` if any part's is)."""
    parts = list(parts)
    training = max((p.training_data for p in parts), key=lambda v: _TRAINING_ORDER.index(TrainingData(v)),
                   default=TrainingData.UNKNOWN)
    seen_values = {p.could_have_seen for p in parts}
    if not parts or CouldHaveSeen.UNKNOWN in seen_values:
        seen = CouldHaveSeen.UNKNOWN
    else:
        corpus = bool(seen_values & {CouldHaveSeen.CORPUS, CouldHaveSeen.BOTH})
        questions = bool(seen_values & {CouldHaveSeen.TEST_QUESTIONS, CouldHaveSeen.BOTH})
        seen = (CouldHaveSeen.BOTH if corpus and questions else CouldHaveSeen.CORPUS if corpus
                else CouldHaveSeen.TEST_QUESTIONS if questions else CouldHaveSeen.NO)
    listed: dict[str, ModelUsed] = {}
    for part in parts:
        for model in parse_models(part.models_used):
            listed.setdefault(model.id, model)
    return {
        "training_data": str(training),
        "could_have_seen": str(seen),
        "models_used": "\n".join(f"{m.id} {m.licence}" for m in list(listed.values())[:MAX_MODELS]),
    }


def upgrade_legacy_fields(fields: dict) -> None:
    """A submission's fields as serialized before provenance (an archive of an older Lexboard), in place: the old
    yes/no ``used_training_data`` as the migration reads it (yes: the train split; no: unknown)."""
    if "used_training_data" in fields:
        used = fields.pop("used_training_data")
        fields.setdefault("training_data", TrainingData.TRAIN_SPLIT if used else TrainingData.UNKNOWN)


FUSION_NOTE = ("Derived from the fused entries: the most task-specific training data of any of them (unknown "
               "if any is), what any of them could have seen, and all their models.")
