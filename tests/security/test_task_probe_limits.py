"""A shared task's probing limits (the team's caps and its one Ladder) that one person could step around.

The caps (``Phase.daily_cap``, ``total_cap``) and the Ladder (``LadderBest.team``) count per team: that is
what bounds how many probes of the hidden topics one participant gets. Through the real services, on the
shared-task world of ``tests/campaigns/conftest.py`` (caps: 3 a day, 10 in all).
"""

from __future__ import annotations

import pytest

from campaigns.errors import TaskRefused
from campaigns.services import team_create, team_leave
from submissions.errors import QuotaExceeded, UploadRefused
from submissions.models import Submission
from submissions.services.fusion import FusionRefused, fusion_create
from tests.campaigns import conftest as tasks
from tests.campaigns.conftest import ALICE_RANKS, upload

task_world = tasks.task_world
carol = tasks.carol

pytestmark = pytest.mark.django_db


def test_leaving_a_team_for_a_new_one_gives_no_fresh_caps_or_ladder(task_world, alice):
    """Alice spends her team's daily cap, leaves, makes a team of her own: its caps and Ladder start from zero."""
    for n in range(3):
        upload(alice, task_world.split, {**ALICE_RANKS, "q9": n + 1}, f"red-{n}")
    with pytest.raises(QuotaExceeded):
        upload(alice, task_world.split, ALICE_RANKS, "red-4")
    team_leave(team=task_world.red, user=alice)
    try:
        team_create(phase=task_world.phase, user=alice, name="Red again")
    except TaskRefused:
        return  # refused at the team: fine too
    with pytest.raises((UploadRefused, QuotaExceeded)):
        upload(alice, task_world.split, ALICE_RANKS, "again-1")
    assert not Submission.objects.filter(system_name="again-1").exists()


def test_a_fusion_in_an_open_task_is_a_run_of_the_team_under_its_caps(task_world, alice):
    """Fusions were saved with no team: not counted in the team's caps and judged by a second, personal Ladder."""
    runs = [upload(alice, task_world.split, {**ALICE_RANKS, "q9": n + 1}, f"part-{n}") for n in range(2)]
    made = []
    with pytest.raises(FusionRefused):
        for k in range(1, 6):  # the cap is 3 a day: two uploads and one fusion
            made.append(fusion_create(user=alice, parts=runs, method="rrf", k=k))
    assert len(made) == 1, f"{len(made)} fusions past the team's daily cap of 3"
    assert made[0].entrant_team_id == task_world.red.pk


def test_a_person_in_no_team_cannot_enter_the_open_task_by_a_fusion(task_world, alice, django_user_model):
    from tests.users import verified

    runs = [upload(alice, task_world.split, {**ALICE_RANKS, "q9": n + 1}, f"public-{n}") for n in range(2)]
    dave = verified(django_user_model.objects.create_user("dave", "dave@example.org", "correct horse battery staple"))
    with pytest.raises(FusionRefused, match="runs are entered by teams"):
        fusion_create(user=dave, parts=runs, method="rrf", k=60)
