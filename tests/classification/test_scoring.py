"""Classification uploads scored through the product's path equal the metric core on the same files."""

from __future__ import annotations

import gzip

import pytest
from django.urls import reverse

from evaluation.classification import evaluate_predictions, read_gold, read_predictions
from evaluation.ladder import macro_f1_step, on_grid
from submissions.errors import UploadRefused
from submissions.models import Submission
from submissions.services import submission_create, submission_score_now

from .conftest import (
    GOOD_PREDICTIONS,
    TEST_GOLD,
    TRAIN_GOLD,
    WIDE_GOLD,
    WIDE_PREDICTIONS,
    gold_file,
    predictions,
    upload,
)

META = {"system_name": "Linear", "family": "lexical", "visibility": "public"}


def core_result(pred: bytes, test_gold: dict = TEST_GOLD):
    gold = read_gold(gold_file(test_gold), task="single")
    return evaluate_predictions(gold, read_predictions(pred, gold=gold))


def score(split, user, content: bytes, name="predictions.jsonl", **meta):
    sub = submission_create(user=user, split=split, upload=upload(content, name), metadata={**META, **meta},
                            enqueue=False)
    return submission_score_now(sub.pk)


def test_it_scores_an_upload_like_the_metric_core(test_split, alice):
    sub = score(test_split, alice, predictions(GOOD_PREDICTIONS))
    assert sub.status == Submission.Status.SCORED, sub.error
    result = sub.results.get(qrels_version=test_split.current_qrels)
    expected = core_result(predictions(GOOD_PREDICTIONS))
    assert result.scores["macro-F1"] == pytest.approx(expected.macro_f1, abs=1e-12)
    assert result.scores["macro-F1/fr"] == pytest.approx(expected.per_language["fr"], abs=1e-12)
    assert result.scores["macro-F1/de"] == pytest.approx(expected.per_language["de"], abs=1e-12)
    assert result.primary_score == result.scores["macro-F1"]
    assert result.n_queries == len(TEST_GOLD)
    assert 0 < result.scores["macro-F1"] < 1


def test_it_scores_a_gzipped_upload_the_same(test_split, alice):
    sub = score(test_split, alice, gzip.compress(predictions(GOOD_PREDICTIONS)), name="p.jsonl.gz")
    assert sub.status == Submission.Status.SCORED, sub.error
    assert sub.results.get().scores["macro-F1"] == pytest.approx(core_result(predictions(GOOD_PREDICTIONS)).macro_f1)


def test_it_refuses_a_trec_run_in_the_request_with_line_numbers(test_split, alice):
    with pytest.raises(UploadRefused) as info:
        submission_create(user=alice, split=test_split, upload=upload(b"t1 Q0 d1 1 2.0 bm25\n"), metadata=META)
    assert "JSON" in str(info.value) and info.value.details[0]["line"] == 1
    assert Submission.objects.count() == 0


def test_it_names_the_right_field_when_the_line_lacks_it(test_split, alice):
    content = predictions({"t1": "civil"}) + b'{"id": "t2", "labels": ["civil"]}\n'
    with pytest.raises(UploadRefused) as info:
        submission_create(user=alice, split=test_split, upload=upload(content), metadata=META)
    assert info.value.details == [{"line": 2, "reason": info.value.details[0]["reason"]}]
    assert '"label"' in info.value.details[0]["reason"] and "labels" in info.value.details[0]["reason"]


@pytest.mark.parametrize(
    ("answers", "extra", "line", "words"),
    [
        ({**GOOD_PREDICTIONS, "t5": "family"}, b"", 5, "unknown label 'family'"),
        ({k: v for k, v in GOOD_PREDICTIONS.items() if k != "t12"}, b"", None, "no prediction: 't12'"),
        (GOOD_PREDICTIONS, b'{"id": "t99", "label": "civil"}\n', 13, "'t99' is not in the gold"),
        (GOOD_PREDICTIONS, b'{"id": "t4", "label": "tax"}\n', 13, "already predicted on line 4"),
    ],
    ids=["unknown-label", "missing-id", "unknown-id", "duplicate-id"],
)
def test_the_worker_refuses_bad_prediction_files_with_the_line(test_split, alice, answers, extra, line, words):
    sub = score(test_split, alice, predictions(answers) + extra)
    assert sub.status == Submission.Status.FAILED
    assert sub.failure_kind == Submission.FailureKind.INPUT
    details = sub.error["details"]
    assert details[0]["line"] == line and words in details[0]["reason"], details
    assert not sub.results.exists()


