"""Fixtures of the API tests: own rate-limit counters, isolated run storage, a token, run files."""

import copy
import uuid

import pytest


@pytest.fixture(autouse=True)
def _own_cache_namespace(settings):
    """Rate-limit counters live in the cache: each test counts in its own key space.

    A fresh prefix rather than ``cache.clear()``, which on a shared Redis would
    wipe the caches of other test sessions running at the same time.
    """
    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["KEY_PREFIX"] = f"test-{uuid.uuid4().hex[:12]}"
    settings.CACHES = caches


@pytest.fixture(autouse=True)
def _private_storage(private_data_dir):
    """Uploaded runs go to the session's folder (shared with worker processes), never into var/data."""
    from django.core.files.storage import FileSystemStorage

    from submissions.models import Submission

    field = Submission._meta.get_field("run_file")
    saved = field.storage
    field.storage = FileSystemStorage(location=str(private_data_dir), base_url=None)
    yield
    field.storage = saved


@pytest.fixture
def alice_token(alice):
    from submissions.models import ApiToken

    _, key = ApiToken.issue(user=alice, name="tests")
    return key


@pytest.fixture
def api(alice_token):
    """An API client authenticated as alice with her token."""
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {alice_token}")
    return client


def run_bytes(ranking: dict[str, list[str]], tag: str = "sys") -> bytes:
    """A TREC run: for each query its documents, best first."""
    lines = []
    for qid, docids in ranking.items():
        for rank, docid in enumerate(docids, start=1):
            lines.append(f"{qid} Q0 {docid} {rank} {100 - rank} {tag}")
    return ("\n".join(lines) + "\n").encode()


#: Finds every relevant document of the tiny dataset's qrels at the top.
PERFECT = {"q1": ["d1", "d2"], "q2": ["d3"], "q3": ["d4", "d5", "d6"]}
#: Finds one relevant document per query, low.
WEAK = {"q1": ["d9", "d10", "d2"], "q2": ["d11", "d3"], "q3": ["d12", "d13", "d4"]}
