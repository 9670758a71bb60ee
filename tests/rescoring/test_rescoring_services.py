"""Publishing new judgments, called synchronously: staged, rescored, switched at once, old scores kept."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from catalogue.models import Split
from catalogue.services import qrels_version_add
from leaderboard.selectors import leaderboard_rows
from submissions import disclosure, services
from submissions.models import Result, Submission
from submissions.selectors import split_rescoring_progress, submission_result_history
from submissions.services import qrels_version_publish_and_rescore, rescoring

from .conftest import NEW_QRELS, RUNS, expected_means

pytestmark = pytest.mark.django_db


def score_all(split, make_submission, systems=("BM25", "Dense", "Hybrid")) -> dict[str, Submission]:
    made = {}
    for system in systems:
        submission = make_submission(split, system)
        services.submission_score(submission.pk)
        made[system] = Submission.objects.get(pk=submission.pk)
        assert made[system].status == Submission.Status.SCORED
    return made


def board(split) -> dict[str, dict[str, float]]:
    split = Split.objects.get(pk=split.pk)
    return {row.system: row.scores for row in leaderboard_rows(split=split)}


def expected_board(split, version, systems) -> dict[str, dict[str, float]]:
    return {system: expected_means(split, version, RUNS[system]) for system in systems}


def assert_board(actual, expected) -> None:
    assert set(actual) == set(expected)
    for system, scores in expected.items():
        assert actual[system] == pytest.approx(scores, abs=1e-12), system


def sends(callbacks, what: str) -> int:
    """How many of the captured after-commit callbacks send ``what`` ("rescoring" or "scoring")."""
    owner = {"rescoring": "send_rescoring_after_commit", "scoring": "enqueue_after_commit"}[what]
    return sum(1 for c in callbacks if c.__qualname__.startswith(owner + "."))


def stage_v2(split, django_capture_on_commit_callbacks):
    """Add the errata as v2 and publish it; the rescoring tasks are captured, not sent."""
    v2, created = qrels_version_add(split=split, qrels=NEW_QRELS, note="errata")
    assert created
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        count = qrels_version_publish_and_rescore(split=split, version=v2)
    return v2, count, callbacks


def test_the_leaderboard_stays_on_v1_until_every_submission_has_a_v2_result_then_switches_at_once(
    test_split, make_submission, django_capture_on_commit_callbacks
):
    subs = score_all(test_split, make_submission)
    v1 = test_split.current_qrels
    on_v1 = expected_board(test_split, v1, subs)
    assert_board(board(test_split), on_v1)

    v2, count, callbacks = stage_v2(test_split, django_capture_on_commit_callbacks)
    assert count == 3 and sends(callbacks, "rescoring") == 1  # one callback sends the three tasks
    test_split.refresh_from_db()
    assert test_split.current_qrels == v1 and test_split.pending_qrels == v2
    on_v2 = expected_board(test_split, v2, subs)
    assert on_v1 != on_v2  # the errata change every system's numbers

    order = ["Dense", "BM25", "Hybrid"]
    for i, system in enumerate(order):
        assert_board(board(test_split), on_v1)  # not one row moves before the last result is in
        assert split_rescoring_progress(split=Split.objects.get(pk=test_split.pk)).done == i
        outcome = services.submission_rescore_on(submission_id=subs[system].pk, qrels_version_id=v2.pk)
        assert outcome == "stored"
        assert Submission.objects.get(pk=subs[system].pk).status == Submission.Status.SCORED

    test_split.refresh_from_db()
    assert test_split.current_qrels == v2 and test_split.pending_qrels is None
    assert_board(board(test_split), on_v2)
    assert split_rescoring_progress(split=test_split) is None
    # The old scores stay, one result per version.
    for system, submission in subs.items():
        results = {r.qrels_version_id: r for r in Result.objects.filter(submission=submission)}
        assert set(results) == {v1.pk, v2.pk}
        assert results[v1.pk].scores == pytest.approx(on_v1[system], abs=5e-5)  # stored in full, shown rounded
        history = submission_result_history(submission=Submission.objects.get(pk=submission.pk))
        assert [r.qrels_version.version for r in history] == [2, 1]


def test_the_switch_bumps_the_cache_version_so_cached_pages_go_stale(
    test_split, make_submission, django_capture_on_commit_callbacks
):
    subs = score_all(test_split, make_submission, ["BM25"])
    v2, _, _ = stage_v2(test_split, django_capture_on_commit_callbacks)
    before = Split.objects.get(pk=test_split.pk).cache_version
    services.submission_rescore_on(submission_id=subs["BM25"].pk, qrels_version_id=v2.pk)
    assert Split.objects.get(pk=test_split.pk).cache_version > before


def test_staging_a_version_makes_cached_pages_stale_so_they_say_rescoring_is_in_progress(
    test_split, make_submission, django_capture_on_commit_callbacks
):
    score_all(test_split, make_submission, ["BM25"])
    before = Split.objects.get(pk=test_split.pk).cache_version
    v2, _count = qrels_version_add(split=test_split, qrels=NEW_QRELS, note="errata")
    with django_capture_on_commit_callbacks(execute=True):
        qrels_version_publish_and_rescore(split=test_split, version=v2)
    split = Split.objects.get(pk=test_split.pk)
    assert split.pending_qrels == v2 and split.current_qrels != v2
    assert split.cache_version > before


def test_a_redelivered_rescoring_stores_nothing_twice(test_split, make_submission, django_capture_on_commit_callbacks):
    subs = score_all(test_split, make_submission, ["BM25", "Dense"])
    v2, _, _ = stage_v2(test_split, django_capture_on_commit_callbacks)
    bm25 = subs["BM25"].pk
    assert services.submission_rescore_on(submission_id=bm25, qrels_version_id=v2.pk) == "stored"
    first = Result.objects.get(submission_id=bm25, qrels_version=v2)
    assert services.submission_rescore_on(submission_id=bm25, qrels_version_id=v2.pk) == "exists"
    assert Result.objects.filter(submission_id=bm25, qrels_version=v2).count() == 1
    assert Result.objects.get(submission_id=bm25, qrels_version=v2).pk == first.pk
    assert Split.objects.get(pk=test_split.pk).pending_qrels == v2  # Dense is still missing


def test_a_rescoring_that_fails_does_not_hold_up_the_switch(
    test_split, make_submission, django_capture_on_commit_callbacks
):
    subs = score_all(test_split, make_submission)
    v1 = test_split.current_qrels
    v2, _, _ = stage_v2(test_split, django_capture_on_commit_callbacks)
    broken = subs["Hybrid"]
    broken.run_file.storage.delete(broken.run_file.name)  # our failure: the stored file is gone

    assert services.submission_rescore_on(submission_id=broken.pk, qrels_version_id=v2.pk) == "failed"
    marker = Result.objects.get(submission=broken, qrels_version=v2)
    assert services.is_failure_marker(marker) and "failed on our side" in marker.warnings[0]["message"]
    assert set(board(test_split)) == {"BM25", "Dense", "Hybrid"}  # still all on v1

    services.submission_rescore_on(submission_id=subs["BM25"].pk, qrels_version_id=v2.pk)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        services.submission_rescore_on(submission_id=subs["Dense"].pk, qrels_version_id=v2.pk)
    assert sends(callbacks, "scoring") == 1  # the failed one is sent to the ordinary scoring path

    test_split.refresh_from_db()
    assert test_split.current_qrels == v2
    assert_board(board(test_split), expected_board(test_split, v2, ["BM25", "Dense"]))
    broken.refresh_from_db()
    assert broken.status == Submission.Status.QUEUED
    # The marker is gone with the pending state; the v1 scores stay in the history.
    assert list(Result.objects.filter(submission=broken).values_list("qrels_version_id", flat=True)) == [v1.pk]


def test_publishing_with_nothing_scored_switches_at_once(tiny_dataset, django_capture_on_commit_callbacks):
    split = Split.objects.create(dataset=tiny_dataset, name="fresh", kind="test")
    v1, _ = qrels_version_add(split=split, qrels={"q1": {"d1": 1}})  # a first version is published on adding
    split.refresh_from_db()
    assert split.current_qrels == v1 and split.pending_qrels is None

    v2, _ = qrels_version_add(split=split, qrels=NEW_QRELS)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assert qrels_version_publish_and_rescore(split=split, version=v2) == 0
    split.refresh_from_db()
    assert split.current_qrels == v2 and split.pending_qrels is None
    assert sends(callbacks, "rescoring") == 0


def test_a_submission_scored_while_a_version_is_pending_is_scored_on_both(
    test_split, make_submission, django_capture_on_commit_callbacks
):
    subs = score_all(test_split, make_submission, ["BM25"])
    v1 = test_split.current_qrels
    v2, _, _ = stage_v2(test_split, django_capture_on_commit_callbacks)
    late = make_submission(test_split, "Dense")
    services.submission_score(late.pk)
    late.refresh_from_db()
    assert late.status == Submission.Status.SCORED
    assert set(Result.objects.filter(submission=late).values_list("qrels_version_id", flat=True)) == {v1.pk, v2.pk}
    assert set(board(test_split)) == {"BM25", "Dense"}  # on v1, both
    services.submission_rescore_on(submission_id=subs["BM25"].pk, qrels_version_id=v2.pk)
    assert_board(board(test_split), expected_board(test_split, v2, ["BM25", "Dense"]))


def test_a_submission_whose_scoring_started_before_publishing_is_sent_for_rescoring(
    test_split, make_submission, django_capture_on_commit_callbacks
):
    score_all(test_split, make_submission, ["BM25"])
    late = make_submission(test_split, "Dense")
    published = []

    def publish_midway(fraction: float) -> None:
        if not published:  # the run is read and v1 loaded: now the curator publishes v2
            published.append(stage_v2(test_split, django_capture_on_commit_callbacks)[0])

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        services.submission_score(late.pk, progress=publish_midway)
    v2 = published[0]
    late.refresh_from_db()
    assert late.status == Submission.Status.SCORED
    assert not Result.objects.filter(submission=late, qrels_version=v2).exists()
    # Sent after commit: the rescorings on v2 of BM25 (at publishing) and of this one.
    assert sends(callbacks, "rescoring") == 2
    # The switch waits for it too.
    assert late in rescoring.rescoring_waiting(split_id=test_split.pk, version_id=v2.pk)


def test_the_sweep_switches_when_the_last_waiting_submission_is_withdrawn(
    test_split, make_submission, django_capture_on_commit_callbacks
):
    subs = score_all(test_split, make_submission, ["BM25", "Dense"])
    v2, _, _ = stage_v2(test_split, django_capture_on_commit_callbacks)
    services.submission_rescore_on(submission_id=subs["BM25"].pk, qrels_version_id=v2.pk)
    services.submission_withdraw(submission=subs["Dense"])
    assert services.submissions_sweep()["switched"] == 1
    test_split.refresh_from_db()
    assert test_split.current_qrels == v2
    assert set(board(test_split)) == {"BM25"}


def test_the_sweep_resends_lost_rescorings_only_when_nothing_moves(
    test_split, make_submission, django_capture_on_commit_callbacks, settings
):
    settings.LEXBOARD_QUEUED_RESEND_SECONDS = 300
    subs = score_all(test_split, make_submission, ["BM25", "Dense"])
    v2, _, _ = stage_v2(test_split, django_capture_on_commit_callbacks)  # captured: as if the broker was down
    assert services.submissions_sweep()["rescoring_resent"] == 2  # never sent: sent at the next sweep
    assert "rescoring_resent" not in services.submissions_sweep()  # just sent
    later = timezone.now() + timedelta(seconds=301)
    assert services.submissions_sweep(now=later)["rescoring_resent"] == 2
    assert "rescoring_resent" not in services.submissions_sweep(now=later + timedelta(seconds=10))
    # Progress (a result stored recently) means the queue is moving: nothing is re-sent.
    services.submission_rescore_on(submission_id=subs["BM25"].pk, qrels_version_id=v2.pk)
    assert "rescoring_resent" not in services.submissions_sweep(now=timezone.now() + timedelta(seconds=290))
    assert services.submissions_sweep(now=timezone.now() + timedelta(seconds=700))["rescoring_resent"] == 1


def test_publishing_the_current_version_again_cancels_a_pending_one(
    test_split, make_submission, django_capture_on_commit_callbacks
):
    score_all(test_split, make_submission, ["BM25"])
    v1 = test_split.current_qrels
    stage_v2(test_split, django_capture_on_commit_callbacks)
    assert qrels_version_publish_and_rescore(split=test_split, version=v1) == 0
    test_split.refresh_from_db()
    assert test_split.current_qrels == v1 and test_split.pending_qrels is None


def test_a_rescoring_for_a_superseded_version_is_skipped(
    test_split, make_submission, django_capture_on_commit_callbacks
):
    subs = score_all(test_split, make_submission, ["BM25"])
    v2, _, _ = stage_v2(test_split, django_capture_on_commit_callbacks)
    v3, _ = qrels_version_add(split=test_split, qrels={"q1": {"d1": 1}})
    with django_capture_on_commit_callbacks(execute=False):
        qrels_version_publish_and_rescore(split=test_split, version=v3)
    assert services.submission_rescore_on(submission_id=subs["BM25"].pk, qrels_version_id=v2.pk) == "skipped"
    assert services.submission_rescore_on(submission_id=subs["BM25"].pk, qrels_version_id=v3.pk) == "stored"
    assert Split.objects.get(pk=test_split.pk).current_qrels == v3


def test_the_admin_shows_the_rescoring_progress_and_says_when_the_board_switches(
    client, staff, test_split, make_submission, django_capture_on_commit_callbacks
):
    subs = score_all(test_split, make_submission, ["BM25", "Dense"])
    v2, _ = qrels_version_add(split=test_split, qrels=NEW_QRELS)
    client.force_login(staff)
    changelist = reverse("admin:catalogue_qrelsversion_changelist")
    with django_capture_on_commit_callbacks(execute=False):
        page = client.post(changelist, {"action": "publish", "_selected_action": [v2.pk]}, follow=True)
    text = page.content.decode()
    assert "2 submissions queued for rescoring" in text and "keeps showing v1" in text
    services.submission_rescore_on(submission_id=subs["BM25"].pk, qrels_version_id=v2.pk)
    page = client.get(reverse("admin:catalogue_split_change", args=[test_split.pk])).content.decode()
    assert "rescoring in progress on qrels v2: 1 of 2" in page


def test_the_submission_page_lists_its_scores_on_each_version(
    client, test_split, make_submission, django_capture_on_commit_callbacks
):
    test_split.hidden = True  # what a hidden split's page shows of earlier versions
    test_split.min_judgment_batch = 0  # v2 is a small change (the batching rule: tests/security/)
    test_split.save(update_fields=["hidden", "min_judgment_batch"])
    subs = score_all(test_split, make_submission, ["BM25"])
    v1 = test_split.current_qrels
    v2, _, _ = stage_v2(test_split, django_capture_on_commit_callbacks)
    services.submission_rescore_on(submission_id=subs["BM25"].pk, qrels_version_id=v2.pk)
    page = client.get(subs["BM25"].get_absolute_url()).content.decode()
    assert "Scores by qrels version" in page
    dataset = test_split.dataset
    # A hidden split: the current version's released value only; an earlier one beside it would be a
    # before/after pair on the new judgments (tests/security/test_channel_leaks.py).
    value = expected_means(test_split, v2, RUNS["BM25"])[dataset.primary_measure]
    assert f"<td>v{v2.version} (current)" in page and disclosure.format_released(value, split=test_split) in page
    assert f"<td>v{v1.version}</td>" in page and "not shown" in page


def test_an_anonymous_visitor_sees_the_old_numbers_until_the_switch_then_the_new_ones(
    client, test_split, make_submission, django_capture_on_commit_callbacks
):
    subs = score_all(test_split, make_submission)
    url = reverse("leaderboard:dataset", args=[test_split.dataset.slug]) + f"?split={test_split.name}"
    fmt = disclosure.formatter(test_split)
    v1 = test_split.current_qrels
    old_value = fmt(expected_means(test_split, v1, RUNS["BM25"])["R@10"])
    page = client.get(url).content.decode()  # cached for anonymous visitors
    assert old_value in page

    v2, _, _ = stage_v2(test_split, django_capture_on_commit_callbacks)
    new_value = fmt(expected_means(test_split, v2, RUNS["Dense"])["R@10"])
    services.submission_rescore_on(submission_id=subs["BM25"].pk, qrels_version_id=v2.pk)
    services.submission_rescore_on(submission_id=subs["Dense"].pk, qrels_version_id=v2.pk)
    page = client.get(url).content.decode()
    assert old_value in page and new_value not in page
    with django_capture_on_commit_callbacks(execute=True):
        services.submission_rescore_on(submission_id=subs["Hybrid"].pk, qrels_version_id=v2.pk)
    page = client.get(url).content.decode()
    assert new_value in page and old_value not in page


def test_an_import_with_publish_stages_new_judgments_and_says_so(
    test_split, make_submission, django_capture_on_commit_callbacks
):
    from catalogue.importers.trec import parse_trec
    from catalogue.services import canonical_qrels_text
    from submissions.services import release_import

    score_all(test_split, make_submission, ["BM25", "Dense"])
    topics = "".join(f"q{i}\tQuestion {i}?\n" for i in range(1, 5)).encode()
    data = parse_trec(split="test", topics=("topics.tsv", topics),
                      qrels=("errata.qrels", canonical_qrels_text(NEW_QRELS).encode()), hidden=True)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        report = release_import(dataset=test_split.dataset, data=data, publish=True, note="errata")
    line = next(x for x in report.lines() if x.startswith("split test"))
    assert "qrels v2 added and published, 2 submissions queued for rescoring" in line
    assert "the leaderboard stays on v1 until every one is rescored" in line
    assert sends(callbacks, "rescoring") == 1
    test_split.refresh_from_db()
    assert test_split.current_qrels.version == 1 and test_split.pending_qrels.version == 2


def test_a_rescoring_whose_worker_keeps_dying_is_given_up_and_does_not_hold_up_the_switch(
    test_split, make_submission, django_capture_on_commit_callbacks, settings
):
    settings.LEXBOARD_MAX_SCORING_ATTEMPTS = 2
    subs = score_all(test_split, make_submission, ["BM25"])
    v2, _, _ = stage_v2(test_split, django_capture_on_commit_callbacks)
    # Two attempts that never came back (their worker was killed before storing anything).
    rescoring._rescoring_attempt(subs["BM25"].pk, v2.pk)
    rescoring._rescoring_attempt(subs["BM25"].pk, v2.pk)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assert services.submission_rescore_on(submission_id=subs["BM25"].pk, qrels_version_id=v2.pk) == "failed"
    test_split.refresh_from_db()
    assert test_split.current_qrels == v2  # switched; the submission goes through the ordinary scoring path
    assert sends(callbacks, "scoring") == 1
    assert Submission.objects.get(pk=subs["BM25"].pk).status == Submission.Status.QUEUED


def test_a_rescoring_whose_two_computations_disagree_leaves_a_marker_and_flags_the_submission(
    test_split, make_submission, django_capture_on_commit_callbacks, monkeypatch
):
    from evaluation import verify as verify_module

    subs = score_all(test_split, make_submission, ["BM25", "Dense"])
    v2, _, _ = stage_v2(test_split, django_capture_on_commit_callbacks)
    real = verify_module._pytrec_eval_values

    def off_by_a_bit(qrels, run, measures, **kwargs):  # the second implementation moves one value
        values = real(qrels, run, measures, **kwargs)
        if "q2" in values:
            values["q2"][measures[0].name] += 0.25
        return values

    monkeypatch.setattr(verify_module, "_pytrec_eval_values", off_by_a_bit)

    assert services.submission_rescore_on(submission_id=subs["BM25"].pk, qrels_version_id=v2.pk) == "failed"
    marker = Result.objects.get(submission=subs["BM25"], qrels_version=v2)
    assert services.is_failure_marker(marker) and "disagree" in marker.warnings[0]["message"]
    flag = Submission.objects.get(pk=subs["BM25"].pk).scores_disagree
    assert flag["qid"] == "q2" and flag["qrels_version"] == v2.version
