"""The Ladder on a hidden split, through the real services: what is released, shown and replayed on new qrels.

The analysis dataset's hidden ``test`` split (24 topics) has the Ladder on (the
default); its public ``dev`` split releases everything. Runs: ``perfect``
(relevant documents first), ``shifted`` (two non-relevant ones before them:
worse on 5 topics at R@10), ``late`` (nine before them: worse on 18 topics, so
that ``perfect`` over it is a clear improvement for the noisy margin),
``random``.
"""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from catalogue.services import qrels_version_add
from leaderboard.selectors import leaderboard_rows
from submissions import disclosure
from submissions.disclosure import NOT_RELEASED
from submissions.models import LadderBest, Result, Submission
from submissions.services import (
    qrels_version_publish_and_rescore,
    submission_rescore,
    submission_rescore_on,
    submission_score_now,
)

from .conftest import N_TOPICS, qid, relevant_docs

pytestmark = pytest.mark.django_db


def result_of(submission: Submission, version=None) -> Result:
    version = version or submission.split.current_qrels
    return Result.objects.get(submission=submission, qrels_version=version)


def test_a_run_that_is_no_significant_improvement_is_held_back_everywhere(scored, alice, bob, analysis_dataset):
    split = analysis_dataset.splits.get(name="test")
    best = scored("test", alice, "shifted", name="first")
    worse = scored("test", alice, "random", name="worse", seed=2)
    assert result_of(best).released and not result_of(worse).released
    shown_best = f"R@10 {100 * disclosure.on_grid(result_of(best).primary_score, 0.05):.0f} %"  # 24 topics: 5 points
    assert result_of(worse).ladder_message == (
        f"Not a significant improvement over your best ({shown_best}); your best stays on the leaderboard. "
        "The Ladder's rule: topics better minus topics worse on R@10, plus noise, over a margin (the verdict is not "
        "exact), and the value up a step (5 points): /docs/metrics/#ladder")
    assert result_of(worse).ladder_p >= 0.05
    # The leaderboard shows her best only.
    assert [r.system for r in leaderboard_rows(split=split)] == ["first"]
    # Her API answer: no scores, released false, the message; another person reads the bare fact.
    api = APIClient()
    api.force_authenticate(alice)
    body = api.get(reverse("api:submission", args=[worse.pk])).json()
    assert body["scores"] == {} and body["released"] is False and shown_best in body["message"]
    # No grid either: a held-back run's own step is one topic's share of the topics it was scored on (#24).
    assert body["grid"] is None
    api.force_authenticate(bob)
    assert api.get(reverse("api:submission", args=[worse.pk])).json()["message"] == NOT_RELEASED
    # Her page says it and shows no number of the run; status.json says it too.
    web = Client()
    web.force_login(alice)
    page = web.get(reverse("participants:detail", args=[worse.pk])).content.decode()
    assert "Not a significant improvement over your best" in page and "scores-title" not in page
    status = web.get(reverse("participants:status", args=[worse.pk])).json()
    assert shown_best in status["message"] and "scores" not in status


def test_a_significant_improvement_is_released_and_becomes_the_best(scored, alice, analysis_dataset):
    split = analysis_dataset.splits.get(name="test")
    first = scored("test", alice, "late", name="first")
    better = scored("test", alice, "perfect", name="better")
    assert result_of(better).released and result_of(better).ladder_message.startswith("Released: a significant")
    best = LadderBest.objects.get(split=split, user=alice, qrels_version=split.current_qrels)
    assert best.result_id == result_of(better).pk
    assert {r.system for r in leaderboard_rows(split=split)} == {"first", "better"}  # both released in turn
    again = scored("test", alice, "perfect", name="same again", tag="again")  # equal to the best: nothing new to release
    assert not result_of(again).released and result_of(first).released


def test_baselines_and_public_splits_are_not_held_back(scored, alice):
    scored("test", alice, "perfect", name="best")
    baseline = scored("test", alice, "random", name="baseline", is_baseline=True)
    assert result_of(baseline).released and "Baseline" in result_of(baseline).ladder_message
    scored("dev", alice, "perfect")
    dev_worse = scored("dev", alice, "random")
    assert result_of(dev_worse).released and result_of(dev_worse).ladder_message == ""


def test_new_judgments_replay_each_participants_ladder_in_upload_order(scored, alice, analysis_dataset):
    split = analysis_dataset.splits.get(name="test")
    late = scored("test", alice, "late", name="late")
    perfect = scored("test", alice, "perfect", name="perfect")
    assert result_of(late).released and result_of(perfect).released
    # New judgments: only the two documents "late" puts first are relevant. On them, "perfect"
    # (uploaded second, without them) is no improvement over "late", so the replay holds it back.
    others = {i: [f"doc{d}" for d in range(1, 81) if f"doc{d}" not in relevant_docs(i)] for i in range(N_TOPICS)}
    v2, _ = qrels_version_add(split=split, qrels={qid(i): {d: 1 for d in others[i][20:22]} for i in range(N_TOPICS)})
    qrels_version_publish_and_rescore(split=split, version=v2)
    for submission in (late, perfect):
        assert submission_rescore_on(submission_id=submission.pk, qrels_version_id=v2.pk) == "stored"
    split.refresh_from_db()
    assert split.current_qrels_id == v2.pk
    assert result_of(late, v2).released and not result_of(perfect, v2).released
    assert LadderBest.objects.get(split=split, user=alice, qrels_version=v2).result_id == result_of(late, v2).pk
    assert [r.system for r in leaderboard_rows(split=split)] == ["late"]


