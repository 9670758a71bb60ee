"""Double-entry scoring: every stored number was computed twice, and a disagreement stores nothing.

The disagreement is injected honestly: the second implementation itself
(``evaluation.verify``'s pytrec_eval step, our code around the C library) is
replaced by one that changes one value, in this process, and the real
scoring service runs against the real database.
"""

from __future__ import annotations

import dataclasses

import pytest
from django.urls import reverse

from catalogue.models import Dataset
from evaluation import verify as verify_module
from evaluation.measures import FAMILIES
from submissions import services
from submissions.models import Result, Submission
from submissions.selectors import submission_quota

from .conftest import GOOD_RUN, METADATA, upload


def create(user, split, tag: str = "") -> Submission:
    """``tag`` (a comment line) makes a second upload of the same run distinct: the same content twice is refused."""
    return services.submission_create(user=user, split=split, upload=upload(GOOD_RUN + tag), metadata=METADATA)


@pytest.mark.parametrize(("precision", "method", "shown"), [
    ("float32", "pytrec_eval", "Verified by a second implementation, pytrec_eval (trec_eval 9.0.8): it read this "
                               "run's stored file and the judgments itself"),
    ("float64", "plain", "Verified by a second implementation, a plain reference implementation: it read this "
                         "run's stored file and the judgments itself"),
])
def test_a_stored_result_says_which_second_implementation_agreed(client, alice, test_split, precision, method,
                                                                  shown):
    Dataset.objects.filter(pk=test_split.dataset_id).update(score_precision=precision)
    submission = create(alice, test_split)

    services.submission_score(submission.pk)

    assert Submission.objects.get(pk=submission.pk).status == Submission.Status.SCORED
    assert Result.objects.get(submission=submission).verified_by["method"] == method
    client.force_login(alice)
    page = client.get(reverse("participants:detail", args=[submission.pk])).content.decode()
    assert shown in page
    # The number it states is what was checked: every stored measure on every evaluated topic.
    result = Result.objects.get(submission=submission)
    n = len(result.scores)
    assert (f"recomputed all {n * result.n_queries} per-query values ({n} measures × {result.n_queries} topics), "
            "then every stored mean from its own values; each equalled the metric core's within 10<sup>-9</sup>") in page
    assert result.verified_by == {"method": method, "measures": list(result.scores), "means": True, "parts": [],
                                  "values_compared": n * result.n_queries, "source": "trec"}


def test_the_worker_scores_with_the_dataset_empty_query_convention(alice, test_split):
    omitted, counted = create(alice, test_split), create(alice, test_split, tag="# counted\n")
    services.submission_score(omitted.pk)
    Dataset.objects.filter(pk=test_split.dataset_id).update(empty_queries="count")
    services.submission_score(counted.pk)

    # q4 has only a document graded 0: left out, or counted as 0 (and verified the same way).
    omit, count = Result.objects.get(submission=omitted), Result.objects.get(submission=counted)
    assert (omit.n_queries, count.n_queries) == (3, 4)
    assert count.scores["R@10"] == pytest.approx(omit.scores["R@10"] * 3 / 4)
    assert count.verified_by["method"] == "pytrec_eval"


@pytest.fixture
def second_implementation_off_by_a_bit(monkeypatch):
    """pytrec_eval's R@10 of q2 moved by 0.25: the two implementations now disagree on one value."""
    real = verify_module._pytrec_eval_values

    def patched(qrels, run, measures, **kwargs):
        values = real(qrels, run, measures, **kwargs)
        if "q2" in values:
            values["q2"]["R@10"] += 0.25
        return values

    monkeypatch.setattr(verify_module, "_pytrec_eval_values", patched)


def test_a_disagreement_stores_nothing_fails_as_ours_and_flags_it_for_curators(
        client, alice, staff, test_split, second_implementation_off_by_a_bit, caplog):
    submission = create(alice, test_split)

    services.submission_score(submission.pk)

    failed = Submission.objects.get(pk=submission.pk)
    assert failed.status == Submission.Status.FAILED
    assert failed.failure_kind == Submission.FailureKind.SERVICE
    assert not Result.objects.filter(submission=submission).exists()
    assert submission_quota(user=alice, split=test_split).total_used == 0  # no slot used
    flag = failed.scores_disagree
    assert (flag["qid"], flag["measure"], flag["method"]) == ("q2", "R@10", "pytrec_eval")
    assert flag["reference"] == pytest.approx(flag["core"] + 0.25)
    assert "scores disagree" in caplog.text and "'q2'" in caplog.text  # both values logged
    # The participant is told it is our fault; on this hidden split, no query is named.
    assert "disagree" in failed.error["message"] and "q2" not in failed.error["message"]

    client.force_login(staff)
    changelist = reverse("admin:submissions_submission_changelist")
    flagged = client.get(changelist, {"scores_disagree": "yes"}).content.decode()
    assert f'href="/admin/submissions/submission/{submission.pk}/change/' in flagged
    other = client.get(changelist, {"scores_disagree": "no"}).content.decode()
    assert f'href="/admin/submissions/submission/{submission.pk}/change/' not in other
    detail = client.get(reverse("admin:submissions_submission_change", args=[submission.pk])).content.decode()
    assert "first differing query &#x27;q2&#x27;, R@10" in detail


def test_a_rescore_that_agrees_clears_the_flag(alice, test_split, monkeypatch, second_implementation_off_by_a_bit):
    submission = create(alice, test_split)
    services.submission_score(submission.pk)
    monkeypatch.undo()  # the second implementation fixed

    assert services.submission_rescore(submission=Submission.objects.get(pk=submission.pk))
    services.submission_score(submission.pk)

    scored = Submission.objects.get(pk=submission.pk)
    assert scored.status == Submission.Status.SCORED and scored.scores_disagree is None


INCOMPLETE_JUDGMENT_MEASURES = ["R@10", "bpref", "MAP'@10", "nDCG'@10"]


def test_the_incomplete_judgment_measures_are_stored_verified(alice, test_split):
    Dataset.objects.filter(pk=test_split.dataset_id).update(measures=INCOMPLETE_JUDGMENT_MEASURES)
    submission = create(alice, test_split)

    services.submission_score(submission.pk)

    result = Result.objects.get(submission=submission)
    assert set(result.scores) == set(INCOMPLETE_JUDGMENT_MEASURES) and result.verified_by["method"] == "pytrec_eval"


@pytest.mark.parametrize("family", ["bpref", "MAP'", "nDCG'"])
def test_a_wrong_incomplete_judgment_kernel_is_caught(alice, test_split, monkeypatch, family):
    """Each of them had no second implementation once: a fault in its kernel was stored as it came."""
    declared = FAMILIES[family]
    monkeypatch.setitem(FAMILIES, family, dataclasses.replace(
        declared, kernel=lambda hits, k: declared.kernel(hits, k) * 0.5))
    Dataset.objects.filter(pk=test_split.dataset_id).update(measures=INCOMPLETE_JUDGMENT_MEASURES)
    submission = create(alice, test_split)

    services.submission_score(submission.pk)

    failed = Submission.objects.get(pk=submission.pk)
    assert failed.status == Submission.Status.FAILED and not Result.objects.filter(submission=submission).exists()
    assert failed.scores_disagree["measure"].startswith(family)
