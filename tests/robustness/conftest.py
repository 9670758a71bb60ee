"""Fixtures of the robustness tests: a BSARD-like dataset with integer ids, isolated storage and rate counters.

The dataset ``robust`` has integer document ids (``1``…``2000``, like BSARD's
``1234``), so a run written for another dataset's scheme (``CivC::11``) is
recognisably wrong. Its hidden test split judges marker ids that must never
appear in any response (see ``test_access_matrix``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_storage_at

DATA = Path(__file__).resolve().parent.parent / "data" / "bad"
CORPUS_SIZE = 2000

#: The hidden test split's judgments (docids are corpus ids; query 4 has no relevant document).
TEST_QRELS = {"1": {"12": 2, "7": 1}, "2": {"33": 1}, "3": {"101": 1, "102": 1, "103": 1}, "4": {"5": 0}}
DEV_QRELS = {"11": {"40": 1}, "12": {"41": 1, "42": 1}}




@pytest.fixture
def data_dir(tmp_path) -> Path:
    """This test's private storage for uploaded runs: compare its listing before and after a refusal."""
    path = tmp_path / "private-data"
    path.mkdir()
    return path


@pytest.fixture(autouse=True)
def _private_storage(data_dir):
    """Uploaded runs go to ``data_dir``, whose listing the tests compare before and after a refusal."""
    with run_storage_at(data_dir):
        yield


def files_in(path: Path) -> list[str]:
    """Every file under ``path``, relative, sorted."""
    return sorted(p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file())


@pytest.fixture
def robust_dataset(db):
    """Dataset ``robust``: integer docids 1…2000, a hidden ``test`` split (queries 1–4) and a public ``dev`` split."""
    from catalogue.models import Benchmark, Dataset, Split, Topic
    from catalogue.services import corpus_set, qrels_version_add

    bench = Benchmark.objects.create(slug="robust", name="Robustness benchmark")
    dataset = Dataset.objects.create(
        benchmark=bench,
        slug="robust",
        name="Robust",
        language="fr",
        docid_example="1234",
        measures=["R@100", "MAP@100", "MRR@100"],
        primary_measure="R@100",
    )
    corpus_set(dataset=dataset, ids=[str(i) for i in range(1, CORPUS_SIZE + 1)])
    for name, hidden, qrels in (("test", True, TEST_QRELS), ("dev", False, DEV_QRELS)):
        # The test runs cover 3 of the 4 queries (coverage rule at 75%); the Ladder off: 3 evaluated queries
        # could never release a score (tests/security tests the Ladder).
        split = Split.objects.create(dataset=dataset, name=name, kind=name, hidden=hidden, daily_limit=0, total_limit=0,
                                     min_coverage=0.75, ladder=False)
        for qid in qrels:
            Topic.objects.create(split=split, qid=qid, text=f"Question {qid}?", category="family")
        qrels_version_add(split=split, qrels=qrels)
    return dataset


@pytest.fixture
def test_split(robust_dataset):
    return robust_dataset.splits.get(name="test")