def test_a_curators_rescore_keeps_each_results_judgment(scored, alice, analysis_dataset):
    """Scoring the same run again on the same judgments is idempotent: an earlier release is not judged again
    against the best that came after it (which would take it off the leaderboard)."""
    split = analysis_dataset.splits.get(name="test")
    first = scored("test", alice, "late", name="first")
    better = scored("test", alice, "perfect", name="better")
    assert result_of(first).released and result_of(better).released
    assert submission_rescore(submission=first)
    submission_score_now(first.pk)
    assert result_of(first).released, result_of(first).ladder_message
    assert sorted(r.system for r in leaderboard_rows(split=split)) == ["better", "first"]
    # A run held back stays held back, and the best stays the best.
    held = scored("test", alice, "random", name="held", seed=2)
    assert submission_rescore(submission=held)
    submission_score_now(held.pk)
    assert not result_of(held).released
    assert LadderBest.objects.get(split=split, user=alice, qrels_version=split.current_qrels).result_id == \
        result_of(better).pk


def test_a_first_run_is_compared_with_the_best_baseline_not_an_empty_run(scored, alice, bob, analysis_dataset):
    """A first run is free for every new identity: against an empty run any crafted probe that scores on five
    topics was released. Against the split's best baseline (chosen at full precision) it must beat a real system."""
    split = analysis_dataset.splits.get(name="test")
    scored("test", bob, "random", name="weak baseline", is_baseline=True, seed=3)
    scored("test", bob, "perfect", name="strong baseline", is_baseline=True, tag="b")
    first = scored("test", alice, "shifted", name="first")  # far above an empty run, below the strong baseline
    assert not result_of(first).released
    assert result_of(first).ladder_message.startswith(
        "Not released: this run is not a significant improvement over the best baseline (strong baseline)")
    assert "first" not in [r.system for r in leaderboard_rows(split=split)]
    # Her first run's best is still empty: nothing was released, so the next run is a first run too.
    assert not LadderBest.objects.filter(split=split, user=alice, result__isnull=False).exists()


def test_a_first_run_better_than_the_best_baseline_is_released(scored, alice, bob, analysis_dataset):
    scored("test", bob, "late", name="baseline", is_baseline=True)
    first = scored("test", alice, "perfect", name="first")
    assert result_of(first).released and result_of(first).ladder_message.startswith("Released: your first score")


def test_the_released_value_is_stored_at_the_verdict_and_shown_everywhere(scored, alice, analysis_dataset):
    """One computation: the Ladder compares and names the stored value (the stored mean on the grid of the result's
    N), and the board, the API and compare show that stored value, not a mean put on the grid again."""
    split = analysis_dataset.splits.get(name="test")
    sub = scored("test", alice, "shifted", name="first")
    result = result_of(sub)
    assert result.released_step == disclosure.step_for(N_TOPICS) == 0.05
    assert result.released_score == disclosure.on_grid(result.primary_score, 0.05)
    shown = f"R@10 {100 * result.released_score:.0f} %"
    assert shown in result.ladder_message
    # Every surface reads the stored value: moved by hand, they all move with it (none recomputes it).
    Result.objects.filter(pk=result.pk).update(released_score=0.35)
    split.refresh_from_db()
    assert [r.scores["R@10"] for r in leaderboard_rows(split=split)] == [0.35]
    api = APIClient()
    api.force_authenticate(alice)
    assert api.get(reverse("api:submission", args=[sub.pk])).json()["scores"] == {"R@10": 0.35}


@pytest.mark.parametrize("finer", ["older", "newer"])
def test_two_baselines_tied_on_the_grid_are_named_by_age_not_full_precision(scored, bob, analysis_dataset, finer):
    """#24 item 3: a first run's message names the best baseline; picked at full precision, the name told which
    of two baselines equal on the grid is better. Either order of their full-precision values names the same."""
    from submissions.services.ladder import _best_baseline

    split = analysis_dataset.splits.get(name="test")
    assert disclosure.hidden(split)
    older = scored("test", bob, "shifted", name="older baseline", is_baseline=True)
    newer = scored("test", bob, "shifted", name="newer baseline", is_baseline=True, tag="b")
    version = split.current_qrels_id
    # Equal on the grid (the released value), apart at full precision: the finer one is `finer`.
    Result.objects.filter(submission__in=[older, newer], qrels_version_id=version).update(released_score=0.5)
    Result.objects.filter(submission=older, qrels_version_id=version).update(
        primary_score=0.5004 if finer == "older" else 0.4996)
    Result.objects.filter(submission=newer, qrels_version_id=version).update(
        primary_score=0.5004 if finer == "newer" else 0.4996)
    named = _best_baseline(split=split, version_id=version)
    assert named is not None and named.submission_id == older.pk  # the oldest of the tied, whichever is finer
