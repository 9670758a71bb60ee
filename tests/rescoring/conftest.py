"""Helpers for the rescoring tests: three runs, new judgments for the tiny dataset, what `evaluate` says."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evaluation.qrels import read_qrels
from evaluation.runs import read_run
from evaluation.scoring import evaluate
from submissions import disclosure

#: Three runs for the tiny dataset (tests/conftest.py), each ranking the documents differently.
RUNS = {
    "BM25": (
        "q1 Q0 d1 1 3.0 bm25\nq1 Q0 d2 2 2.0 bm25\nq1 Q0 d9 3 1.0 bm25\n"
        "q2 Q0 d8 1 3.0 bm25\nq2 Q0 d9 2 2.0 bm25\nq2 Q0 d3 3 1.0 bm25\n"
        "q3 Q0 d4 1 5.0 bm25\nq3 Q0 d10 2 4.0 bm25\n"
    ),
    "Dense": (
        "q1 Q0 d9 1 3.0 dense\nq1 Q0 d1 2 2.0 dense\n"
        "q2 Q0 d3 1 3.0 dense\nq2 Q0 d8 2 2.0 dense\n"
        "q3 Q0 d10 1 5.0 dense\nq3 Q0 d5 2 4.0 dense\nq3 Q0 d4 3 3.0 dense\n"
    ),
    "Hybrid": (
        "q1 Q0 d2 1 3.0 hyb\nq1 Q0 d1 2 2.0 hyb\n"
        "q2 Q0 d8 1 3.0 hyb\n"
        "q3 Q0 d6 1 5.0 hyb\nq3 Q0 d10 2 4.0 hyb\nq3 Q0 d4 3 3.0 hyb\n"
    ),
}

#: The errata: d2 is not relevant after all, d8 and d10 are, and q4 finally has a relevant document.
NEW_QRELS = {
    "q1": {"d1": 2, "d2": 0},
    "q2": {"d3": 1, "d8": 1},
    "q3": {"d4": 1, "d5": 1, "d6": 1, "d10": 1},
    "q4": {"d7": 1},
}


def upload(content: str, name: str = "run.txt") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content.encode(), content_type="text/plain")


def core_means(split, version, content: str) -> tuple[dict[str, float], int]:
    """What the metric core gives for the run on this qrels version, at full precision (what a result stores),
    and the number of evaluated topics."""
    dataset = split.dataset
    qrels = read_qrels(version.text().encode(), threshold=dataset.relevance_threshold)
    evaluation = evaluate(qrels, read_run(content.encode()), dataset.measures, depth=dataset.depth)
    return {name: float(evaluation.means[name]) for name in dataset.measures}, len(evaluation.qids)


def expected_means(split, version, content: str) -> dict[str, float]:
    """What the metric core gives for the run on this qrels version (the leaderboard must show exactly this).

    On a hidden split, what every view shows there: the primary measure on the grid of the evaluated topics
    (``submissions.disclosure``).
    """
    means, n_topics = core_means(split, version, content)
    return disclosure.scores_shown(means, split=split, n_topics=n_topics)




@pytest.fixture
def test_split(tiny_dataset):
    """The tiny test split, public: the rescoring's numbers at full precision (a 3-topic hidden split shows its
    primary measure on a 50-point grid, which hides the changes these tests follow)."""
    split = tiny_dataset.splits.get(name="test")
    split.hidden = False
    split.save(update_fields=["hidden"])
    return split


@pytest.fixture
def make_submission(alice, bob):
    """``make_submission(split, "BM25")``: a queued submission of that run (alice's BM25 and Hybrid, bob's Dense)."""
    from submissions.services import submission_create

    def make(split, system: str, *, enqueue: bool = False, copy: int = 0):
        # ``copy`` > 0: the same ranking under another run tag, so a user's second copy is not a duplicate upload.
        user = bob if system == "Dense" else alice
        content = "".join(f"{line}-{copy}\n" for line in RUNS[system].splitlines()) if copy else RUNS[system]
        return submission_create(
            user=user,
            split=split,
            upload=upload(content, f"{system.lower()}.txt"),
            metadata={"system_name": system, "family": "other", "visibility": "public"},
            enqueue=enqueue,
        )

    return make


