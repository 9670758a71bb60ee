"""End to end through a real Celery worker process: judgments from a pool become a published qrels version,
every entry is rescored on it, and the leaderboard switches to numbers equal to the metric core's."""

from __future__ import annotations

import math

import pytest

from assessment.judging import judgment_record
from assessment.merging import pool_qrels_make
from assessment.pools import pool_assign, pool_build
from catalogue.models import Split
from evaluation.ladder import on_grid, step_for
from evaluation.qrels import read_qrels
from evaluation.runs import read_run
from evaluation.scoring import evaluate
from leaderboard.selectors import leaderboard_rows
from submissions.models import Result
from tests.waiting import wait_until

from .conftest import RUN_A, RUN_B

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SWITCH_TIMEOUT = 90


def test_a_pool_becomes_qrels_and_the_worker_rescores_the_board(transactional_db, celery_worker_process, test_split,
                                                                 runs, assessors, staff):
    pool = pool_build(split=test_split, name="depth-2", method="depth", params={"k": 2}, user=staff)
    (carol,) = pool_assign(pool=pool, assessors=assessors[:1], overlap_share=0)
    # B's first documents of q1 and q2, and the document both put high for q3, are relevant after all.
    for docid, grade in (("d11", 2), ("d14", 0), ("d15", 1), ("d13", 1), ("d9", 0)):
        judgment_record(assignment=carol, item=pool.items.get(docid=docid), grade=grade, seconds=3.0)
    version, rescored = pool_qrels_make(pool=pool, user=staff, note="depth-2 pool judged by carol")
    assert rescored == 2
    def switched():
        split = Split.objects.get(pk=test_split.pk)
        return split if split.current_qrels_id == version.pk and split.pending_qrels_id is None else None

    split = wait_until(switched, timeout=SWITCH_TIMEOUT, what="the switch to the pool's qrels",
                       worker=celery_worker_process)
    dataset = test_split.dataset
    qrels = read_qrels(version.text().encode(), threshold=dataset.relevance_threshold)
    assert qrels.to_dict()["q1"] == {"d1": 2, "d2": 1, "d11": 2, "d14": 0, "d9": 0}
    board = {row.system: row.scores for row in leaderboard_rows(split=split)}
    core, n_topics = {}, []
    for system, content in (("A", RUN_A), ("B", RUN_B)):
        evaluation = evaluate(qrels, read_run(content.encode()), dataset.measures, depth=dataset.depth)
        core[system] = {m: float(evaluation.means[m]) for m in dataset.measures}
        n_topics.append(len(evaluation.qids))
        # Rescored at full precision: exactly the metric core's numbers on the new version.
        stored = Result.objects.get(submission=runs[system], qrels_version=version).scores
        for m in dataset.measures:
            assert math.isclose(stored[m], core[system][m], abs_tol=1e-12), (system, m)
    # The hidden split's board: the primary measure only, on the grid of the N evaluated topics (disclosure).
    step = step_for(min(n_topics))
    for system in ("A", "B"):
        assert board[system] == {dataset.primary_measure: on_grid(core[system][dataset.primary_measure], step)}
    assert core["B"]["R@10"] > 0.5  # B found what nobody had judged; the new judgments credit it
    assert board["B"]["R@10"] >= board["A"]["R@10"]
