"""Killing a worker in the middle of a task, for certain: the chaos tests' one way to do it.

A kill sent once a row is *seen* in ``scoring`` can land after the row was stored (the worker is quick, the test
process slow on a loaded machine). ``frozen_mid_task`` stops the workers (SIGSTOP) as soon as a row is in scoring
and returns only once a stopped worker is shown to be scoring a row still in scoring; the caller then kills what it
means to kill (SIGKILL reaches a stopped process) and lets the rest go on (``send_signal(frozen, SIGCONT)``).
"""

from __future__ import annotations

import os
import re
import signal
import time

from submissions.models import Submission
from tests.fixtures_worker import process_children
from tests.waiting import wait_until

#: The line a worker logs once it has claimed a submission (submissions/services/scoring.py).
_SCORING = re.compile(r"submission (\d+): scoring, attempt (\d+)")
#: How long the frozen workers' last writes are given to land before the rows are read (read twice, this far apart).
SETTLE_SECONDS = 0.2


def process_tree(pid: int) -> list[int]:
    """A process and all its descendants, parents first (Linux /proc)."""
    return [pid] + [descendant for child in process_children(pid) for descendant in process_tree(child)]


def send_signal(pids, sig: int) -> None:
    """Send ``sig`` to each of ``pids``; one already gone is skipped."""
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def freeze(workers) -> list[int]:
    """SIGSTOP every process of the workers' trees (parents first, then any child forked meanwhile): from then on
    no row they hold can change."""
    frozen: list[int] = []
    while new := [pid for worker in workers for pid in process_tree(worker.process.pid) if pid not in frozen]:
        send_signal(new, signal.SIGSTOP)
        frozen += new
    return frozen


def _scoring(ids: list[int]) -> set[tuple[int, int]]:
    """The rows being scored now, with their attempts."""
    return set(Submission.objects.filter(pk__in=ids, status=Submission.Status.SCORING).values_list("pk", "attempts"))


def frozen_mid_task(ids: list[int], workers) -> tuple[list[object], list[int]]:
    """The workers stopped (SIGSTOP) while one of them is scoring a submission, with proof: the workers scoring one
    (a "submission N: scoring, attempt k" in a worker's log, row N still in scoring on attempt k: only one process
    claims an attempt), and the frozen pids.

    A kill sent once a row was *seen* scoring could land after it was stored: a large run is scored in about a
    second on a quiet machine, a small one in 30 ms, and on CI's loaded machine (stop 45, 7 December 2026) the
    kill found every run scored, so nothing was recovered and the recovery test failed. So the workers are frozen
    as soon as a row is in scoring, and once their last writes have landed (the same rows read twice) the freeze
    counts only if a frozen worker is scoring a row still in scoring; otherwise they go on (SIGCONT) and the next
    row in scoring is waited for.
    """
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        wait_until(Submission.objects.filter(pk__in=ids, status=Submission.Status.SCORING).exists, timeout=120,
                   what="a submission being scored", interval=0.005)
        frozen = freeze(workers)
        scoring, seen = None, _scoring(ids)
        while scoring != seen:
            time.sleep(SETTLE_SECONDS)
            scoring, seen = seen, _scoring(ids)
        busy = [worker for worker in workers
                if {(int(pk), int(attempt)) for pk, attempt in _SCORING.findall(worker.log())} & scoring]
        if busy:
            return busy, frozen
        send_signal(frozen, signal.SIGCONT)
        if not Submission.objects.filter(pk__in=ids).exclude(status=Submission.Status.SCORED).exists():
            break
    raise AssertionError("every run was scored before a freeze found one being scored: the kill could not land "
                         "mid-task (make the large run larger)")
