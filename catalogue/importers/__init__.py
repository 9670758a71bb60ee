"""Importers for released datasets: BSARD CSV, BEIR folders, plain TREC files, classification and NER files.

Parsing (``parse_bsard``, ``parse_beir``, ``parse_trec``,
``parse_classification``) is pure and refuses broken files with
``file:line: reason`` lines (:class:`ImportRefused`). Storing is
:func:`release_store` (:mod:`.store`), one transaction, which dispatches to
``dataset_import`` (retrieval) or ``classification_import`` (gold stored as a
canonical JSONL version of the split's judgments). The ``import_dataset``
command and the admin's upload form parse, then call
``submissions.services.release_import``, which stores through
:func:`release_store` and, when asked, publishes (rescoring submissions).

Each format is registered once, in :data:`IMPORTERS` (its name, its label, the
inputs it takes, its parser): the command's ``--format`` and the admin form's
choices are its keys, and both parse through it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from .base import (
    DatasetFileError,
    ImportData,
    ImportRefused,
    SplitData,
    TopicRow,
    files_from_directory,
    files_from_uploads,
    files_from_zip,
)
from .beir import parse_beir
from .bsard import ARTICLES, QUESTIONS, parse_bsard
from .classification import ClassificationData, classification_import, import_classification, parse_classification
from .report import ImportReport, SplitReport
from .store import dataset_import, release_store
from .trec import parse_trec

__all__ = [
    "IMPORTERS",
    "ClassificationData",
    "Importer",
    "Release",
    "Takes",
    "classification_import",
    "dataset_import",
    "release_store",
    "import_classification",
    "parse_classification",
    "DatasetFileError",
    "ImportData",
    "ImportRefused",
    "ImportReport",
    "SplitData",
    "SplitReport",
    "TopicRow",
    "files_from_directory",
    "files_from_uploads",
    "files_from_zip",
    "import_beir",
    "import_bsard",
    "import_trec",
    "parse_beir",
    "parse_bsard",
    "parse_trec",
]


def _store(dataset, data: ImportData, **options) -> ImportReport:
    return dataset_import(dataset=dataset, data=data, **options)


def import_bsard(*, dataset, files: Mapping[str, bytes], **options) -> ImportReport:
    """Parse and store a BSARD release (``articles_fr.csv``, ``questions_fr_{train,test}.csv``)."""
    return _store(dataset, parse_bsard(files), **options)


def import_beir(*, dataset, files: Mapping[str, bytes], hidden: Iterable[str] = ("test",), **options) -> ImportReport:
    """Parse and store a BEIR folder; splits named in ``hidden`` are created hidden."""
    return _store(dataset, parse_beir(files, hidden=hidden), **options)


def import_trec(
    *,
    dataset,
    split: str,
    topics: tuple[str, bytes] | None,
    qrels: tuple[str, bytes],
    corpus_ids: tuple[str, bytes] | None = None,
    hidden: bool = False,
    **options,
) -> ImportReport:
    """Parse and store one split from TREC topics and qrels (each given as (file name, bytes); topics may be None)."""
    data = parse_trec(split=split, topics=topics, qrels=qrels, corpus_ids=corpus_ids, hidden=hidden)
    return _store(dataset, data, **options)


# --- the registry: each format once --------------------------------------------------------------


class Takes(Enum):
    """The shape of a format's input: how the command line and the admin's form gather it (one branch each)."""

    FOLDER = "a release folder"  # the command: its path; the admin: its files, or one zip of the folder
    SPLIT_FILES = "one split's files"  # topics (for a new split), qrels, corpus ids: each its own file
    EXAMPLES = "one split's examples file"  # JSONL or CSV, with the split's name and the task


@dataclass(frozen=True)
class Release:
    """One release's inputs, as the command line (paths) or the admin's form (uploads) gathered them; a format's
    parser reads the ones its shape (:class:`Takes`) gives."""

    files: Mapping[str, bytes] = field(default_factory=dict)  # FOLDER: the files by relative name
    file: tuple[str, bytes] | None = None  # EXAMPLES: (name, bytes)
    split: str = ""  # SPLIT_FILES, EXAMPLES: the split's name
    topics: tuple[str, bytes] | None = None  # SPLIT_FILES: None for a new qrels version of a split with topics
    qrels: tuple[str, bytes] | None = None  # SPLIT_FILES
    corpus_ids: tuple[str, bytes] | None = None  # SPLIT_FILES, optional
    hidden: bool = False  # SPLIT_FILES, EXAMPLES: the split's labels are hidden
    hidden_splits: tuple[str, ...] = ("test",)  # FOLDER (beir): the splits with hidden labels
    task: str = "single"  # EXAMPLES: single, multi or ner


@dataclass(frozen=True)
class Importer:
    """One format: what the admin's choice and the command's help call it, what it takes, how it parses."""

    label: str
    takes: Takes
    parse: Callable[[Release], ImportData | ClassificationData]
    #: A classification or NER dataset's format (scored by macro-F1), not a retrieval dataset's.
    predictions: bool = False
    #: FOLDER: the names of the files it reads in a release folder (None: every file of the folder).
    folder_names: Callable[[Path], list[str]] | None = None

    def folder_files(self, root: Path) -> dict[str, bytes]:
        """A release folder's files this format reads, by relative name."""
        return files_from_directory(root, names=self.folder_names(root) if self.folder_names else None)


def _bsard(release: Release) -> ImportData:
    return parse_bsard(release.files)


def _bsard_names(root: Path) -> list[str]:
    return [ARTICLES, *QUESTIONS.values()]


def _beir(release: Release) -> ImportData:
    return parse_beir(release.files, hidden=release.hidden_splits)


def _beir_names(root: Path) -> list[str]:
    return ["corpus.jsonl", "queries.jsonl"] + [f"qrels/{p.name}" for p in sorted(root.glob("qrels/*.tsv"))]


def _trec(release: Release) -> ImportData:
    assert release.qrels is not None  # the command and the form ask for the qrels before parsing
    return parse_trec(split=release.split, topics=release.topics, qrels=release.qrels, corpus_ids=release.corpus_ids,
                      hidden=release.hidden)


def _classification(release: Release) -> ClassificationData:
    assert release.file is not None  # the command and the form ask for the file before parsing
    return parse_classification(task=release.task, split=release.split, file=release.file, hidden=release.hidden)


#: Every format by the name the command's ``--format`` and the admin's form take (the parsed release's ``format``).
IMPORTERS: dict[str, Importer] = {
    "bsard": Importer("bsard: BSARD's CSV files (articles_fr.csv, questions_fr_*.csv)", Takes.FOLDER, _bsard,
                      folder_names=_bsard_names),
    "beir": Importer("beir: a BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv)", Takes.FOLDER, _beir,
                     folder_names=_beir_names),
    "trec": Importer("trec: one split's TREC topics, qrels (qid 0 docid grade) and corpus ids", Takes.SPLIT_FILES,
                     _trec),
    "classification": Importer("classification: one split of a classification or NER dataset, JSONL or CSV",
                               Takes.EXAMPLES, _classification, predictions=True),
}
