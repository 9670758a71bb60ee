"""The submissions services called directly: cheap checks, quota, scoring, the sweep."""

from __future__ import annotations

import gzip
import io
from datetime import timedelta

import numpy as np
import pytest
from django.utils import timezone

from evaluation.qrels import read_qrels
from evaluation.runs import read_run
from evaluation.scoring import evaluate
from submissions import services
from submissions.errors import ActionRefused, QuotaExceeded, UploadRefused
from submissions.models import Result, StatusEvent, Submission
from submissions.selectors import load_per_query, submission_quota, submission_result
from submissions.services import scoring

from .conftest import GOOD_RUN, METADATA, gz, upload

pytestmark = pytest.mark.django_db


def variant(i: int) -> str:
    """GOOD_RUN under another run tag: the same scores, other content (a user's same content twice is refused)."""
    return GOOD_RUN.replace(" sys\n", f" sys{i}\n")


def create(user, split, content=GOOD_RUN, name="run.txt", **kwargs) -> Submission:
    return services.submission_create(
        user=user, split=split, upload=upload(content, name), metadata={**METADATA, **kwargs.pop("metadata", {})},
        **kwargs,
    )


# --- cheap checks -----------------------------------------------------------------------


def test_it_saves_a_good_run_as_queued_with_its_file(alice, test_split):
    submission = create(alice, test_split)
    assert submission.status == Submission.Status.QUEUED
    assert submission.original_name == "run.txt"
    assert submission.file_size == len(GOOD_RUN)
    assert submission.checksum_file() == submission.sha256
    with submission.run_file.open("rb") as fh:
        assert fh.read() == GOOD_RUN.encode()