def test_a_label_of_another_split_is_accepted_and_counts_as_a_false_positive(test_split, alice):
    # The label set is the dataset's, not the hidden split's: refusing "family" here would tell
    # a participant that the hidden split has no "family" example.
    from catalogue.importers import import_classification

    dev = {"v1": ("family", "fr"), "v2": ("civil", "de")}
    import_classification(dataset=test_split.dataset, task="single", split="dev", file=("dev.jsonl", gold_file(dev)))
    answers = {**GOOD_PREDICTIONS, "t5": "family"}
    sub = score(test_split, alice, predictions(answers))
    assert sub.status == Submission.Status.SCORED, sub.error
    assert sub.results.get().scores["macro-F1"] == pytest.approx(core_result(predictions(answers)).macro_f1)


def test_warnings_name_no_gold_label_on_a_hidden_split_but_do_on_a_public_one(clf_dataset, alice):
    from .conftest import TRAIN_GOLD

    test, train = clf_dataset.splits.get(name="test"), clf_dataset.splits.get(name="train")
    hidden = score(test, alice, predictions({i: "civil" for i in TEST_GOLD}))
    [warning] = [w for w in hidden.warnings if w["code"] == "never_predicted"]
    assert warning["count"] == 2 and "tax" not in warning["message"] and "criminal" not in warning["message"]
    public = score(train, alice, predictions({i: "civil" for i in TRAIN_GOLD}), system_name="All civil")
    [warning] = [w for w in public.warnings if w["code"] == "never_predicted"]
    assert "criminal" in warning["message"] and "tax" in warning["message"]


def test_the_leaderboard_and_exports_show_macro_f1(wide_split, alice, client):
    from leaderboard.selectors import leaderboard_rows

    sub = score(wide_split, alice, predictions(WIDE_PREDICTIONS))
    rows = leaderboard_rows(split=wide_split)
    assert [r.system for r in rows] == ["Linear"] and rows[0].rank == 1
    # A hidden split: the leaderboard shows the display precision (docs/security.md).
    # On the hidden split's grid: what one example's label moves macro-F1 (36 examples, supports 15, 12 and 9, a
    # label predicted on at least 5: (2/14 + 2/17) / 3 ≈ 0.087, so 0.1), not one example's share 1/36 (0.05).
    step = macro_f1_step(n_examples=36, supports=[15, 12, 9], min_predicted=5)
    assert step == 0.1
    assert rows[0].scores["macro-F1"] == on_grid(core_result(predictions(WIDE_PREDICTIONS), WIDE_GOLD).macro_f1, step)
    assert sub.results.get().released_step == step
    page = client.get(reverse("leaderboard:dataset", args=["areas"]) + "?sort=macro-F1")
    assert page.status_code == 200 and "macro-F1/fr" in page.content.decode()
    for fmt in ("csv", "json", "tex"):
        export = client.get(reverse("leaderboard:export", args=["areas", fmt]) + "?split=test")
        assert export.status_code == 200 and b"macro-F1" in export.content and b"Linear" in export.content


def test_the_submission_page_of_a_scored_prediction_file_renders(wide_split, alice, client):
    sub = score(wide_split, alice, predictions(WIDE_PREDICTIONS))
    page = client.get(reverse("participants:detail", args=[sub.pk]))
    assert page.status_code == 200 and "macro-F1" in page.content.decode()


def test_the_submission_page_says_a_second_implementation_checked_the_scores(clf_dataset, alice, client):
    train = clf_dataset.splits.get(name="train")
    sub = score(train, alice, predictions({i: label for i, (label, _) in TRAIN_GOLD.items()}))
    assert sub.results.get().verified_by["method"] == "plain"
    client.force_login(alice)
    text = client.get(reverse("participants:detail", args=[sub.pk])).content.decode()
    assert "Verified by a second implementation of macro-F1: it read this prediction file and the gold itself" in text
    assert "per-query values" not in text and "depth cut" not in text  # retrieval's words are not this check's


def test_the_upload_page_shows_the_prediction_format(test_split, alice, client):
    client.force_login(alice)
    page = client.get(reverse("participants:upload", args=["areas"]) + "?split=test")
    html = page.content.decode()
    assert page.status_code == 200
    assert "JSON Lines" in html and "&quot;label&quot;" in html and "<code>criminal</code>" in html
    assert "qid Q0 docid" not in html
    assert ".jsonl" in html  # the file picker lets JSONL files through


