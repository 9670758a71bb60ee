"""Fixtures of the account tests: a clean rate-limit state for each test."""

import pytest
from django.core.cache import cache


@pytest.fixture(autouse=True)
def _fresh_counters():
    # Rate-limit counters live in the cache; a test must not inherit another's failures.
    cache.clear()
    yield
    cache.clear()


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
