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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

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
from .bsard import parse_bsard
from .classification import ClassificationData, classification_import, import_classification, parse_classification
from .report import ImportReport, SplitReport
from .store import dataset_import, release_store
from .trec import parse_trec

FORMATS = ("bsard", "beir", "trec")
#: Formats of datasets that are not retrieval (classification, NER): one split per file.
PREDICTION_FORMATS = ("classification",)

__all__ = [
    "FORMATS",
    "PREDICTION_FORMATS",
    "ClassificationData",
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
