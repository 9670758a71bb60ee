"""End to end through a real Celery worker process, broker and database: publish new judgments, watch the switch.

Three submissions are scored by the worker on v1; the curator publishes v2;
the worker rescores each one while the test polls the leaderboard. Every
snapshot must be entirely on v1 or entirely on v2 (no row missing, no mix),
and the final numbers must equal what the metric core gives on v2.
"""

from __future__ import annotations

import math
import time

import pytest

from catalogue.models import Split
from catalogue.services import qrels_version_add
from leaderboard.selectors import leaderboard_rows
from submissions.models import Result, Submission
from submissions.services import qrels_version_publish_and_rescore
from tests.waiting import wait_until

from .conftest import NEW_QRELS, RUNS, expected_means

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

#: Bounded waits: generous, the test machines are shared and slow.
SCORING_TIMEOUT = 90
SWITCH_TIMEOUT = 90


def board(split) -> dict[str, dict[str, float]]:
    split = Split.objects.get(pk=split.pk)
    return {row.system: row.scores for row in leaderboard_rows(split=split)}


def same(actual: dict, expected: dict) -> bool:
    return set(actual) == set(expected) and all(
        set(actual[s]) == set(expected[s])
        and all(math.isclose(actual[s][m], expected[s][m], rel_tol=0, abs_tol=1e-12) for m in expected[s])
        for s in expected
    )


def wait_scored(ids: list[int], worker) -> None:
    def scored() -> bool:
        statuses = set(Submission.objects.filter(pk__in=ids).values_list("status", flat=True))
        assert Submission.Status.FAILED not in statuses, list(Submission.objects.values("pk", "error"))
        return statuses == {Submission.Status.SCORED}

    wait_until(scored, timeout=SCORING_TIMEOUT, what=f"submissions {ids} scored", worker=worker)


def test_publishing_new_qrels_rescores_every_submission_and_switches_the_leaderboard_at_once(
    transactional_db, celery_worker_process, test_split, make_submission
):
    # The tiny test split made public (``test_split``): the board shows every measure at full precision, so the
    # switch from v1's numbers to v2's is visible in every measure (a 3-topic hidden split shows R@10 on a 50-point
    # grid only).
    split = test_split
    subs = {system: make_submission(split, system, enqueue=True) for system in RUNS}
    wait_scored([s.pk for s in subs.values()], celery_worker_process)
    v1 = Split.objects.get(pk=split.pk).current_qrels
    on_v1 = {system: expected_means(split, v1, RUNS[system]) for system in RUNS}
    assert same(board(split), on_v1)

    v2, _ = qrels_version_add(split=split, qrels=NEW_QRELS, note="errata")
    on_v2 = {system: expected_means(split, v2, RUNS[system]) for system in RUNS}
    assert not same(on_v1, on_v2)
    assert qrels_version_publish_and_rescore(split=split, version=v2) == 3

    snapshots = 0
    deadline = time.monotonic() + SWITCH_TIMEOUT
    while True:
        current = Split.objects.filter(pk=split.pk).values_list("current_qrels_id", flat=True).get()
        snapshot = board(split)
        snapshots += 1
        # All three rows, all on one version, at every moment.
        assert same(snapshot, on_v1) or same(snapshot, on_v2), snapshot
        if current == v2.pk and same(snapshot, on_v2):
            break
        assert celery_worker_process.alive, f"the worker died:\n{celery_worker_process.log()[-3000:]}"
        assert time.monotonic() < deadline, (
            f"still on v1 after {SWITCH_TIMEOUT}s; worker log:\n{celery_worker_process.log()[-3000:]}"
        )
        time.sleep(0.05)

    split = Split.objects.get(pk=split.pk)
    assert split.current_qrels == v2 and split.pending_qrels is None
    for system, submission in subs.items():
        results = {r.qrels_version_id: r for r in Result.objects.filter(submission=submission)}
        assert set(results) == {v1.pk, v2.pk}  # the v1 scores stay in the history
        # A public split: the stored scores are the board's, at full precision.
        assert results[v2.pk].scores == pytest.approx(on_v2[system], abs=5e-5)
        assert results[v1.pk].scores == pytest.approx(on_v1[system], abs=5e-5)
        # Rescoring never took the submission off the board: scored once, never queued again.
        assert [e.status for e in submission.events.all()] == ["scoring", "scored"]


