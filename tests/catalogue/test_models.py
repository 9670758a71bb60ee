"""The curated models and the services that write them: invariants a curator relies on."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from catalogue.models import Corpus, QrelsVersion, Split, Topic
from catalogue.services import corpus_set, dataset_get_or_create, qrels_version_add, qrels_version_publish


def test_a_corpus_stores_sorted_unique_ids_and_changes_only_with_its_content(tiny_dataset):
    corpus, changed = corpus_set(dataset=tiny_dataset, ids=["d2", "d1", "d2"])
    assert changed and corpus.ids() == ["d1", "d2"] and corpus.n_documents == 2
    assert corpus_set(dataset=tiny_dataset, ids=["d1", "d2"]) == (corpus, False)
    assert Corpus.objects.count() == 1


def test_equal_judgments_make_one_qrels_version(tiny_dataset):
    split = tiny_dataset.splits.get(name="test")
    v1 = split.current_qrels
    same, created = qrels_version_add(split=split, qrels={"q4": {"d7": 0}, "q3": {"d6": 1, "d5": 1, "d4": 1},
                                                          "q2": {"d3": 1}, "q1": {"d2": 1, "d1": 2}})
    assert (same, created) == (v1, False)
    assert v1.text().splitlines()[0] == "q1 0 d1 2"
    assert (v1.n_topics, v1.n_judgments, v1.n_relevant) == (4, 7, 6)


def test_a_later_qrels_version_waits_to_be_published(tiny_dataset):
    split = tiny_dataset.splits.get(name="test")
    v1 = split.current_qrels
    v2, created = qrels_version_add(split=split, qrels={"q1": {"d1": 1}})
    split.refresh_from_db()
    assert created and v2.version == 2 and split.current_qrels == v1
    before = split.cache_version
    qrels_version_publish(split=split, version=v2, small_change_reason="a wrong judgment")  # hidden, 4 changes
    split.refresh_from_db()
    assert split.current_qrels == v2 and split.cache_version == before + 1


def test_versions_and_topics_are_unique_per_split(tiny_dataset):
    split = tiny_dataset.splits.get(name="test")
    with pytest.raises(IntegrityError), transaction.atomic():
        Topic.objects.create(split=split, qid="q1", text="again")
    with pytest.raises(IntegrityError), transaction.atomic():
        QrelsVersion.objects.create(split=split, version=1, qrels_gz=b"", sha256="y" * 64)
    with pytest.raises(IntegrityError), transaction.atomic():
        Split.objects.create(dataset=tiny_dataset, name="test")


def test_a_dataset_shows_scores_in_percent_with_two_decimals(tiny_dataset):
    assert tiny_dataset.format_value(0.51334) == "51.33"
    assert tiny_dataset.format_value(0.51334) == "51.33"
    assert tiny_dataset.format_value(None) == "–"


def test_submissions_go_to_the_hidden_split_by_default(tiny_dataset):
    assert tiny_dataset.default_split.name == "test"


def test_a_dataset_refuses_unknown_measures_and_a_foreign_primary_measure(tiny_dataset):
    tiny_dataset.measures = ["R@100", "Recall100"]
    with pytest.raises(ValidationError) as exc:
        tiny_dataset.clean()
    assert "measures" in exc.value.message_dict
    tiny_dataset.measures, tiny_dataset.primary_measure = ["R@100"], "MAP@100"
    with pytest.raises(ValidationError, match="primary measure"):
        tiny_dataset.clean()


def test_dataset_get_or_create_fills_sensible_defaults(db):
    ds, created = dataset_get_or_create(slug="new-set", name="New set", benchmark_slug="bench", benchmark_name="Bench")
    assert created and ds.benchmark.slug == "bench" and ds.primary_measure == "R@100"
    assert ds.benchmark.name == "Bench" and not ds.is_published  # a draft until a curator publishes it
    ds.language = "fr"
    ds.full_clean()
    assert dataset_get_or_create(slug="new-set") == (ds, False)
