"""Multi-label and NER uploads, the API, and rescoring on a new gold version, through the product's path."""

from __future__ import annotations

import pytest
from django.urls import reverse

from catalogue.importers import import_classification, parse_classification
from catalogue.models import Benchmark, Dataset
from evaluation.classification import evaluate_predictions, read_gold, read_predictions
from submissions.models import Result, Submission
from submissions.services import release_import, submission_create, submission_rescore_on, submission_score_now

from .conftest import GOOD_PREDICTIONS, TEST_GOLD, gold_file, jsonl, predictions, upload

pytestmark = pytest.mark.django_db

META = {"system_name": "Tagger", "family": "other", "visibility": "public"}

NER_GOLD = [
    {"id": "s1", "tokens": ["Anna", "Meier", "klagt", "in", "Bern"], "tags": ["B-PER", "I-PER", "O", "O", "B-LOC"],
     "language": "de"},
    {"id": "s2", "tokens": ["Le", "Tribunal", "de", "Genève"], "tags": ["O", "B-ORG", "I-ORG", "I-ORG"],
     "language": "fr"},
    {"id": "s3", "tokens": ["Paul", "vit", "à", "Sion"], "tags": ["B-PER", "O", "O", "B-LOC"], "language": "fr"},
]
NER_PRED = [
    {"id": "s1", "tags": ["B-PER", "I-PER", "O", "O", "B-ORG"]},
    {"id": "s2", "tags": ["O", "B-ORG", "I-ORG", "O"]},
    {"id": "s3", "tags": ["B-PER", "O", "O", "B-LOC"]},
]
MULTI_GOLD = [
    {"id": "m1", "text": "a", "labels": ["civil", "tax"]},
    {"id": "m2", "text": "b", "labels": ["criminal"]},
    {"id": "m3", "text": "c", "labels": []},
]
MULTI_PRED = [{"id": "m1", "labels": ["civil"]}, {"id": "m2", "labels": ["criminal", "tax"]}, {"id": "m3", "labels": []}]


def task_dataset(task: str, gold: list[dict]) -> Dataset:
    bench = Benchmark.objects.create(slug=f"b-{task}", name=task)
    ds = Dataset.objects.create(benchmark=bench, slug=f"ds-{task}", name=f"DS {task}", language="x", task=task,
                                measures=["macro-F1"], primary_measure="macro-F1")
    import_classification(dataset=ds, task=task, split="test", file=("test.jsonl", jsonl(gold)), hidden=True)
    return ds


@pytest.mark.parametrize(("task", "gold", "pred"), [("ner", NER_GOLD, NER_PRED), ("multi", MULTI_GOLD, MULTI_PRED)])
def test_it_scores_multi_label_and_ner_uploads_like_the_metric_core(alice, task, gold, pred):
    split = task_dataset(task, gold).splits.get()
    sub = submission_create(user=alice, split=split, upload=upload(jsonl(pred)), metadata=META, enqueue=False)
    sub = submission_score_now(sub.pk)
    assert sub.status == Submission.Status.SCORED, sub.error
    core_gold = read_gold(jsonl(gold), task=task)
    expected = evaluate_predictions(core_gold, read_predictions(jsonl(pred), gold=core_gold))
    scores = sub.results.get().scores
    assert scores["macro-F1"] == pytest.approx(expected.macro_f1, abs=1e-12)
    assert 0 < scores["macro-F1"] < 1
    if task == "ner":  # two hidden French examples: below the floor, so no score of their own
        assert expected.per_language["fr"] > 0 and "macro-F1/fr" not in scores


def test_it_refuses_an_ner_file_with_the_wrong_number_of_tags_or_an_unknown_type(alice):
    split = task_dataset("ner", NER_GOLD).splits.get()
    short = [dict(NER_PRED[0], tags=["O"]), *NER_PRED[1:]]
    sub = submission_score_now(submission_create(user=alice, split=split, upload=upload(jsonl(short)), metadata=META,
                                                 enqueue=False).pk)
    assert sub.status == Submission.Status.FAILED
    assert sub.error["details"][0]["line"] == 1 and "1 tags but the example has 5 tokens" in sub.error["details"][0]["reason"]
    typed = [NER_PRED[0], dict(NER_PRED[1], tags=["O", "B-MISC", "I-MISC", "O"]), NER_PRED[2]]
    sub = submission_score_now(submission_create(user=alice, split=split, upload=upload(jsonl(typed)),
                                                 metadata={**META, "system_name": "T2"}, enqueue=False).pk)
    assert sub.status == Submission.Status.FAILED
    assert sub.error["details"][0]["line"] == 2 and "unknown entity type" in sub.error["details"][0]["reason"]


