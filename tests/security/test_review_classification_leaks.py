"""A hidden classification split: which gold labels occur is part of its answers.

The "never predicted" warning counts the gold labels a prediction file never
uses. Its label names are hidden already; its count is not a fact about the
file but about the gold: predicting every label but one says whether that
label occurs in the hidden split at all, one submission per label.
"""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from submissions.services import submission_create, submission_score_now
from tests.classification import conftest as clf
from tests.classification.conftest import TEST_GOLD, TRAIN_GOLD, predictions, upload

clf_dataset = clf.clf_dataset

pytestmark = [pytest.mark.django_db, pytest.mark.own_cache, pytest.mark.private_storage]


def _score(split, user, answers: dict, name: str):
    sub = submission_create(user=user, split=split, upload=upload(predictions(answers), f"{name}.jsonl"),
                            metadata={"system_name": name, "family": "lexical", "visibility": "public"},
                            enqueue=False)
    return submission_score_now(sub.pk)


def test_a_hidden_split_does_not_count_the_gold_labels_a_file_never_predicts(clf_dataset, alice, bob):
    test = clf_dataset.splits.get(name="test")
    # Every example "civil" or "criminal": is "tax" in the hidden gold? The count of never-predicted labels says.
    sub = _score(test, alice, {i: ("civil" if n % 2 else "criminal") for n, i in enumerate(TEST_GOLD)}, "probe")
    assert sub.status == "scored", sub.error
    assert any(w["code"] == "never_predicted" for w in sub.warnings)  # stored, for curators
    for user in (alice, bob):
        api = APIClient()
        api.force_authenticate(user)
        body = api.get(reverse("api:submission", args=[sub.pk])).json()
        assert all(w["code"] != "never_predicted" for w in body["warnings"]), body["warnings"]
        web = Client()
        web.force_login(user)
        assert "never predicted" not in web.get(sub.get_absolute_url()).content.decode()
    # A public split still says it, with the labels.
    train = clf_dataset.splits.get(name="train")
    public = _score(train, alice, {i: "civil" for i in TRAIN_GOLD}, "all-civil")
    page = Client().get(public.get_absolute_url()).content.decode()
    assert "never predicted" in page
