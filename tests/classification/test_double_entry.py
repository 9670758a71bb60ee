"""Classification and NER scores are double-entered like retrieval's, and no task stores an unchecked number.

The worker scores a prediction file with the metric core (``evaluation.classification``), then a second
implementation (``evaluation.verify_classification``) reads the stored prediction file and the stored gold
itself and recomputes every stored score. Here a real worker runs a scratch copy of this tree in which the
core's reader or its entity splitter was broken on purpose: it must refuse to store the core's numbers (the
submission fails as our fault, with the curators' flag), as it does for retrieval
(tests/submissions/test_double_entry_from_the_file.py). And for every task a dataset can have, a scored
submission's result carries the name of the implementation that agreed; ``result_store`` refuses one that has
none.
"""

from __future__ import annotations

import pytest

from catalogue.models import Dataset
from submissions import services
from submissions.models import Result, Submission
from submissions.services.results import ComputedResult, UnverifiedScores, result_store
from tests.submissions.conftest import GOOD_RUN, METADATA, upload as run_upload
from tests.submissions.test_double_entry_from_the_file import assert_refused_and_flagged, tree_with_fault
from tests.waiting import wait_until_final

from .conftest import GOOD_PREDICTIONS, make_clf_dataset, predictions, upload
from .test_scoring import core_result
from .test_tasks import MULTI_GOLD, MULTI_PRED, NER_GOLD, NER_PRED, jsonl, task_dataset

META = {"system_name": "Checked twice", "family": "other", "visibility": "public"}


def score_with_faulty_worker(worker_factory, unread_queue, tree, user, split, content: bytes) -> Submission:
    worker = worker_factory(queues=[unread_queue], cwd=tree)  # only this worker reads the queue the test sends to
    submission = services.submission_create(user=user, split=split, upload=upload(content), metadata=META)
    return wait_until_final(submission.pk, worker)


@pytest.mark.e2e
@pytest.mark.slow
def test_labels_misread_by_the_cores_reader_are_caught_from_the_file(transactional_db, worker_factory, unread_queue,
                                                                     tmp_path, alice):
    # Every predicted label read as the first declared one (the gold, read without declared labels, stays right).
    tree = tree_with_fault(tmp_path, "evaluation/classification.py",
                           "            return None\n        return label\n",
                           "            return None\n        return label if labels is None else sorted(labels)[0]\n")
    split = make_clf_dataset().splits.get(name="test")

    failed = score_with_faulty_worker(worker_factory, unread_queue, tree, alice, split, predictions(GOOD_PREDICTIONS))

    flag = assert_refused_and_flagged(failed)
    assert (flag["qid"], flag["measure"], flag["method"]) == ("(all examples)", "macro-F1", "plain")
    # The second reader's value is the right one: the core's own on the file read correctly.
    assert flag["reference"] == pytest.approx(core_result(predictions(GOOD_PREDICTIONS)).macro_f1, abs=1e-12)
    assert flag["core"] < flag["reference"]


@pytest.mark.e2e
@pytest.mark.slow
def test_entities_split_wrongly_by_the_core_are_caught_by_the_second_splitter(transactional_db, worker_factory,
                                                                             unread_queue, tmp_path, alice):
    # An I- tag after O dropped instead of starting an entity (strict IOB2, not seqeval's default mode).
    tree = tree_with_fault(tmp_path, "evaluation/classification.py",
                           "        if type_ is not None and current is None:\n",
                           "        if type_ is not None and current is None and prefix == \"B\":\n")
    split = task_dataset("ner", NER_GOLD).splits.get()
    orphan = [NER_PRED[0], dict(NER_PRED[1], tags=["O", "I-ORG", "I-ORG", "I-ORG"]), NER_PRED[2]]

    failed = score_with_faulty_worker(worker_factory, unread_queue, tree, alice, split, jsonl(orphan))

    flag = assert_refused_and_flagged(failed)
    assert (flag["measure"], flag["method"]) == ("macro-F1", "plain")
    assert flag["core"] < flag["reference"]


#: A file each task takes, and how it is uploaded (a builder of the dataset; the file; the upload's name).
TASK_FILES = {
    Dataset.Task.RETRIEVAL: (lambda request: request.getfixturevalue("tiny_dataset"), GOOD_RUN.encode(), "run.txt"),
    Dataset.Task.SINGLE: (lambda request: make_clf_dataset(), predictions(GOOD_PREDICTIONS), "p.jsonl"),
    Dataset.Task.MULTI: (lambda request: task_dataset("multi", MULTI_GOLD), jsonl(MULTI_PRED), "p.jsonl"),
    Dataset.Task.NER: (lambda request: task_dataset("ner", NER_GOLD), jsonl(NER_PRED), "p.jsonl"),
}


@pytest.mark.django_db
@pytest.mark.parametrize("task", Dataset.Task.values)
def test_every_task_stores_only_scores_a_second_implementation_agreed_with(request, alice, task):
    assert set(TASK_FILES) == set(Dataset.Task.values), "a new task needs its double entry, and a case here"
    build, content, name = TASK_FILES[task]
    dataset = build(request)
    split = dataset.splits.get(name="test")
    sub = services.submission_create(user=alice, split=split, upload=run_upload(content, name),
                                     metadata=METADATA | {"system_name": f"Checked {task}"}, enqueue=False)
    sub = services.submission_score_now(sub.pk)
    assert sub.status == Submission.Status.SCORED, sub.error
    result = sub.results.get()
    assert result.verified_by["method"] == ("plain" if task != Dataset.Task.RETRIEVAL else "pytrec_eval")
    assert result.scores


@pytest.mark.django_db
def test_result_store_refuses_scores_no_second_implementation_checked(tiny_dataset, alice):
    split = tiny_dataset.splits.get(name="test")
    sub = services.submission_create(user=alice, split=split, upload=run_upload(GOOD_RUN), metadata=METADATA,
                                     enqueue=False)
    unchecked = ComputedResult(version_id=split.current_qrels_id, scores={"R@10": 0.5}, primary_score=0.5,
                               n_queries=3, per_query=b"", warnings=[], duration_seconds=0.0)
    with pytest.raises(UnverifiedScores):
        result_store(submission=sub, computed=unchecked)
    assert not Result.objects.filter(submission=sub).exists()
