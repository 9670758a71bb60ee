"""Shared fixtures: the users alice, bob and staff, and small datasets built in the database."""

from __future__ import annotations

import copy
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.core.cache import caches
from django.core.cache.backends.locmem import LocMemCache

from tests.users import verified

pytest_plugins = ["tests.fixtures_worker", "tests.fixtures_site"]


@contextmanager
def run_storage_at(location: Path):
    """Store uploaded runs under ``location`` for the duration.

    The run_file and json_file fields bind their storage when the model is
    defined, so the fields' storage is swapped rather than the setting.
    """
    from django.core.files.storage import FileSystemStorage

    from submissions.models import Submission

    fields = [Submission._meta.get_field(name) for name in ("run_file", "json_file")]  # the JSON a run came from
    saved = [field.storage for field in fields]
    storage = FileSystemStorage(location=str(location), base_url=None)
    for field in fields:
        field.storage = storage
    try:
        yield location
    finally:
        for field, before in zip(fields, saved, strict=True):
            field.storage = before


@pytest.fixture
def private_run_storage(private_data_dir):
    """Runs go to the session's own folder, shared with the worker processes it starts, never into var/data."""
    with run_storage_at(private_data_dir) as location:
        yield location


#: Folders of tests/ whose every test carries these marks (instead of the same autouse fixture in each conftest);
#: a test elsewhere asks with the mark (``pytestmark = pytest.mark.own_cache``).
MARKED_FOLDERS = {
    "own_cache": {"accounts", "analysis", "api", "assessment", "classification", "pages", "rescoring", "robustness",
                  "snapshots", "suites"},
    "private_storage": {"analysis", "api", "assessment", "browser", "classification", "rescoring",
                        "submissions"},
}
TESTS = Path(__file__).resolve().parent


#: A test that asks for one of these starts a worker, a server or a stack of processes: it is ``e2e`` whatever
#: its module says, so ``make test-fast`` never runs it (docs/testing.md).
PROCESS_FIXTURES = frozenset({"celery_worker_process", "worker_factory", "live_site", "live_server", "start_server",
                              "s3_worker", "stack"})
#: A test that asks for one of these is ``slow``: trec_eval built from its source takes seconds per process (the
#: metric core's tests still run it in ``make check``).
SLOW_FIXTURES = frozenset({"trec_eval_binary"})


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(items):
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if PROCESS_FIXTURES & fixtures:
            item.add_marker("e2e")
        if SLOW_FIXTURES & fixtures:
            item.add_marker("slow")
        try:
            folder = Path(item.path).resolve().relative_to(TESTS).parts[0]
        except ValueError:
            continue
        for mark, folders in MARKED_FOLDERS.items():
            if folder in folders:
                item.add_marker(mark)


@pytest.fixture(autouse=True)
def _marked_isolation(request):
    """The fixtures a test's marks ask for: ``own_cache`` → ``own_cache_namespace``, ``private_storage`` →
    ``private_run_storage``."""
    if request.node.get_closest_marker("own_cache"):
        request.getfixturevalue("own_cache_namespace")
    if request.node.get_closest_marker("private_storage"):
        request.getfixturevalue("private_run_storage")


@pytest.fixture(autouse=True)
def _empty_local_cache():
    """Each test starts with an empty per-process cache (the embedded default's locmem part).

    Row ids and split cache versions repeat across tests (each one rolls back),
    and on locmem a page's cache tag is built from them: without this a test
    could be served the page an earlier test cached for the same ids. Only the
    process's memory is emptied: the embedded default's counters live in the
    test database (rolled back with it), and a shared Redis is used by other
    sessions (its page generation only grows; directories that need more use
    ``own_cache_namespace``).
    """
    backend = caches["default"]
    if isinstance(backend, LocMemCache):
        LocMemCache.clear(backend)


@pytest.fixture
def fresh_cache(settings):
    """Call it to start from an empty cache: a key prefix of its own (a test that needs one mid-way, after the
    pages it cached went stale behind the page cache's back).

    A prefix rather than ``cache.clear()``, which on a shared Redis would wipe the caches of every process of the
    session and of other sessions (tests/architecture/test_layout.py fails on one).
    """

    def renew():
        caches = copy.deepcopy(settings.CACHES)
        caches["default"]["KEY_PREFIX"] = f"test-{uuid.uuid4().hex[:12]}"
        settings.CACHES = caches

    return renew


@pytest.fixture
def own_cache_namespace(fresh_cache):
    """A cache key prefix of this test's own (the ``own_cache`` mark): row ids and cache versions repeat across
    tests, and rate-limit counters live in the cache."""
    fresh_cache()


@pytest.fixture
def alice(django_user_model):
    return verified(django_user_model.objects.create_user("alice", "alice@example.org", "correct horse battery staple"))


@pytest.fixture
def bob(django_user_model):
    return verified(django_user_model.objects.create_user("bob", "bob@example.org", "correct horse battery staple"))


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_user(
        "curator", "curator@example.org", "correct horse battery staple", is_staff=True, is_superuser=True
    )


@pytest.fixture
def tiny_dataset(db):
    """A dataset with a hidden test split and a public dev split, 4 topics each, 20 documents.

    Qrels: q1 → d1 (grade 2), d2; q2 → d3; q3 → d4, d5, d6; q4 → only d7 judged 0
    (no relevant document, so q4 is not evaluated).
    """
    from catalogue.models import Benchmark, Dataset, Split, Topic
    from catalogue.services import corpus_set, qrels_version_add

    bench = Benchmark.objects.create(slug="tiny", name="Tiny benchmark")
    ds = Dataset.objects.create(
        benchmark=bench,
        slug="tiny",
        name="Tiny",
        language="fr",
        docid_example="d1",
        measures=["R@10", "MAP@10", "MRR@10", "nDCG@10"],
        primary_measure="R@10",
    )
    corpus_set(dataset=ds, ids=[f"d{i}" for i in range(1, 21)])
    qrels = {"q1": {"d1": 2, "d2": 1}, "q2": {"d3": 1}, "q3": {"d4": 1, "d5": 1, "d6": 1}, "q4": {"d7": 0}}
    splits = {}
    for name, hidden in (("test", True), ("dev", False)):
        # The hidden split's coverage rule at 75%: the tests' usual run covers 3 of the 4 topics. The Ladder off:
        # 3 evaluated queries can never make a significant improvement (it needs 5 moving together), so nothing
        # would be released; tests/security and tests/submissions/test_ladder.py test it.
        split = Split.objects.create(dataset=ds, name=name, kind=name, hidden=hidden, min_coverage=0.75, ladder=False)
        for i, cat in zip(range(1, 5), ["family", "family", "work", "work"], strict=True):
            Topic.objects.create(split=split, qid=f"q{i}", text=f"Question {i}?", category=cat)
        qrels_version_add(split=split, qrels=qrels)
        splits[name] = split
    return ds
