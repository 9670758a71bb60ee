"""A split's monthly cap holds during a shared task too, counted over the team's runs (whoever sent them)."""

from __future__ import annotations

import pytest

from submissions.errors import QuotaExceeded
from submissions.selectors import submission_quota

from .conftest import ALICE_RANKS, BOB_RANKS, upload

pytestmark = pytest.mark.django_db


def test_a_teams_runs_count_together_against_the_monthly_cap(task_world, alice, bob, carol):
    split = task_world.split
    split.monthly_limit = 2
    split.save()
    upload(alice, split, ALICE_RANKS, "red one", score=False)
    assert submission_quota(user=carol, split=split).monthly_remaining == 1  # alice's run is the team's
    upload(carol, split, BOB_RANKS, "red two", score=False)
    quota = submission_quota(user=alice, split=split)
    assert quota.monthly_remaining == 0 and quota.team == "Red"
    with pytest.raises(QuotaExceeded) as refused:
        upload(alice, split, BOB_RANKS, "red three", score=False)
    assert "Your team \u201cRed\u201d has made 2 submissions to this split this calendar month (UTC)" in (
        refused.value.message)
    assert submission_quota(user=bob, split=split).monthly_remaining == 2  # team Blue counts its own