def test_it_sends_the_task_only_after_commit(alice, test_split, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        create(alice, test_split)
    assert len(callbacks) == 1


def test_it_accepts_a_gzipped_run_and_keeps_it_compressed(alice, test_split):
    submission = create(alice, test_split, gz(GOOD_RUN), name="run.trec.gz")
    assert submission.original_name == "run.trec.gz"
    with submission.run_file.open("rb") as fh:
        assert gzip.decompress(fh.read()) == GOOD_RUN.encode()


def test_it_refuses_a_file_over_the_size_cap_and_writes_nothing(alice, test_split, settings):
    settings.LEXBOARD_MAX_UPLOAD_BYTES = 100
    with pytest.raises(UploadRefused, match="limit"):
        create(alice, test_split)
    assert not Submission.objects.exists()


def test_it_refuses_a_gzip_bomb_without_inflating_it_all(alice, test_split, settings):
    settings.LEXBOARD_MAX_DECOMPRESSED_BYTES = 1024 * 1024
    # 64 MB of one repeated line compresses to about 64 KB.
    bomb = gzip.compress(b"q1 Q0 d1 1 1.0 sys\n" * (64 * 1024 * 1024 // 19), compresslevel=9)
    assert len(bomb) < 1024 * 1024
    with pytest.raises(UploadRefused, match="decompresses to more than") as refused:
        create(alice, test_split, bomb, name="bomb.gz")
    assert refused.value.details[0]["line"] is None
    assert not Submission.objects.exists()


def test_it_refuses_a_truncated_gzip(alice, test_split):
    data = gz(GOOD_RUN * 50)
    with pytest.raises(UploadRefused, match="truncated or corrupt"):
        create(alice, test_split, data[: len(data) // 2], name="run.gz")
    assert not Submission.objects.exists()


def test_it_refuses_non_utf8_text_naming_the_line(alice, test_split):
    content = GOOD_RUN.encode() + "q3 Q0 d11 3 3.0 café\n".encode("latin-1")
    with pytest.raises(UploadRefused) as refused:
        create(alice, test_split, content)
    lines = [d["line"] for d in refused.value.details]
    assert 9 in lines, refused.value.details
    assert not Submission.objects.exists()


def test_it_refuses_a_wrong_column_count_naming_the_line(alice, test_split):
    content = GOOD_RUN + "q3 d11 3 3.0 sys\n"
    with pytest.raises(UploadRefused) as refused:
        create(alice, test_split, content)
    assert refused.value.details[0]["line"] == 9
    assert "column" in refused.value.details[0]["reason"]


def test_it_refuses_a_docid_scheme_from_another_dataset_and_says_which_scheme(alice, test_split):
    content = "".join(f"q1 Q0 CivC::{i} {i} {10 - i}.0 sys\n" for i in range(1, 9))
    with pytest.raises(UploadRefused) as refused:
        create(alice, test_split, content)
    assert "`d1`" in refused.value.message  # the tiny dataset's docid example
    assert refused.value.details[0]["line"] == 1
    assert not Submission.objects.exists()


def test_it_refuses_an_empty_file(alice, test_split):
    with pytest.raises(UploadRefused, match="empty"):
        create(alice, test_split, "")


def test_it_refuses_a_split_closed_to_submissions(alice, test_split):
    test_split.accepts_submissions = False
    test_split.save()
    with pytest.raises(UploadRefused, match="does not accept"):
        create(alice, test_split)


def test_it_refuses_invalid_metadata_field_by_field(alice, test_split):
    with pytest.raises(UploadRefused) as refused:
        create(alice, test_split, metadata={"paper_url": "not a url", "family": "magic"})
    reasons = " ".join(d["reason"] for d in refused.value.details)
    assert "paper_url" in reasons and "family" in reasons


# --- quota -----------------------------------------------------------------------------------


def test_it_refuses_past_the_daily_limit_with_the_time_of_the_next_submission(alice, test_split):
    test_split.daily_limit = 2
    test_split.save()
    first = create(alice, test_split)
    create(alice, test_split, variant(1))
    with pytest.raises(QuotaExceeded) as refused:
        create(alice, test_split, variant(2))
    expected = first.created_at + timedelta(hours=24)
    assert refused.value.retry_at == expected
    assert expected.strftime("%Y-%m-%d %H:%M UTC") in refused.value.message
    assert Submission.objects.count() == 2


def test_the_daily_window_rolls(alice, test_split):
    test_split.daily_limit = 1
    test_split.save()
    old = create(alice, test_split)
    Submission.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(hours=24, minutes=1))
    create(alice, test_split, variant(1))  # the old one left the window


def test_it_refuses_past_the_total_limit(alice, test_split):
    test_split.total_limit = 1
    test_split.daily_limit = 0
    test_split.save()
    create(alice, test_split)
    with pytest.raises(QuotaExceeded, match="the 1 submission allowed"):
        create(alice, test_split)


def test_service_failures_and_refused_files_do_not_count(alice, test_split):
    test_split.daily_limit = 1
    test_split.save()
    with pytest.raises(UploadRefused):
        create(alice, test_split, "garbage\n")
    first = create(alice, test_split)
    first.claim()
    first.mark_failed(kind=Submission.FailureKind.SERVICE, message="our fault")
    assert submission_quota(user=alice, split=test_split).allowed
    create(alice, test_split)


def test_input_failures_and_withdrawn_submissions_count(alice, test_split):
    test_split.daily_limit = 2
    test_split.save()
    failed = create(alice, test_split)
    failed.mark_failed(kind=Submission.FailureKind.INPUT, message="bad file")
    withdrawn = create(alice, test_split, variant(1))
    services.submission_withdraw(submission=withdrawn)
    assert not submission_quota(user=alice, split=test_split).allowed


def test_the_quota_is_per_user_and_baselines_are_exempt(alice, bob, test_split):
    test_split.daily_limit = 1
    test_split.save()
    create(alice, test_split)
    create(bob, test_split)
    create(alice, test_split, variant(1), is_baseline=True)


# --- scoring -----------------------------------------------------------------------------------


def expected_scores(split, content: str) -> dict[str, float]:
    dataset = split.dataset
    qrels = read_qrels(split.current_qrels.text().encode(), threshold=dataset.relevance_threshold)
    evaluation = evaluate(qrels, read_run(content.encode()), dataset.measures, depth=dataset.depth)
    return {name: float(evaluation.means[name]) for name in dataset.measures}


def test_scoring_stores_every_measure_and_the_per_query_vectors(alice, test_split):
    submission = create(alice, test_split)
    services.submission_score(submission.pk)
    submission.refresh_from_db()
    assert submission.status == Submission.Status.SCORED
    assert submission.progress == 1.0
    result = Result.objects.get(submission=submission)
    assert result.scores == expected_scores(test_split, GOOD_RUN)
    assert result.primary_score == result.scores["R@10"]
    assert result.qrels_version_id == test_split.current_qrels_id
    assert result.n_queries == 3  # q4 has no relevant document
    arrays = submission_result(submission=submission).per_query
    assert list(arrays["qids"]) == ["q1", "q2", "q3"]
    assert np.isclose(arrays["R@10"].mean(), result.scores["R@10"])
    assert list(arrays["n_relevant"]) == [2, 1, 3]
    assert "recall_curve" in arrays and "first_relevant_rank" in arrays
    assert [e.status for e in submission.events.all()] == ["scoring", "scored"]


def test_scoring_a_gzipped_run_gives_the_same_scores(alice, test_split):
    plain = create(alice, test_split)
    packed = create(alice, test_split, gz(variant(1)), name="run.gz")
    for s in (plain, packed):
        services.submission_score(s.pk)
    assert Result.objects.get(submission=plain).scores == Result.objects.get(submission=packed).scores


def test_scoring_bumps_the_split_cache_version(alice, test_split):
    submission = create(alice, test_split)
    before = test_split.cache_version
    services.submission_score(submission.pk)
    test_split.refresh_from_db()
    assert test_split.cache_version > before


def test_a_second_claim_gets_nothing(alice, test_split):
    submission = create(alice, test_split)
    assert Submission.objects.get(pk=submission.pk).claim() is True
    assert Submission.objects.get(pk=submission.pk).claim() is False


def test_scoring_twice_stores_one_result(alice, test_split):
    submission = create(alice, test_split)
    services.submission_score(submission.pk)
    services.submission_score(submission.pk)  # a redelivered message: not queued any more, no-op
    assert Result.objects.filter(submission=submission).count() == 1
    assert StatusEvent.objects.filter(submission=submission, status="scored").count() == 1
    # Rescored on the same qrels version: still one result.
    assert services.submission_rescore(submission=submission)
    services.submission_score(submission.pk)
    assert Result.objects.filter(submission=submission).count() == 1


def test_a_bad_line_after_the_first_lines_is_refused_at_upload_with_its_line_number(alice, test_split):
    filler = "".join(f"q{100 + i} Q0 d{1 + i % 20} 1 1.0 sys\n" for i in range(59))  # past the first lines
    content = GOOD_RUN + filler + "q3 Q0 d20 x NaN sys\n"
    with pytest.raises(UploadRefused) as refused:
        create(alice, test_split, content)
    assert refused.value.details[0]["line"] == 68
    assert not Submission.objects.exists()


def test_a_bad_line_past_the_request_budget_fails_in_the_worker_with_its_line_number(alice, test_split, settings):
    settings.LEXBOARD_UPLOAD_SCAN_BYTES = 1000
    filler = "".join(f"q{100 + i} Q0 d{1 + i % 20} 1 1.0 sys\n" for i in range(59))
    content = GOOD_RUN + filler + "q3 Q0 d20 x NaN sys\n"
    submission = create(alice, test_split, content)
    assert submission.checked_in_worker
    services.submission_score(submission.pk)
    submission.refresh_from_db()
    assert submission.status == Submission.Status.FAILED
    assert submission.failure_kind == Submission.FailureKind.INPUT
    assert submission.error["details"][0]["line"] == 68
    assert "line 68" in submission.error["message"]
    assert not Result.objects.exists()


def test_a_duplicate_pair_fails_as_the_files_fault(alice, test_split):
    submission = create(alice, test_split, GOOD_RUN + "q1 Q0 d1 9 0.5 sys\n")
    services.submission_score(submission.pk)
    submission.refresh_from_db()
    assert submission.status == Submission.Status.FAILED
    assert submission.failure_kind == "input"
    assert {d["line"] for d in submission.error["details"]} & {1, 9}


def test_an_unexpected_error_requeues_then_fails_as_a_service_error(alice, test_split, settings,
                                                                     django_capture_on_commit_callbacks):
    settings.LEXBOARD_MAX_SCORING_ATTEMPTS = 2
    submission = create(alice, test_split)
    # Make the stored file unreadable: an error of ours, not of the participant's file.
    submission.run_file.storage.delete(submission.run_file.name)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        services.submission_score(submission.pk)
    submission.refresh_from_db()
    assert submission.status == Submission.Status.QUEUED
    assert len(callbacks) == 1  # sent again, with a delay
    services.submission_score(submission.pk)
    submission.refresh_from_db()
    assert submission.status == Submission.Status.FAILED
    assert submission.failure_kind == Submission.FailureKind.SERVICE
    assert "does not count" in submission.error["message"]
    assert submission_quota(user=alice, split=test_split).daily_used == 0


def test_a_run_scored_while_the_split_has_no_published_qrels_waits_for_them(alice, test_split):
    submission = create(alice, test_split)
    type(test_split).objects.filter(pk=test_split.pk).update(current_qrels=None)
    services.submission_score(submission.pk)
    submission.refresh_from_db()
    assert submission.status == Submission.Status.WAITING
    assert submission.failure_kind == "" and not submission.results.exists()


def test_score_now_scores_in_process(alice, test_split):
    submission = create(alice, test_split, is_baseline=True, enqueue=False)
    scored = services.submission_score_now(submission.pk)
    assert scored.status == Submission.Status.SCORED


def test_split_rescore_queues_scored_submissions_and_keeps_old_results(alice, test_split):
    from catalogue.services import qrels_version_add, qrels_version_publish

    submission = create(alice, test_split)
    services.submission_score(submission.pk)
    old = Result.objects.get(submission=submission)
    version, _ = qrels_version_add(split=test_split, qrels={"q1": {"d1": 1}, "q2": {"d3": 1}})
    qrels_version_publish(split=test_split, version=version, small_change_reason="errata")
    assert services.split_rescore(split=test_split) == 1
    submission.refresh_from_db()
    assert submission.status == Submission.Status.QUEUED
    services.submission_score(submission.pk)
    assert Result.objects.filter(submission=submission).count() == 2
    current = submission_result(submission=Submission.objects.get(pk=submission.pk)).result
    assert current.qrels_version == version and current.pk != old.pk


# --- the sweep ---------------------------------------------------------------------------------


def test_the_sweep_resends_queued_submissions_whose_message_was_lost(alice, test_split, settings):
    submission = create(alice, test_split)
    # Never sent (e.g. the broker was down): enqueued_at is null.
    later = timezone.now() + timedelta(seconds=60)
    result = services.submissions_sweep(now=later)
    assert result["resent"] == 1
    submission.refresh_from_db()
    assert submission.enqueued_at is not None
    # Sent recently: left alone.
    assert services.submissions_sweep(now=later)["resent"] == 0
    # Sent long ago and still queued: sent again.
    much_later = timezone.now() + timedelta(seconds=settings.LEXBOARD_QUEUED_RESEND_SECONDS + 5)
    assert services.submissions_sweep(now=much_later)["resent"] == 1


def test_the_sweep_requeues_a_submission_whose_worker_went_silent(alice, test_split, settings,
                                                                   django_capture_on_commit_callbacks):
    submission = create(alice, test_split)
    assert submission.claim()
    later = timezone.now() + timedelta(seconds=settings.LEXBOARD_HEARTBEAT_STALE_SECONDS + 1)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        counts = services.submissions_sweep(now=later)
    assert counts["requeued"] == 1 and len(callbacks) == 1
    submission.refresh_from_db()
    assert submission.status == Submission.Status.QUEUED
    # And the next worker scores it normally.
    services.submission_score(submission.pk)
    submission.refresh_from_db()
    assert submission.status == Submission.Status.SCORED
    assert submission.attempts == 2


def test_the_sweep_leaves_a_live_worker_alone(alice, test_split):
    submission = create(alice, test_split)
    assert submission.claim()
    assert services.submissions_sweep()["requeued"] == 0


def test_a_queued_message_held_by_a_silent_worker_is_sent_again_and_a_renewed_hold_is_left_alone(
    alice, test_split, settings, django_capture_on_commit_callbacks
):
    """#39 item 4: a worker received the message and died before starting it (prefetched, or waiting for a
    pool process): the row is still queued and its message is with the dead worker, so nothing would score it
    before the queued resend (300 s). Its hold, renewed by every live worker's step, goes stale instead."""
    held, renewed = create(alice, test_split), create(alice, test_split, content=variant(1))
    services.queued_hold(held.pk, "dead-host:1")
    services.queued_hold(renewed.pk, "live-host:2")
    later = timezone.now() + timedelta(seconds=settings.LEXBOARD_HEARTBEAT_STALE_SECONDS + 1)
    assert services.scoring_recover()["resent"] == 0  # within the bound: both holders may be alive
    assert services.queued_holds_renew("live-host:2") == 1
    Submission.objects.filter(pk=renewed.pk).update(heartbeat_at=later)  # as if live-host renewed it at `later`
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        counts = services.scoring_recover(now=later)
    assert counts == {"requeued": 0, "failed": 0, "resent": 1} and len(callbacks) == 1
    held.refresh_from_db()
    renewed.refresh_from_db()
    assert (held.status, held.held_by, held.heartbeat_at) == (Submission.Status.QUEUED, "", None)
    assert renewed.held_by == "live-host:2"
    assert list(StatusEvent.objects.filter(submission=held).values_list("status", "message"))[-1] == (
        "queued", "the worker that had received it went silent; sent again")
    # Resent once: a second look finds nothing more to send, and the worker that takes it scores it as usual.
    assert services.scoring_recover(now=later)["resent"] == 0
    services.submission_score(held.pk)
    held.refresh_from_db()
    assert held.status == Submission.Status.SCORED and held.held_by == ""


def test_a_hold_is_only_on_a_queued_row_and_starting_the_task_ends_it(alice, test_split):
    submission = create(alice, test_split)
    assert submission.claim()
    services.queued_hold(submission.pk, "host:1")  # a duplicate message received while another worker scores it
    submission.refresh_from_db()
    assert submission.held_by == ""
    assert submission.requeue(message="test")
    services.queued_hold(submission.pk, "host:1")
    assert submission.claim()
    submission.refresh_from_db()
    assert submission.held_by == "" and submission.status == Submission.Status.SCORING


def test_the_sweep_fails_a_stale_submission_after_the_last_attempt(alice, test_split, settings):
    settings.LEXBOARD_MAX_SCORING_ATTEMPTS = 1
    submission = create(alice, test_split)
    assert submission.claim()
    later = timezone.now() + timedelta(seconds=settings.LEXBOARD_HEARTBEAT_STALE_SECONDS + 1)
    assert services.submissions_sweep(now=later)["failed"] == 1
    submission.refresh_from_db()
    assert submission.failure_kind == Submission.FailureKind.SERVICE
    assert submission_quota(user=alice, split=test_split).daily_used == 0


def test_a_result_of_a_worker_that_lost_its_claim_is_dropped(alice, test_split):
    submission = create(alice, test_split)
    assert submission.claim()
    # The sweep gave it to someone else meanwhile (attempt 2 now holds it).
    Submission.objects.get(pk=submission.pk).requeue()
    Submission.objects.get(pk=submission.pk).claim()
    heartbeat = scoring._Heartbeat(submission.pk, 1)
    scoring._score_claimed(submission, 1, heartbeat, None)
    assert not Result.objects.exists()
    assert Submission.objects.get(pk=submission.pk).status == Submission.Status.SCORING


# --- metadata, visibility, withdrawal, resubmission -----------------------------------------------


def test_metadata_can_be_edited_and_is_validated(alice, test_split):
    submission = create(alice, test_split)
    services.submission_update_metadata(submission=submission, data={"system_name": "BM25+RM3", "params": "0"})
    submission.refresh_from_db()
    assert submission.system_name == "BM25+RM3"
    with pytest.raises(UploadRefused):
        services.submission_update_metadata(submission=submission, data={"code_url": "nope"})


def test_withdrawing_twice_is_refused(alice, test_split):
    submission = create(alice, test_split)
    services.submission_withdraw(submission=submission)
    assert not submission.is_public
    with pytest.raises(ActionRefused):
        services.submission_withdraw(submission=submission)


def test_visibility_changes(alice, test_split):
    submission = create(alice, test_split)
    services.submission_set_visibility(submission=submission, visibility="private")
    assert Submission.objects.get(pk=submission.pk).visibility == "private"
    with pytest.raises(ActionRefused):
        services.submission_set_visibility(submission=submission, visibility="secret")


def test_resubmitting_copies_the_metadata_and_links_the_old_submission(alice, test_split):
    failed = create(alice, test_split, metadata={"team": "UCLouvain", "params": "110M"})
    failed.mark_failed(kind="input", message="bad")
    new = services.submission_resubmit(submission=failed, upload=upload(variant(1)))
    assert new.pk != failed.pk
    assert new.replaces == failed
    assert (new.team, new.params, new.system_name) == ("UCLouvain", "110M", "BM25")


def test_load_per_query_of_an_empty_result_is_empty():
    assert load_per_query(Result(per_query=b"")) == {}


def test_per_query_blob_is_plain_npz(alice, test_split):
    submission = create(alice, test_split)
    services.submission_score(submission.pk)
    blob = bytes(Result.objects.get(submission=submission).per_query)
    with np.load(io.BytesIO(blob), allow_pickle=False) as data:
        assert "qids" in data.files


def test_refusals_leave_no_file_behind(alice, test_split, private_data_dir):
    def files():
        return sorted(p for p in private_data_dir.rglob("*") if p.is_file())

    before = files()
    test_split.daily_limit = 1
    test_split.save()
    for content in ("garbage\n", gz(GOOD_RUN)[:20]):
        with pytest.raises(UploadRefused):
            create(alice, test_split, content)
    create(alice, test_split)
    with pytest.raises(QuotaExceeded):
        create(alice, test_split)
    assert len(files()) == len(before) + 1
