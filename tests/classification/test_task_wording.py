"""Classification and NER pages speak of predictions and examples, not runs and queries; run-only tools refuse them."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from rest_framework.test import APIClient

from catalogue.models import Dataset
from submissions.models import Submission
from submissions.services import submission_create, submission_score_now

from .conftest import GOOD_PREDICTIONS, TEST_GOLD, WIDE_GOLD, WIDE_PREDICTIONS, predictions, upload

META = {"system_name": "Linear", "family": "lexical", "visibility": "public"}


def score(split, user, content: bytes, **meta):
    sub = submission_create(user=user, split=split, upload=upload(content), metadata={**META, **meta}, enqueue=False)
    return submission_score_now(sub.pk)


def test_the_empty_dataset_page_offers_predictions_and_the_classify_command(clf_dataset, client):
    html = client.get(reverse("leaderboard:dataset", args=["areas"]) + "?split=test").content.decode()
    assert "No submissions yet" in html and "Here is how to upload predictions to the test split" in html
    assert "upload a prediction file" in html and "JSON Lines" in html
    assert "python -m evaluation classify --gold gold.jsonl --pred predictions.jsonl --task single" in html
    assert "qid Q0 docid" not in html and "python -m evaluation score" not in html
    assert "Upload a run" not in html and "Upload predictions" in html


def test_a_retrieval_dataset_page_still_speaks_of_runs(tiny_dataset, client):
    html = client.get(reverse("leaderboard:dataset", args=[tiny_dataset.slug])).content.decode()
    assert "Upload a run" in html and "python -m evaluation score" in html and "classify" not in html


def test_the_submission_page_counts_evaluated_examples(wide_split, alice, client):
    sub = score(wide_split, alice, predictions(WIDE_PREDICTIONS))
    html = client.get(reverse("participants:detail", args=[sub.pk])).content.decode()
    assert f"{len(WIDE_GOLD)} evaluated examples, gold version 1" in html
    assert "evaluated quer" not in html


def test_a_refused_prediction_file_is_called_a_predictions_file(test_split, alice, client):
    sub = score(test_split, alice, predictions({**GOOD_PREDICTIONS, "t5": "family"}))
    assert sub.status == Submission.Status.FAILED
    assert sub.error["message"].startswith("The predictions file cannot be scored: line 5: ")
    client.force_login(alice)
    html = client.get(reverse("participants:detail", args=[sub.pk])).content.decode()
    assert "The prediction file could not be scored" in html and "run file" not in html


def test_the_compare_page_and_api_refuse_classification_entries_plainly(test_split, alice, bob, client):
    a = score(test_split, alice, predictions(GOOD_PREDICTIONS))
    b = score(test_split, bob, predictions({i: "civil" for i in TEST_GOLD}), system_name="All civil")
    words = "Comparison of per-query values is for retrieval datasets; Legal areas is a single-label classification"
    for ids in (f"{a.pk},{b.pk}", str(a.pk)):
        page = client.get(reverse("participants:compare"), {"ids": ids})
        assert page.status_code == 400 and words in page.content.decode()
    answer = APIClient().get(reverse("api:compare"), {"submissions": f"{a.pk},{b.pk}"})
    # The API answers 409 for entries that exist but cannot be compared (the request itself is well formed).
    assert answer.status_code == 409 and answer.json()["error"]["message"].startswith(words)


def test_fusion_refuses_classification_entries_plainly(wide_split, alice, bob, client):
    a = score(wide_split, alice, predictions(WIDE_PREDICTIONS))
    b = score(wide_split, bob, predictions({i: "civil" for i in WIDE_GOLD}), system_name="All civil")
    words = "Fusion is for retrieval datasets: Legal areas is a single-label classification dataset"
    api = APIClient()
    api.force_authenticate(bob)
    answer = api.post(reverse("api:fusions"), {"submissions": [a.pk, b.pk]}, format="json")
    assert answer.status_code == 409 and answer.json()["error"]["message"].startswith(words)
    client.force_login(bob)
    page = client.get(reverse("participants:fusion"), {"split": wide_split.pk})
    assert page.status_code == 400 and words in page.content.decode() and "Fuse and score" not in page.content.decode()
    assert Submission.objects.filter(user=bob).count() == 1  # only the upload


def test_the_api_run_file_help_names_both_formats(client, db):  # the schema lists the datasets' measures
    schema = client.get(reverse("api:schema"), HTTP_ACCEPT="application/json").content.decode()
    assert "qid Q0 docid rank score tag" in schema and "JSON Lines" in schema


@pytest.mark.parametrize("measures", [["macro-F1"], ["macro-F1", "macro-F1/fr", "macro-F1/de"]])
def test_a_classification_dataset_takes_macro_f1_measures(clf_dataset, measures):
    clf_dataset.measures, clf_dataset.primary_measure = measures, "macro-F1"
    clf_dataset.full_clean()


@pytest.mark.parametrize("bad", ["R@100", "accuracy", "macro-F1/", "macro-F1/fr/x", "micro-F1/fr"])
def test_a_classification_dataset_refuses_other_measures(clf_dataset, bad):
    clf_dataset.measures = ["macro-F1", bad]
    with pytest.raises(ValidationError) as info:
        clf_dataset.full_clean()
    message = " ".join(info.value.message_dict["measures"])
    assert bad in message and "macro-F1/<language>" in message


def test_a_retrieval_dataset_still_checks_its_measures_against_the_core(tiny_dataset):
    tiny_dataset.measures = ["macro-F1"]
    tiny_dataset.primary_measure = "macro-F1"
    assert tiny_dataset.task == Dataset.Task.RETRIEVAL
    with pytest.raises(ValidationError) as info:
        tiny_dataset.full_clean()
    assert "measures" in info.value.message_dict