def test_the_upload_form_takes_a_prediction_file(test_split, alice, client):
    client.force_login(alice)
    url = reverse("participants:upload", args=["areas"]) + "?split=test"
    response = client.post(url, {"run": upload(predictions(GOOD_PREDICTIONS)), **META})
    assert response.status_code == 302, response.content.decode()[:2000]
    sub = Submission.objects.get()
    assert sub.status == Submission.Status.QUEUED
    assert submission_score_now(sub.pk).status == Submission.Status.SCORED


def test_a_language_with_fewer_examples_than_the_hidden_floor_gets_no_score_of_its_own(db, alice):
    """A language of one hidden example would give that example's gold label per submission (its macro-F1 is 1
    or 0 for a guess): on a hidden split no language below ``min_group_size`` is scored on its own."""
    from catalogue.importers import import_classification
    from catalogue.models import Benchmark, Dataset

    bench = Benchmark.objects.create(slug="small-bench", name="Small")
    dataset = Dataset.objects.create(
        benchmark=bench, slug="small", name="Small", language="fr,de,it", task=Dataset.Task.SINGLE,
        measures=["macro-F1", "macro-F1/fr", "macro-F1/de", "macro-F1/it"], primary_measure="macro-F1",
        category_min_queries=5,
    )
    gold = TEST_GOLD | {"t13": ("tax", "it")}
    import_classification(dataset=dataset, task="single", split="test", file=("test.jsonl", gold_file(gold)),
                          hidden=True)
    split = dataset.splits.get(name="test")
    for guess in ("tax", "civil"):
        sub = score(split, alice, predictions(GOOD_PREDICTIONS | {"t13": guess}), system_name=f"Guess {guess}")
        assert sub.status == Submission.Status.SCORED, sub.error
        scores = sub.results.get(qrels_version=split.current_qrels).scores
        assert "macro-F1/it" not in scores and "macro-F1/fr" in scores and "macro-F1/de" in scores


def test_a_small_language_is_scored_on_a_public_split(clf_dataset, alice):
    train = clf_dataset.splits.get(name="train")
    sub = score(train, alice, predictions({i: label for i, (label, _) in TRAIN_GOLD.items()}))
    assert sub.status == Submission.Status.SCORED, sub.error
    assert sub.results.get().scores["macro-F1/fr"] == 1.0 == sub.results.get().scores["macro-F1/de"]


def test_the_ladder_still_reads_a_best_that_names_a_label_no_gold_declares_any_more(wide_dataset, alice):
    """The Ladder reads the participant's best again at each judgment: a label the dataset declared when the best
    was scored, and no longer does, must not make the next run fail (nor a switch's replay)."""
    from catalogue.importers import import_classification
    from submissions.services import split_qrels_publish
    from submissions.services.predictions import dataset_labels

    train = wide_dataset.splits.get(name="train")
    test = wide_dataset.splits.get(name="test")

    def publish_train(gold: dict) -> None:
        import_classification(dataset=wide_dataset, task="single", split="train", file=("train.jsonl", gold_file(gold)))
        version = train.qrels_versions.order_by("-version").first()
        split_qrels_publish(split=train, version=version)

    publish_train({**TRAIN_GOLD, "r1": ("labour", "fr")})  # "labour" is a label of the dataset now
    # "labour" on five examples: a label predicted on fewer is not released on this hidden split (the support rule),
    # and the best must be one the Ladder released for the next run to be compared with it.
    best_answers = {i: label for i, (label, _) in WIDE_GOLD.items()} | {i: "labour" for i in ("t3", "t6", "t10",
                                                                                                "t12", "t15")}
    best = score(test, alice, predictions(best_answers), name="best.jsonl")
    assert best.status == Submission.Status.SCORED, best.error
    assert best.results.get().released, best.results.get().ladder_message
    publish_train({**TRAIN_GOLD, "r10": ("civil", "fr")})  # and no more
    assert "labour" not in dataset_labels(dataset=wide_dataset)
    better = {i: label for i, (label, _) in WIDE_GOLD.items()}
    new = score(test, alice, predictions(better), name="better.jsonl")
    assert new.status == Submission.Status.SCORED, new.error
