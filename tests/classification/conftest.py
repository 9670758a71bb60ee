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


#: 36 hidden examples, ``TEST_GOLD`` three times over (t13…t24 and t25…t36 repeat t1…t12): supports 15, 12 and 9,
#: 18 examples per language. The Ladder's noisy margin asks a run to do better than its reference on
#: max(8, ⌈1.645 √changed⌉) more examples than it does worse, give or take its noise: on ``TEST_GOLD`` a first run
#: beats predicting "civil" everywhere on 7 examples at most (released with probability ≤ e^(−1)/2), so the tests
#: that need a released classification file use this split.
WIDE_GOLD = {f"t{12 * k + int(i[1:])}": answer for k in range(3) for i, answer in TEST_GOLD.items()}
#: Right on 35 of 36 (all but t3): 20 examples better than "civil" everywhere, none worse.
WIDE_PREDICTIONS = {i: label for i, (label, _) in WIDE_GOLD.items()} | {"t3": "civil"}


def upload(content: bytes, name: str = "predictions.jsonl") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="application/octet-stream")




def make_clf_dataset(test_gold: dict = TEST_GOLD):
    """``areas``: single-label, macro-F1 (and per language), a public train split and a hidden test split of
    ``test_gold``."""
    from catalogue.importers import import_classification
    from catalogue.models import Benchmark, Dataset

    bench = Benchmark.objects.create(slug="areas-bench", name="Areas benchmark")
    ds = Dataset.objects.create(
        benchmark=bench, slug="areas", name="Legal areas", language="fr,de", task=Dataset.Task.SINGLE,
        measures=["macro-F1", "macro-F1/fr", "macro-F1/de"], primary_measure="macro-F1",
        category_min_queries=5,  # 6 hidden examples per language: each is scored on its own (the floor is 5)
    )
    import_classification(dataset=ds, task="single", split="train", file=("train.jsonl", gold_file(TRAIN_GOLD)))
    import_classification(dataset=ds, task="single", split="test", file=("test.jsonl", gold_file(test_gold)),
                          hidden=True)
    return ds


@pytest.fixture
def clf_dataset(db):
    return make_clf_dataset()


@pytest.fixture
def test_split(clf_dataset):
    return clf_dataset.splits.get(name="test")


@pytest.fixture
def wide_dataset(db):
    """``areas`` with the hidden split of ``WIDE_GOLD``."""
    return make_clf_dataset(test_gold=WIDE_GOLD)


@pytest.fixture
def wide_split(wide_dataset):
    return wide_dataset.splits.get(name="test")
