"""The reveal keeps the task's public board as it stood at the close, in a snapshot; its values are the ones the
board showed (the public part, on its grid), never the private part's."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from leaderboard.private_board import phase_reveal
from snapshots.models import Snapshot

from .conftest import ALICE_RANKS, BOB_RANKS, close, upload

pytestmark = pytest.mark.django_db


def test_the_reveal_snapshots_the_public_board_it_replaces(task_world, alice, bob, client):
    upload(alice, task_world.split, ALICE_RANKS, "red run")
    upload(bob, task_world.split, BOB_RANKS, "blue run")
    before = json.loads(client.get(reverse("leaderboard:export", args=["coliee-t3", "json"])).content)
    close(task_world.phase, seconds_ago=5)
    assert phase_reveal(phase_id=task_world.phase.pk).created

    snapshot = Snapshot.objects.get()
    assert snapshot.reason == Snapshot.Reason.REVEAL and "COLIEE 2027 Task 3" in snapshot.note
    assert [(r["system"], r["scores"]) for r in snapshot.rows] == [
        (e["system"], e["scores"]) for e in before["entries"]]
    # The public part on its grid of 4 topics (Red 0.75 and Blue 1.0 both 1.0); the private part (Blue 0.2) is not.
    assert {r["system"]: r["scores"]["R@10"] for r in snapshot.rows} == {"red run": 1.0, "blue run": 1.0}
    assert phase_reveal(phase_id=task_world.phase.pk).created is False and Snapshot.objects.count() == 1
