"""Two hand-made runs scored on the tiny dataset's hidden test split, and two assessors.

The tiny dataset (tests/conftest.py) judges q1 → d1 (2), d2; q2 → d3; q3 → d4,
d5, d6; q4 → d7 (0). Runs A (alice) and B (bob), top first:

    q1  A: d1 d9 d11     B: d11 d14 d1
    q2  A: d3 d12        B: d15 d3
    q3  A: d4 d13        B: d13 d16

so the depth-2 pool, judged documents left out, is exactly
q1: d11 d14 d9, q2: d15 d12, q3: d13 d16 (see test_pools.py).
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.core.files.uploadedfile import SimpleUploadedFile

from submissions.services import submission_create, submission_score_now
from tests.users import verified

RUN_A = "".join(f"{q} Q0 {d} {i} {10 - i}.0 A\n" for q, docs in (("q1", "d1 d9 d11"), ("q2", "d3 d12"),
                                                                   ("q3", "d4 d13")) for i, d in enumerate(docs.split(), 1))
RUN_B = "".join(f"{q} Q0 {d} {i} {10 - i}.0 B\n" for q, docs in (("q1", "d11 d14 d1"), ("q2", "d15 d3"),
                                                                   ("q3", "d13 d16")) for i, d in enumerate(docs.split(), 1))




def submit(user, split, content: str, system: str):
    s = submission_create(user=user, split=split, upload=SimpleUploadedFile(f"{system}.txt", content.encode()),
                          metadata={"system_name": system, "visibility": "public"}, enqueue=False)
    return submission_score_now(s.pk)


@pytest.fixture
def test_split(tiny_dataset):
    """The tiny hidden split, with no minimum batch of changed judgments: its pools change a handful (the
    refusal of small changes: test_judgment_batch.py)."""
    split = tiny_dataset.splits.get(name="test")
    split.min_judgment_batch = 0
    split.save(update_fields=["min_judgment_batch"])
    return split


@pytest.fixture
def runs(test_split, alice, bob):
    """Runs A and B, scored synchronously on the test split."""
    a = submit(alice, test_split, RUN_A, "A")
    b = submit(bob, test_split, RUN_B, "B")
    assert a.status == b.status == "scored", (a.error, b.error)
    return {"A": a, "B": b}


@pytest.fixture
def assessors(django_user_model):
    """carol and dave, members of the assessors group (made by the migration)."""
    group = Group.objects.get_or_create(name="assessors")[0]  # made by the migration; a flush (transactional tests) drops it
    out = []
    for name in ("carol", "dave"):
        user = verified(django_user_model.objects.create_user(name, f"{name}@example.org",
                                                              "correct horse battery staple"))
        user.groups.add(group)
        out.append(user)
    return out
