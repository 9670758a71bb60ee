"""Double entry from the stored file: a fault in the core's reader or depth cut is caught by a real worker.

The worker under test runs a scratch copy of this tree in which one line of
the metric core was changed on purpose (scores negated as they are read; one
row more kept than the depth; every qrels grade read one too high). The second
implementation reads the stored run file and the stored judgments with its own
reader, order and depth cut, so the worker must refuse to store the core's
numbers: the submission fails as our fault, with the curators' flag
naming the first differing value. Before the second implementation read the
file itself, it was handed the core's parsed run and agreed with the fault.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from catalogue.models import Dataset
from submissions import services
from submissions.models import Result, Submission
from tests.waiting import wait_until_final

from .conftest import GOOD_RUN, METADATA, upload

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

BASE_DIR = Path(__file__).resolve().parents[2]
_NOT_COPIED = shutil.ignore_patterns(".git", ".venv", ".venv-core", "var", "docs", "node_modules", "__pycache__",
                                     ".mypy_cache", ".ruff_cache", ".pytest_cache", ".import_linter_cache")


def tree_with_fault(tmp_path: Path, path: str, old: str, new: str) -> Path:
    """A copy of this tree with ``old`` replaced by ``new`` once in ``path`` (the test fails if it no longer applies)."""
    root = tmp_path / "faulty"
    shutil.copytree(BASE_DIR, root, ignore=_NOT_COPIED)
    target = root / path
    text = target.read_text()
    assert text.count(old) == 1, f"{path} changed: the fault {old!r} cannot be put in any more"
    target.write_text(text.replace(old, new))
    # The faults are in the numpy path's reader and cut: without the compiled scorer, the copy's worker takes it
    # for every run (a dataset with a corpus included, which the fast path now takes too).
    for native in (root / "evaluation").glob("_fastscore*.so"):
        native.unlink()
    return root


def score_with_faulty_worker(worker_factory, unread_queue, tree: Path, user, split) -> Submission:
    worker = worker_factory(queues=[unread_queue], cwd=tree)  # only this worker reads the queue the test sends to
    submission = services.submission_create(user=user, split=split, upload=upload(GOOD_RUN), metadata=METADATA)
    return wait_until_final(submission.pk, worker)


def assert_refused_and_flagged(submission: Submission) -> dict:
    assert submission.status == Submission.Status.FAILED, submission.status
    assert submission.failure_kind == Submission.FailureKind.SERVICE
    assert "disagree" in submission.error["message"]
    assert not Result.objects.filter(submission=submission).exists()
    return submission.scores_disagree


def test_scores_misread_by_the_core_are_caught_from_the_file(transactional_db, worker_factory, unread_queue,
                                                             tmp_path, alice, tiny_dataset):
    tree = tree_with_fault(tmp_path, "evaluation/runs.py", "s=K.parse_scores(chunk, 4, collector)",
                           "s=-K.parse_scores(chunk, 4, collector)")

    failed = score_with_faulty_worker(worker_factory, unread_queue, tree, alice, tiny_dataset.splits.get(name="test"))

    flag = assert_refused_and_flagged(failed)
    # q1 read in reverse: its relevant d1, d2 at ranks 3 and 2 instead of 1 and 2.
    assert (flag["qid"], flag["measure"], flag["method"]) == ("q1", "MAP@10", "pytrec_eval")
    assert flag["core"] == pytest.approx((1 / 2 + 2 / 3) / 2) and flag["reference"] == 1.0


def test_a_depth_cut_by_the_core_one_row_too_late_is_caught_from_the_file(transactional_db, worker_factory,
                                                                         unread_queue, tmp_path, alice, tiny_dataset):
    Dataset.objects.filter(pk=tiny_dataset.pk).update(depth=2)
    tree = tree_with_fault(tmp_path, "evaluation/scoring.py", "row_q[rank > depth] = -1",
                           "row_q[rank > depth + 1] = -1")

    failed = score_with_faulty_worker(worker_factory, unread_queue, tree, alice, tiny_dataset.splits.get(name="test"))

    flag = assert_refused_and_flagged(failed)
    # q2's only relevant document is at rank 3, beyond the depth of 2: the faulty core counts it.
    assert (flag["qid"], flag["measure"], flag["core"], flag["reference"]) == ("q2", "R@10", 1.0, 0.0)


def test_judgments_misread_by_the_core_are_caught_by_the_second_reader(transactional_db, worker_factory,
                                                                       unread_queue, tmp_path, alice, tiny_dataset):
    tree = tree_with_fault(tmp_path, "evaluation/qrels.py",
                           "g_parts.append(np.where(np.abs(grades) > _MAX_GRADE, 0, grades).astype(np.int64))",
                           "g_parts.append(np.where(np.abs(grades) > _MAX_GRADE, 0, grades).astype(np.int64) + 1)")

    failed = score_with_faulty_worker(worker_factory, unread_queue, tree, alice, tiny_dataset.splits.get(name="test"))

    flag = assert_refused_and_flagged(failed)
    # Every grade one higher: q4's only judgment (grade 0) becomes relevant, so the core evaluates q4.
    assert (flag["qid"], flag["measure"], flag["core"], flag["reference"]) == ("q4", "evaluated queries", 1.0, 0.0)
