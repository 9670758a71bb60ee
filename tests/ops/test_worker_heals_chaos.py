"""A worker that heals: kill -9 of the scoring worker, its pool processes, the sweep worker and beat.

The stack is the one ``make run`` starts (scripts/run.sh): a scoring worker,
a small sweep worker consuming only the sweep queue, and beat, each under
``scripts/supervise.sh`` (which starts it again when it dies), on whichever
broker this session uses (the embedded ``filesystem://`` or Redis). Nothing
here calls the sweep by hand: beat sends it, the sweep worker runs it, with
short staleness and sweep intervals so the test is quick. After the kill,
every submission — the ones being scored, the queued ones and one uploaded
after the kill — ends scored exactly once (one Result per submission and
qrels version, one ``scored`` event) within a bound of the same form as the
one in docs/operations.md.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
from django.conf import settings

from submissions.models import Result, StatusEvent, Submission
from tests.submissions.conftest import GOOD_RUN, good_run
from tests.submissions.test_chaos_worker import BIG_RUN
from tests.submissions.test_e2e_worker import post_run
from tests.waiting import wait_until, wait_until_final

pytestmark = [pytest.mark.chaos, pytest.mark.e2e, pytest.mark.slow, pytest.mark.private_storage]

STALE, INTERVAL, RESEND = 4, 1, 8
#: The bound of docs/operations.md with these settings: stale + interval + a
#: restart, plus the scoring of everything queued, on a shared, slow machine.
HEAL_SECONDS = 240
EMBEDDED = settings.CELERY_BROKER_URL.startswith("filesystem")




@pytest.fixture
def stack(worker_factory, worker_queue):
    """Start scoring worker (``pool``), sweep worker and beat, each supervised."""
    env = {
        "LEXBOARD_HEARTBEAT_STALE_SECONDS": str(STALE),
        "LEXBOARD_SWEEP_INTERVAL": str(INTERVAL),
        "LEXBOARD_QUEUED_RESEND_SECONDS": str(RESEND),
        "LEXBOARD_SWEEP_QUEUE": f"{worker_queue}-sweep",
    }

    def start(pool: str) -> dict:
        return {
            "scoring": worker_factory(pool=pool, concurrency=2 if pool == "prefork" else 1, supervised=True,
                                      extra_env=env),
            "sweep": worker_factory(queues=[f"{worker_queue}-sweep"], supervised=True, extra_env=env),
            "beat": worker_factory(beat=True, supervised=True, extra_env=env),
        }

    return start


def _kill(pids: list[int]) -> None:
    assert pids, "nothing to kill"
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _wait_scoring(worker) -> None:
    wait_until(Submission.objects.filter(status=Submission.Status.SCORING).exists, timeout=90,
               what="a submission being scored", worker=worker, interval=0.05)


def _assert_scored_exactly_once(ids: list[int], worker, started: float) -> None:
    for pk in ids:
        left = max(1.0, HEAL_SECONDS - (time.monotonic() - started))
        assert wait_until_final(pk, worker, timeout=left).status == Submission.Status.SCORED
    for pk in ids:
        assert Result.objects.filter(submission_id=pk).count() == 1
        assert StatusEvent.objects.filter(submission_id=pk, status="scored").count() == 1
        events = [e.status for e in Submission.objects.get(pk=pk).events.all()]
        assert events[-1] == "scored" and events.count("scored") == 1, events
    print(f"healed: {len(ids)} submissions scored once, {time.monotonic() - started:.1f} s after the kill")


@pytest.mark.parametrize(
    "pool, target",
    [
        ("solo", "worker"),  # the embedded default of make run: the worker is its own pool
        ("prefork", "pool"),  # every pool process of a prefork worker (compose's worker)
        ("prefork", "worker"),  # the main process of a prefork worker
        ("solo", "everything"),  # scoring worker, sweep worker and beat at once
    ],
)
def test_kill_9_during_scoring_heals_and_scores_every_submission_exactly_once(
    transactional_db, stack, client, alice, tiny_dataset, pool, target
):
    if EMBEDDED and pool == "prefork" and not os.environ.get("LEXBOARD_CHAOS_PREFORK_ON_FILESYSTEM"):
        # Set it to see the wedge: the replacement pool processes never run the redelivered task.
        pytest.skip("make run uses the solo pool on filesystem://: prefork wedges there (docs/operations.md)")
    processes = stack(pool)
    scoring = processes["scoring"]
    split = tiny_dataset.splits.get(name="test")
    split.daily_limit = 0
    split.save()
    client.force_login(alice)
    for i in range(3):  # three different files (the same file twice is refused as a duplicate)
        assert post_run(client, split, BIG_RUN.replace(" big\n", f" big{i}\n"), name="big.txt").status_code == 302
    _wait_scoring(scoring)

    main = scoring.children()  # the celery process under supervise.sh
    if target == "pool":
        victims = [pid for parent in main for pid in scoring.children_of(parent)]
    elif target == "worker":
        victims = main
    else:
        victims = main + processes["sweep"].children() + processes["beat"].children()
    started = time.monotonic()
    _kill(victims)

    # A new upload after the kill is scored too (the wedge kept new ones queued forever).
    assert post_run(client, split, GOOD_RUN, name="after.txt").status_code == 302
    ids = list(Submission.objects.order_by("pk").values_list("pk", flat=True))
    assert len(ids) == 4
    _assert_scored_exactly_once(ids, scoring, started)
    assert "starting it again" in scoring.log() or target == "pool"


def test_a_solo_worker_past_its_memory_limit_exits_after_its_task_and_is_started_again(
    transactional_db, worker_factory, client, alice, tiny_dataset
):
    # 1 KiB: every scoring process is "too big", so the worker leaves after each task.
    worker = worker_factory(supervised=True, extra_env={"LEXBOARD_WORKER_MAX_MEMORY_KB": "1"})
    split = tiny_dataset.splits.get(name="test")
    split.daily_limit = 0
    split.save()
    client.force_login(alice)
    for content, name in ((GOOD_RUN, "a.txt"), (good_run(1), "b.txt")):  # two files: no duplicate
        assert post_run(client, split, content, name=name).status_code == 302
    for pk in Submission.objects.values_list("pk", flat=True):
        assert wait_until_final(pk, worker, timeout=120).status == Submission.Status.SCORED
        assert Result.objects.filter(submission_id=pk).count() == 1
    deadline = time.monotonic() + 60
    while "exited with status 0; starting it again" not in worker.log():
        assert time.monotonic() < deadline, worker.log()[-3000:]
        time.sleep(0.5)