def test_the_api_takes_a_prediction_file(test_split, alice):
    from rest_framework.test import APIClient

    from accounts.models import ApiToken

    _, key = ApiToken.issue(user=alice)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    response = client.post(reverse("api:submissions"), {
        "dataset": "areas", "split": "test", "run_file": upload(predictions(GOOD_PREDICTIONS)), **META,
    }, format="multipart")
    assert response.status_code in (201, 202), response.content
    refused = client.post(reverse("api:submissions"), {
        "dataset": "areas", "split": "test", "run_file": upload(b"t1 Q0 d1 1 1.0 x\n"), **META, "system_name": "X",
    }, format="multipart")
    assert refused.status_code == 400 and b"JSON" in refused.content


def test_new_gold_published_rescores_a_submission_onto_it(test_split, alice):
    sub = submission_score_now(submission_create(user=alice, split=test_split, upload=upload(
        predictions(GOOD_PREDICTIONS)), metadata=META, enqueue=False).pk)
    old = test_split.current_qrels
    changed = dict(TEST_GOLD, t3=("civil", "fr"))  # a corrected label
    data = parse_classification(task="single", split="test", file=("test.jsonl", gold_file(changed)), hidden=True)
    report = release_import(dataset=test_split.dataset, data=data, publish=True,
                            small_change_reason="errata")  # a small change on a hidden split
    test_split.refresh_from_db()
    new = test_split.pending_qrels
    assert report.splits[0].qrels_version == 2 and new is not None and test_split.current_qrels == old
    assert submission_rescore_on(submission_id=sub.pk, qrels_version_id=new.pk) == "stored"
    test_split.refresh_from_db()
    assert test_split.current_qrels == new and test_split.pending_qrels is None
    gold = read_gold(gold_file(changed), task="single")
    expected = evaluate_predictions(gold, read_predictions(predictions(GOOD_PREDICTIONS), gold=gold))
    assert Result.objects.get(submission=sub, qrels_version=new).scores["macro-F1"] == pytest.approx(expected.macro_f1)
    assert Result.objects.filter(submission=sub).count() == 2


def test_a_hidden_ner_splits_grid_is_what_one_entity_moves_its_macro_f1(alice):
    """Entity-level macro-F1 averages entity types: one entity right or wrong moves a rare type's F1 by far more than
    one example's share 1/N (the old grid). The stored step is ``macro_f1_step`` of the gold's entity counts."""
    from evaluation.ladder import macro_f1_step, step_for

    many = [{"id": f"p{i}", "tokens": ["Anna", "klagt"], "tags": ["B-PER", "O"], "language": "de"} for i in range(27)]
    gold = NER_GOLD + many  # 30 examples: PER 29, LOC 2, ORG 1
    right = [{"id": g["id"], "tags": g["tags"]} for g in gold]
    ds = task_dataset("ner", gold)
    sub = submission_score_now(submission_create(user=alice, split=ds.splits.get(), upload=upload(jsonl(right)),
                                                 metadata=META, enqueue=False).pk)
    step = macro_f1_step(n_examples=30, supports=[29, 2, 1], min_predicted=1)
    assert sub.results.get().released_step == step
    core_gold = read_gold(jsonl(gold), task="ner")
    wrong = [dict(right[1], tags=["O", "O", "O", "O"]) if r["id"] == "s2" else r for r in right]  # the ORG missed
    moved = abs(evaluate_predictions(core_gold, read_predictions(jsonl(right), gold=core_gold)).macro_f1
                - evaluate_predictions(core_gold, read_predictions(jsonl(wrong), gold=core_gold)).macro_f1)
    assert step_for(30) < moved <= step, (moved, step)
