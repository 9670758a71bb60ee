"""Fixtures of the API tests: own rate-limit counters, isolated run storage, a token, run files."""


import pytest


@pytest.fixture
def alice_token(alice):
    from accounts.models import ApiToken

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
