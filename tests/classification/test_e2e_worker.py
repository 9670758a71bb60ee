"""A prediction file through the real pipeline: browser form → queued row → a Celery worker process → scores.

The stored scores must equal the metric core's ``evaluate_predictions`` on the same files.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluation.classification import evaluate_predictions, read_gold, read_predictions
from submissions.models import Submission
from tests.waiting import wait_until_final

from .conftest import GOOD_PREDICTIONS, TEST_GOLD, gold_file, make_clf_dataset, predictions, upload

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

FINAL = (Submission.Status.SCORED, Submission.Status.FAILED)


def test_a_worker_scores_an_uploaded_prediction_file_like_the_metric_core(
    transactional_db, celery_worker_process, client, alice
):
    make_clf_dataset()
    client.force_login(alice)
    url = reverse("participants:upload", args=["areas"]) + "?split=test"
    meta = {"system_name": "Linear e2e", "family": "lexical", "visibility": "public"}

    good = predictions(GOOD_PREDICTIONS)
    response = client.post(url, {"run": upload(good), **meta})
    assert response.status_code == 302
    bad = predictions({k: v for k, v in GOOD_PREDICTIONS.items() if k != "t4"}) + b'{"id": "t1", "label": "tax"}\n'
    response = client.post(url, {"run": upload(bad, "bad.jsonl"), **meta, "system_name": "Broken e2e"})
    assert response.status_code == 302

    scored = wait_until_final(Submission.objects.get(system_name="Linear e2e").pk, celery_worker_process)
    assert scored.status == Submission.Status.SCORED, scored.error
    gold = read_gold(gold_file(TEST_GOLD), task="single")
    expected = evaluate_predictions(gold, read_predictions(good, gold=gold))
    result = scored.results.get()
    assert result.scores["macro-F1"] == pytest.approx(expected.macro_f1, abs=1e-12)
    assert result.scores["macro-F1/fr"] == pytest.approx(expected.per_language["fr"], abs=1e-12)

    failed = wait_until_final(Submission.objects.get(system_name="Broken e2e").pk, celery_worker_process)
    assert failed.status == Submission.Status.FAILED and failed.failure_kind == Submission.FailureKind.INPUT
    assert failed.error["details"][0] == {"line": 12, "reason": "id 't1' already predicted on line 1; keep one "
                                                                 "prediction per id"}
