"""The demo suite: load_demo adds the classification dataset and its baselines; the suite page aggregates."""

from __future__ import annotations

import io
import time

import pytest
from django.core.management import call_command
from django.urls import reverse

from catalogue.models import Benchmark, Dataset, QrelsVersion, Split, Topic
from demo.classification import (
    DATASET_SLUG,
    LANGUAGES,
    PER_LANGUAGE,
    TRAIN_PER_LANGUAGE,
    area_predictions,
    generate_areas,
    gold_jsonl,
)
from evaluation.classification import score_files
from submissions.models import Result, Submission

DEPTH = "100"


def load(*args: str) -> str:
    out = io.StringIO()
    call_command("load_demo", "--depth", DEPTH, *args, stdout=out)
    return out.getvalue()


def test_the_generator_is_seeded_and_shaped_as_described():
    examples = generate_areas()
    assert generate_areas() == examples and generate_areas(7) != examples
    assert len(examples) == PER_LANGUAGE * len(LANGUAGES)
    for language in LANGUAGES:
        mine = [e for e in examples if e.language == language]
        assert sum(e.split == "train" for e in mine) == TRAIN_PER_LANGUAGE
    counts = {}
    for e in examples:
        counts[e.label] = counts.get(e.label, 0) + 1
    assert max(counts, key=counts.get) == "civil" and len(counts) == 5


def test_the_linear_baseline_beats_random_which_beats_the_majority_on_macro_f1():
    examples = generate_areas()
    files = area_predictions(examples)
    f1 = {k: score_files(gold_jsonl(examples, "test"), v, task="single").macro_f1 for k, v in files.items()}
    assert f1["tfidf"] > 0.6 > f1["random"] > f1["majority"] > 0


@pytest.mark.slow  # > 2 s (docs/testing.md)
@pytest.mark.django_db
def test_load_demo_makes_a_suite_with_scored_classification_baselines(private_data_dir):
    started = time.monotonic()
    out = load()
    elapsed = time.monotonic() - started
    ds = Dataset.objects.get(slug=DATASET_SLUG)
    ds.full_clean()
    assert ds.task == Dataset.Task.SINGLE and ds.primary_measure == "macro-F1"
    assert ds.benchmark.slug == "demo" and ds.benchmark.aggregate == Benchmark.Aggregate.HARMONIC
    splits = {s.name: s for s in ds.splits.all()}
    assert not splits["train"].hidden and splits["test"].hidden
    assert splits["test"].topics.count() == (PER_LANGUAGE - TRAIN_PER_LANGUAGE) * len(LANGUAGES)
    subs = Submission.objects.filter(split=splits["test"])
    assert set(subs.values_list("system_name", flat=True)) == {"TF-IDF", "Majority class", "Random"}
    examples = generate_areas()
    files = area_predictions(examples)
    names = {"TF-IDF": "tfidf", "Majority class": "majority", "Random": "random"}
    for sub in subs:
        assert sub.is_baseline and sub.status == Submission.Status.SCORED and sub.is_public
        result = sub.results.get(qrels_version=splits["test"].current_qrels)
        expected = score_files(gold_jsonl(examples, "test"), files[names[sub.system_name]], task="single")
        assert result.scores["macro-F1"] == pytest.approx(expected.macro_f1, abs=1e-12)
        for language in LANGUAGES:
            assert result.scores[f"macro-F1/{language}"] == pytest.approx(expected.per_language[language], abs=1e-12)
    assert "classification baselines: 0 unchanged, 3 uploaded or rescored" in out
    assert elapsed < 60  # the whole demo; about 8 s on an idle machine


@pytest.mark.slow  # > 2 s (docs/testing.md)
@pytest.mark.django_db
def test_loading_twice_creates_no_duplicates_and_scores_nothing_again(private_data_dir):
    load()
    models = (Benchmark, Dataset, Split, Topic, QrelsVersion, Submission, Result)
    before = {m.__name__: m.objects.count() for m in models}
    results = dict(Result.objects.values_list("submission_id", "created_at"))
    out = load()
    assert {m.__name__: m.objects.count() for m in models} == before
    assert dict(Result.objects.values_list("submission_id", "created_at")) == results
    assert "classification baselines: 3 unchanged, 0 uploaded or rescored" in out


@pytest.mark.slow  # > 2 s (docs/testing.md)
@pytest.mark.django_db
def test_the_demo_suite_page_shows_an_aggregate_for_the_complete_systems(private_data_dir, client):
    from leaderboard.suites import suite_table

    load()
    table = suite_table(benchmark=Benchmark.objects.get(slug="demo"))
    assert [c.dataset.slug for c in table.columns] == ["demo", DATASET_SLUG]
    rows = {r.system: r for r in table.rows}
    for complete in ("TF-IDF", "Random"):
        row = rows[complete]
        assert not row.missing and row.aggregate is not None and row.rank is not None
        a, b = (c.value for c in row.cells)
        assert row.aggregate == pytest.approx(2 * a * b / (a + b))
    assert rows["TF-IDF"].rank == 1
    for incomplete, lacking in (("BM25 (bm25s, French stemmer)", "Demo legal area classification"),
                                ("Majority class", "Demo statutory retrieval")):
        assert rows[incomplete].aggregate is None and rows[incomplete].missing == [lacking]
    page = client.get(reverse("leaderboard:benchmark", args=["demo"]))
    html = page.content.decode()
    assert page.status_code == 200 and "suite-table" in html
    assert rows["TF-IDF"].aggregate_display in html and "incomplete" in html


def test_export_writes_the_classification_files_the_importer_and_the_core_read(tmp_path):
    from catalogue.importers import parse_classification

    call_command("load_demo", "--export", str(tmp_path), "--depth", "10", stdout=io.StringIO())
    root = tmp_path / "classification"
    test = parse_classification(task="single", split="test", file=("test.jsonl", (root / "test.jsonl").read_bytes()))
    assert len(test.gold.ids) == (PER_LANGUAGE - TRAIN_PER_LANGUAGE) * len(LANGUAGES)
    result = score_files(root / "test.jsonl", root / "predictions" / "tfidf.test.jsonl", task="single")
    assert result.macro_f1 > 0.6 and set(result.per_language) == set(LANGUAGES)
