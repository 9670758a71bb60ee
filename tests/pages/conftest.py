"""Fixtures for the page tests: scored entries written straight into the database."""

from __future__ import annotations

import itertools

import pytest
from django.core.files.base import ContentFile
from django.utils import timezone

_counter = itertools.count(1)


@pytest.fixture
def make_entry(db):
    """Create a scored submission with a Result on the split's current qrels.

    ``make_entry(split, user, "BM25", {"R@10": 0.5}, visibility="public", is_baseline=False, ...)``
    """
    from submissions.models import Result, Submission

    def make(split, user, system, scores, **fields):
        status = fields.pop("status", Submission.Status.SCORED)
        qrels_version = fields.pop("qrels_version", split.current_qrels)
        sub = Submission.objects.create(
            user=user,
            split=split,
            system_name=system,
            run_file=ContentFile(b"q1 Q0 d1 1 1.0 x\n", name=f"run{next(_counter)}.txt"),
            status=status,
            scored_at=timezone.now() if status == Submission.Status.SCORED else None,
            **fields,
        )
        if status == Submission.Status.SCORED:
            primary = split.dataset.primary_measure
            Result.objects.create(
                submission=sub, qrels_version=qrels_version, scores=scores, primary_score=scores.get(primary)
            )
        split.bump_cache_version()
        split.refresh_from_db(fields=["cache_version"])
        return sub

    return make


@pytest.fixture
def split_test(tiny_dataset):
    """The tiny test split, made public: these tests check the board's mechanics at full precision.

    A hidden split shows its primary measure only, on a grid of one topic's share (4 topics: 50 points),
    which would hide what they check; ``hidden_test`` is the hidden one (tests/pages/test_hidden_board.py).
    """
    split = tiny_dataset.splits.get(name="test")
    split.hidden = False
    split.save(update_fields=["hidden"])
    return split


@pytest.fixture
def hidden_test(tiny_dataset):
    """The tiny test split as the dataset defines it: hidden labels, the Ladder off."""
    return tiny_dataset.splits.get(name="test")


@pytest.fixture
def split_dev(tiny_dataset):
    return tiny_dataset.splits.get(name="dev")


@pytest.fixture
def reported(tiny_dataset):
    from catalogue.models import ReportedResult

    return ReportedResult.objects.create(
        dataset=tiny_dataset,
        system="BM25 (paper) & co_1",
        family="lexical",
        scores={"R@10": 0.55, "MAP@10": 0.9},
        source="Doe et al., A Tiny Dataset, 2024",
        url="https://example.org/paper",
    )
