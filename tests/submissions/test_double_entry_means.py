"""Double entry of every stored number: the means, a shared task's part means and a JSON run's conversion.

As in ``test_double_entry_from_the_file``, the worker under test runs a
scratch copy of this tree with one line of the first implementation changed
on purpose: the mean divided by n + 1, the mean with one query dropped, a
shared task's public part averaged over the private topics. A JSON run's
conversion happens where the upload arrives (the web process, here the test's
own process), so that fault is put in a copy of ``evaluation/run_json.py``
loaded in this process and used by the upload, and the worker scores what it
stored. Each must fail the scoring as our fault with the curators' flag naming
the measure and both values. Before the second implementation recomputed the
means from its own per-query values and read the uploaded JSON itself, each of
these was stored as verified (the first: R@10 0.583 where 0.778 is right).
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from campaigns.models import Phase
from evaluation import run_json_child
from submissions import services
from tests.waiting import wait_until_final

from .conftest import GOOD_RUN, METADATA, upload
from .test_double_entry_from_the_file import assert_refused_and_flagged, score_with_faulty_worker, tree_with_fault

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

R10 = (1 + 1 + 1 / 3) / 3  # GOOD_RUN's R@10 on the tiny dataset: q1 1, q2 1, q3 1/3 (q4 has no relevant document)
MEAN_LINE = "means = {name: float(v.mean()) if nq else 0.0 for name, v in per_query.items()}"


def test_a_mean_divided_by_n_plus_one_is_caught(transactional_db, worker_factory, unread_queue, tmp_path, alice,
                                                 tiny_dataset):
    tree = tree_with_fault(tmp_path, "evaluation/scoring.py", MEAN_LINE,
                           "means = {name: float(v.sum() / (nq + 1)) if nq else 0.0 for name, v in per_query.items()}")

    failed = score_with_faulty_worker(worker_factory, unread_queue, tree, alice, tiny_dataset.splits.get(name="test"))

    flag = assert_refused_and_flagged(failed)
    assert (flag["qid"], flag["measure"], flag["method"]) == ("(mean)", "R@10", "pytrec_eval")
    assert flag["core"] == pytest.approx(R10 * 3 / 4) and flag["reference"] == pytest.approx(R10)  # 0.583, 0.778


def test_a_query_dropped_from_the_mean_is_caught(transactional_db, worker_factory, unread_queue, tmp_path, alice,
                                                 tiny_dataset):
    tree = tree_with_fault(tmp_path, "evaluation/scoring.py", MEAN_LINE,
                           "means = {name: float(v[:-1].mean()) if nq > 1 else 0.0 for name, v in per_query.items()}")

    failed = score_with_faulty_worker(worker_factory, unread_queue, tree, alice, tiny_dataset.splits.get(name="test"))

    flag = assert_refused_and_flagged(failed)
    # q3 (R@10 1/3) left out of the mean: (1 + 1) / 2.
    assert (flag["qid"], flag["measure"], flag["core"]) == ("(mean)", "R@10", 1.0)
    assert flag["reference"] == pytest.approx(R10)


def test_a_part_mean_computed_on_the_wrong_topics_is_caught(transactional_db, worker_factory, unread_queue, tmp_path,
                                                            staff, tiny_dataset):
    split = tiny_dataset.splits.get(name="test")
    now = timezone.now()
    Phase.objects.create(split=split, title="Tiny task", opens_at=now - timedelta(days=1),
                         closes_at=now + timedelta(days=2), time_zone="UTC", public_qids=["q1", "q2"])
    tree = tree_with_fault(tmp_path, "submissions/services/partition.py",
                           "part_scores[name] = float(values.mean()) if len(values) else 0.0",
                           "part_scores[name] = float(np.asarray(arrays[name], dtype=np.float64)[~mask].mean()) "
                           "if len(values) else 0.0")

    worker = worker_factory(queues=[unread_queue], cwd=tree)
    submission = services.submission_create(user=staff, split=split, upload=upload(GOOD_RUN), metadata=METADATA,
                                            is_baseline=True)
    failed = wait_until_final(submission.pk, worker)

    flag = assert_refused_and_flagged(failed)
    # The public part (q1, q2: R@10 1.0) averaged over the private topic q3 (1/3).
    assert (flag["qid"], flag["measure"]) == ("(mean of the public part)", "R@10")
    assert flag["core"] == pytest.approx(1 / 3) and flag["reference"] == 1.0


def test_a_json_run_converted_wrongly_is_caught_from_the_uploaded_json(transactional_db, worker_factory,
                                                                       unread_queue, tmp_path, monkeypatch, alice,
                                                                       tiny_dataset):
    # The converter writes each document's rank where its score belongs: the core then ranks every query backwards.
    tree = tree_with_fault(tmp_path, "evaluation/run_json.py", 'f"{qid} Q0 {docid} {rank} {score!r} {tag}\\n"',
                           'f"{qid} Q0 {docid} {rank} {rank} {tag}\\n"')
    # The upload's converter is a child process started in the folder it imports ``evaluation`` from: the faulty tree.
    monkeypatch.setattr(run_json_child, "PACKAGE_ROOT", str(tree))
    ranking: dict[str, dict[str, float]] = {}
    for line in GOOD_RUN.splitlines():
        qid, _, docid, _, score, _ = line.split()
        ranking.setdefault(qid, {})[docid] = float(score)

    worker = worker_factory(queues=[unread_queue], cwd=tree)
    submission = services.submission_create(user=alice, split=tiny_dataset.splits.get(name="test"),
                                            upload=upload(json.dumps(ranking), name="run.json"), metadata=METADATA)
    assert submission.json_file and submission.run_file.open("rb").read().startswith(b"q1 Q0 d1 1 1 run\n")
    failed = wait_until_final(submission.pk, worker)

    flag = assert_refused_and_flagged(failed)
    # q1 read backwards: its relevant d1, d2 at ranks 3 and 2 instead of 1 and 2.
    assert (flag["qid"], flag["measure"], flag["method"]) == ("q1", "MAP@10", "pytrec_eval")
    assert flag["core"] == pytest.approx((1 / 2 + 2 / 3) / 2) and flag["reference"] == 1.0


def test_the_same_json_run_converted_rightly_is_stored_as_checked_from_the_json(transactional_db, worker_factory,
                                                                                unread_queue, alice, tiny_dataset):
    ranking = {"q1": {"d1": 3, "d2": 2.0, "d9": 1.0}, "q2": {"d8": 3.0, "d9": 2.0, "d3": 1.0},
               "q3": {"d4": 5.0, "d10": 4.0}, "q9": {}}
    worker = worker_factory(queues=[unread_queue])
    submission = services.submission_create(user=alice, split=tiny_dataset.splits.get(name="test"),
                                            upload=upload(json.dumps(ranking), name="run.json"), metadata=METADATA)
    scored = wait_until_final(submission.pk, worker)

    result = scored.results.get()
    assert result.scores["R@10"] == pytest.approx(R10)
    assert result.verified_by == {"method": "pytrec_eval", "measures": ["R@10", "MAP@10", "MRR@10", "nDCG@10"],
                                  "values_compared": 12, "means": True, "parts": [], "source": "json"}
