"""Teams: create, join by link, invite by e-mail (allauth's sign-up for newcomers), accept, leave; one team per
person per task; the admin's team pages."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest
from allauth.account.models import EmailAddress
from django.urls import reverse

from campaigns.errors import TaskRefused
from campaigns.models import Invitation, Membership, SentNotification, Team
from campaigns.services import invitation_accept, invitation_send, team_create, team_join, team_leave

from .conftest import ALICE_RANKS, close, upload

pytestmark = pytest.mark.django_db


def test_one_team_per_person_per_task(task_world, alice):
    with pytest.raises(TaskRefused, match="already in the team .Red."):
        team_create(phase=task_world.phase, user=alice, name="Green")
    with pytest.raises(TaskRefused, match="already in the team"):
        team_join(token=task_world.blue.invite_token, user=alice)
    assert Membership.objects.filter(user=alice).count() == 1


def test_team_names_are_unique_in_a_task(task_world, django_user_model):
    dave = django_user_model.objects.create_user("dave", "dave@example.org", "pw-pw-pw-pw-1")
    with pytest.raises(TaskRefused, match="already takes part"):
        team_create(phase=task_world.phase, user=dave, name="red")


def test_create_and_join_through_the_pages(task_world, django_user_model, client):
    dave = django_user_model.objects.create_user("dave", "dave@example.org", "pw-pw-pw-pw-1")
    erin = django_user_model.objects.create_user("erin", "erin@example.org", "pw-pw-pw-pw-1")
    client.force_login(dave)
    response = client.post(reverse("campaigns:team_create", args=[task_world.phase.pk]), {"name": "Green"})
    assert response.status_code == 302
    green = Team.objects.get(name="Green")
    page = client.get(reverse("leaderboard:task", args=[task_world.phase.pk])).content.decode()
    assert green.invite_url() in page  # the invitation link, for the team's members
    client.force_login(erin)
    assert green.invite_url() not in client.get(reverse("leaderboard:task", args=[task_world.phase.pk])).content.decode()
    assert client.get(green.invite_url()).status_code == 200
    client.post(green.invite_url())
    assert Membership.objects.filter(team=green, user=erin).exists()


def test_an_anonymous_invitee_goes_through_allauths_sign_up(task_world, client):
    response = client.get(task_world.red.invite_url())
    assert response.status_code == 302
    target = urlparse(response["Location"])
    assert target.path == reverse("account_signup")
    assert parse_qs(target.query)["next"] == [task_world.red.invite_url()]


def test_an_email_invitation_is_accepted_by_the_verified_address_only(task_world, alice, django_user_model):
    invitation = invitation_send(team=task_world.red, user=alice, email="frank@example.org")
    row = SentNotification.objects.get(key=f"invitation:{invitation.pk}")
    assert row.kind == "invitation" and row.email == "frank@example.org"
    assert invitation.get_absolute_url() in row.context["url"]
    frank = django_user_model.objects.create_user("frank", "frank@example.org", "pw-pw-pw-pw-1")
    EmailAddress.objects.create(user=frank, email="frank@example.org", primary=True, verified=False)
    with pytest.raises(TaskRefused, match="verify it"):
        invitation_accept(token=invitation.token, user=frank)
    EmailAddress.objects.filter(user=frank).update(verified=True)
    assert invitation_accept(token=invitation.token, user=frank) == task_world.red
    assert Invitation.objects.get(pk=invitation.pk).accepted_by == frank
    with pytest.raises(TaskRefused, match="already accepted"):
        invitation_accept(token=invitation.token, user=frank)


def test_only_members_invite(task_world, bob):
    with pytest.raises(TaskRefused, match="Only the team's members"):
        invitation_send(team=task_world.red, user=bob, email="x@example.org")


def test_leaving_keeps_the_runs_with_the_team_and_frees_the_person(task_world, carol):
    run = upload(carol, task_world.split, ALICE_RANKS, "carol's")
    team_leave(team=task_world.red, user=carol)
    run.refresh_from_db()
    assert run.entrant_team_id == task_world.red.pk
    team_join(token=task_world.blue.invite_token, user=carol)  # free to join another team


def test_teams_are_fixed_after_the_close(task_world, carol, django_user_model):
    close(task_world.phase)
    with pytest.raises(TaskRefused, match="teams are fixed"):
        team_leave(team=task_world.red, user=carol)
    dave = django_user_model.objects.create_user("dave", "dave@example.org", "pw-pw-pw-pw-1")
    with pytest.raises(TaskRefused, match="closed"):
        team_join(token=task_world.red.invite_token, user=dave)


def test_a_new_link_replaces_the_old_one(task_world, alice, client):
    old = task_world.red.invite_url()
    client.force_login(alice)
    client.post(reverse("campaigns:new_link", args=[task_world.red.pk]))
    assert client.get(old).status_code == 404


def test_the_admin_lists_teams_with_their_members(task_world, staff, client):
    client.force_login(staff)
    assert "Red" in client.get(reverse("admin:campaigns_team_changelist")).content.decode()
    page = client.get(reverse("admin:campaigns_team_change", args=[task_world.red.pk])).content.decode()
    assert "carol" in page or str(task_world.red.memberships.first().user_id) in page
    phase_page = client.get(reverse("admin:campaigns_phase_change", args=[task_world.phase.pk])).content.decode()
    assert "4 public topics of 9" in phase_page and "q1" not in phase_page.split("partition", 1)[1][:500]
