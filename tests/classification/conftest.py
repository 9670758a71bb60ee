"""Fixtures of the classification tests: a small single-label dataset imported like a curator would, and files."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

LABELS = ("civil", "criminal", "tax")

#: 12 test examples in French and German; gold labels by id.
TEST_GOLD = {
    "t1": ("civil", "fr"), "t2": ("civil", "fr"), "t3": ("criminal", "fr"), "t4": ("tax", "fr"),
    "t5": ("civil", "fr"), "t6": ("criminal", "fr"),
    "t7": ("civil", "de"), "t8": ("tax", "de"), "t9": ("tax", "de"), "t10": ("criminal", "de"),
    "t11": ("civil", "de"), "t12": ("criminal", "de"),
}
TRAIN_GOLD = {f"r{i}": (LABELS[i % 3], "fr" if i % 2 else "de") for i in range(1, 10)}


def jsonl(objs) -> bytes:
    return "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objs).encode()


def gold_file(gold: dict) -> bytes:
    return jsonl(
        {"id": i, "text": f"Exemple {i} sur le droit {label}.", "label": label, "language": lang}
        for i, (label, lang) in gold.items()
    )


def predictions(answers: dict) -> bytes:
    return jsonl({"id": i, "label": label} for i, label in answers.items())


#: A fair system: right on 11 of 12 (a significant improvement over predicting "civil" everywhere, a first
#: run's reference on a hidden split without a baseline).
GOOD_PREDICTIONS = {i: label for i, (label, _) in TEST_GOLD.items()} | {"t3": "civil"}


def upload(content: bytes, name: str = "predictions.jsonl") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="application/octet-stream")




def make_clf_dataset():
    """``areas``: single-label, macro-F1 (and per language), a public train split and a hidden test split."""
    from catalogue.importers import import_classification
    from catalogue.models import Benchmark, Dataset

    bench = Benchmark.objects.create(slug="areas-bench", name="Areas benchmark")
    ds = Dataset.objects.create(
        benchmark=bench, slug="areas", name="Legal areas", language="fr,de", task=Dataset.Task.SINGLE,
        measures=["macro-F1", "macro-F1/fr", "macro-F1/de"], primary_measure="macro-F1",
        category_min_queries=5,  # 6 hidden examples per language: each is scored on its own (the floor is 5)
    )
    import_classification(dataset=ds, task="single", split="train", file=("train.jsonl", gold_file(TRAIN_GOLD)))
    import_classification(dataset=ds, task="single", split="test", file=("test.jsonl", gold_file(TEST_GOLD)),
                          hidden=True)
    return ds


@pytest.fixture
def clf_dataset(db):
    return make_clf_dataset()


@pytest.fixture
def test_split(clf_dataset):
    return clf_dataset.splits.get(name="test")