def test_two_worker_processes_rescore_in_parallel_while_users_upload_and_withdraw(
    transactional_db, worker_factory, tiny_dataset, make_submission
):
    worker = worker_factory(pool="prefork", concurrency=2)
    split = tiny_dataset.splits.get(name="test")
    made = [make_submission(split, system, enqueue=True, copy=i // 3)
            for i, system in enumerate(("BM25", "Dense", "Hybrid") * 2)]
    run_of = {s.pk: RUNS[s.system_name] for s in made}
    wait_scored(list(run_of), worker)
    v1 = Split.objects.get(pk=split.pk).current_qrels
    v2, _ = qrels_version_add(split=split, qrels=NEW_QRELS, note="errata")
    assert qrels_version_publish_and_rescore(split=split, version=v2,
                                                 small_change_reason="errata") == 6

    # Meanwhile: one entry is withdrawn, one is uploaded (it is scored on both versions).
    from submissions.services import submission_withdraw

    withdrawn = made[0]
    submission_withdraw(submission=withdrawn)
    late = make_submission(split, "Dense", enqueue=True, copy=2)
    run_of[late.pk] = RUNS["Dense"]
    on = {
        version.pk: {pk: expected_means(split, version, content) for pk, content in run_of.items()}
        for version in (v1, v2)
    }
    must_show = set(run_of) - {withdrawn.pk, late.pk}

    deadline = time.monotonic() + SWITCH_TIMEOUT
    while True:
        current = Split.objects.filter(pk=split.pk).values_list("current_qrels_id", flat=True).get()
        rows = {row.submission_id: row.scores for row in leaderboard_rows(split=Split.objects.get(pk=split.pk))}
        assert must_show <= set(rows) and withdrawn.pk not in rows, rows  # nobody vanishes
        assert any(same(rows, {pk: on[v][pk] for pk in rows}) for v in on), rows  # one version for all rows
        if current == v2.pk and late.pk in rows:
            break
        assert worker.alive, f"the worker died:\n{worker.log()[-3000:]}"
        assert time.monotonic() < deadline, f"still on v1 after {SWITCH_TIMEOUT}s; worker log:\n{worker.log()[-3000:]}"
        time.sleep(0.05)

    assert same(rows, {pk: on[v2.pk][pk] for pk in rows}) and set(rows) == must_show | {late.pk}
    assert Split.objects.get(pk=split.pk).pending_qrels is None
    for submission in Submission.objects.filter(pk__in=must_show):
        assert Result.objects.filter(submission=submission).count() == 2
        assert [e.status for e in submission.events.all()] == ["scoring", "scored"]


def test_a_publication_made_while_the_broker_is_down_is_rescored_after_the_next_sweep(
    transactional_db, celery_worker_process, tiny_dataset, make_submission
):
    from submissions.services import submissions_sweep
    from tests.submissions.conftest import BrokerOutage

    split = tiny_dataset.splits.get(name="test")
    subs = {system: make_submission(split, system, enqueue=True) for system in ("BM25", "Dense")}
    wait_scored([s.pk for s in subs.values()], celery_worker_process)
    v2, _ = qrels_version_add(split=split, qrels=NEW_QRELS, note="errata")

    outage = BrokerOutage()
    outage.start()
    try:
        started = time.monotonic()
        assert qrels_version_publish_and_rescore(split=split, version=v2,
                                                 small_change_reason="errata") == 2  # staged; no message got out
        assert time.monotonic() - started < 10  # one failed send, not one per submission
    finally:
        outage.restore()
    split = Split.objects.get(pk=split.pk)
    assert split.pending_qrels == v2 and split.current_qrels != v2

    assert submissions_sweep()["rescoring_resent"] == 2
    wait_until(lambda: Split.objects.get(pk=split.pk).current_qrels_id == v2.pk, timeout=SWITCH_TIMEOUT,
               what="the board switched to v2", worker=celery_worker_process)
    expected = {system: expected_means(split, v2, RUNS[system]) for system in subs}
    assert same(board(split), expected)
