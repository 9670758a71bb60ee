"""Fixtures for suite tables: a benchmark of two small datasets and scored entries written to the database."""

from __future__ import annotations

import itertools

import pytest
from django.core.files.base import ContentFile
from django.utils import timezone

_counter = itertools.count(1)


@pytest.fixture
def suite(tiny_dataset):
    """The ``tiny`` benchmark as a suite (harmonic mean) of ``tiny`` (R@10) and ``tiny2`` (MAP@10).

    Returns ``(benchmark, test split of tiny, test split of tiny2)``.
    """
    from catalogue.models import Dataset, Split
    from catalogue.services import corpus_set, qrels_version_add

    bench = tiny_dataset.benchmark
    bench.aggregate = "harmonic"
    bench.save()
    ds2 = Dataset.objects.create(
        benchmark=bench,
        slug="tiny2",
        name="Tiny Two",
        language="el",
        measures=["MAP@10", "R@10"],
        primary_measure="MAP@10",
        order=1,
    )
    corpus_set(dataset=ds2, ids=[f"d{i}" for i in range(1, 6)])
    # Public splits: the suite's arithmetic at full precision (a hidden split's grid: test_hidden_suite below).
    split2 = Split.objects.create(dataset=ds2, name="test", kind="test", hidden=False)
    qrels_version_add(split=split2, qrels={"q1": {"d1": 1}})
    split1 = tiny_dataset.splits.get(name="test")
    split1.hidden = False
    split1.save(update_fields=["hidden"])
    return bench, split1, split2


@pytest.fixture
def make_entry(db):
    """``make_entry(split, user, "BM25", {"R@10": 0.5}, visibility="public", is_baseline=False)``: a scored submission."""
    from submissions.models import Result, Submission

    def make(split, user, system, scores, **fields):
        split.refresh_from_db()
        sub = Submission.objects.create(
            user=user,
            split=split,
            system_name=system,
            run_file=ContentFile(b"q1 Q0 d1 1 1.0 x\n", name=f"run{next(_counter)}.txt"),
            status=Submission.Status.SCORED,
            scored_at=timezone.now(),
            **fields,
        )
        Result.objects.create(
            submission=sub,
            qrels_version=split.current_qrels,
            scores=scores,
            primary_score=scores.get(split.dataset.primary_measure),
        )
        split.bump_cache_version()
        return sub

    return make
