"""The shared task's rules as a participant meets them: the upload form and the API (refusals with the dates,
the team's caps as a 429), the team pages (invite, leave), after-the-task rows in the API's leaderboard."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiToken
from campaigns.models import Invitation, Membership, Phase
from submissions.models import Submission
from tests.users import verified

from .conftest import ALICE_RANKS, close, run_bytes, upload

pytestmark = pytest.mark.django_db


def _form(ranks, name):
    return {"run": SimpleUploadedFile("run.txt", run_bytes(ranks, name)), "system_name": name, "family": "lexical",
            "visibility": "public"}


def _upload_url():
    return reverse("participants:upload", args=["coliee-t3"]) + "?split=test"


def _api(user) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=user, name='t')[1]}")
    return api


def test_the_upload_form_refuses_before_the_opening_with_the_dates(task_world, alice, client):
    Phase.objects.filter(pk=task_world.phase.pk).update(opens_at=timezone.now() + timedelta(days=1))
    client.force_login(alice)
    page = client.post(_upload_url(), _form(ALICE_RANKS, "early")).content.decode()
    assert "opens at" in page and "Europe/Brussels" in page and "come back then" in page
    assert not Submission.objects.exists()


def test_the_upload_form_sends_someone_without_a_team_to_the_task_page(task_world, django_user_model, client):
    dave = verified(django_user_model.objects.create_user("dave", "dave@example.org", "pw-pw-pw-pw-1"))
    client.force_login(dave)
    page = client.post(_upload_url(), _form(ALICE_RANKS, "solo")).content.decode()
    assert reverse("leaderboard:task", args=[task_world.phase.pk]) in page and "Create a team" in page


def test_the_api_answers_429_when_the_team_has_used_its_daily_cap(task_world, alice, carol):
    for n, user in enumerate((alice, carol, alice)):
        upload(user, task_world.split, {**ALICE_RANKS, "q9": n + 2}, f"r{n}", score=False)
    response = _api(carol).post(reverse("api:submissions"), {
        "dataset": "coliee-t3", "split": "test", "system_name": "one too many",
        "run_file": SimpleUploadedFile("run.txt", run_bytes({**ALICE_RANKS, "q9": 9}, "x"))}, format="multipart")
    assert response.status_code == 429
    assert "Your team" in response.json()["error"]["message"] and response["Retry-After"]


def test_an_after_the_task_run_is_marked_in_the_api_leaderboard_and_its_page(task_world, alice, client):
    close(task_world.phase)
    late = upload(alice, task_world.split, ALICE_RANKS, "after")
    entries = client.get(reverse("api:leaderboard", args=["coliee-t3"])).json()["entries"]
    row = next(e for e in entries if e["system"] == "after")
    assert row["extra"] == {"after_task": True} and row["team"] == ""
    assert "after the task" in client.get(reverse("participants:detail", args=[late.pk])).content.decode()
    api = client.get(reverse("api:submission", args=[late.pk])).json()
    assert api["after_task"] is True and api["team"] is None


def test_inviting_by_email_and_leaving_through_the_pages(task_world, alice, carol, client):
    client.force_login(alice)
    response = client.post(reverse("campaigns:invite", args=[task_world.red.pk]), {"email": "gil@example.org"})
    assert response.status_code == 302
    assert Invitation.objects.filter(team=task_world.red, email="gil@example.org").exists()
    client.force_login(carol)
    client.post(reverse("campaigns:leave", args=[task_world.red.pk]), {"confirm": "yes"})
    assert not Membership.objects.filter(team=task_world.red, user=carol).exists()
    page = client.get(reverse("leaderboard:task", args=[task_world.phase.pk])).content.decode()
    assert "Create a team" in page


def test_leaving_asks_for_a_confirmation_first(task_world, carol, client):
    """One click on "Leave the team" only opens the confirmation; a POST without it leaves nobody."""
    client.force_login(carol)
    page = client.get(reverse("leaderboard:task", args=[task_world.phase.pk])).content.decode()
    confirm = page.split('<details class="confirm-leave">', 1)[1].split("</details>", 1)[0]
    assert "<summary>Leave the team…</summary>" in confirm and 'name="confirm" value="yes"' in confirm
    assert "its runs stay the team&#x27;s" in confirm or "its runs stay the team's" in confirm
    response = client.post(reverse("campaigns:leave", args=[task_world.red.pk]), follow=True)
    assert Membership.objects.filter(team=task_world.red, user=carol).exists()
    assert "confirm with its button" in response.content.decode()


def test_a_closed_task_invites_nobody_to_make_a_team(task_world, client):
    url = reverse("leaderboard:task", args=[task_world.phase.pk])
    assert "to make or join a team" in client.get(url).content.decode()
    close(task_world.phase)
    page = client.get(url).content.decode()
    assert "to make or join a team" not in page and "Create a team" not in page
    assert "The task has closed: teams are fixed." in page


def test_a_refused_team_action_is_shown_on_the_page(task_world, bob, client):
    client.force_login(bob)
    response = client.post(reverse("campaigns:invite", args=[task_world.red.pk]), {"email": "x@example.org"},
                           follow=True)
    assert "Only the team&#x27;s members can do this." in response.content.decode()
    assert not Invitation.objects.exists()


def test_the_upload_form_states_the_tasks_caps_per_team(task_world, alice, client, django_user_model):
    """A team member reads the team's runs left under the phase's caps (3 a day, 10 in all), not the split's
    (none here); a user in no team reads the caps and the refusal before filling the form in."""
    client.force_login(alice)
    page = client.get(_upload_url()).content.decode()
    quota = " ".join(page.split('id="quota"', 1)[1].split("</p>", 1)[0].split())
    assert "Your team “Red”" in quota and "3 of 3 submissions left" in quota and "10 of 10 in total" in quota
    dan = verified(django_user_model.objects.create_user("dan", "dan@example.org", "correct horse battery"))
    client.force_login(dan)
    page = client.get(_upload_url()).content.decode()
    quota = " ".join(page.split('id="quota"', 1)[1].split("</p>", 1)[0].split())
    assert "No daily limit" not in quota and "per team: 3 runs in any 24 hours" in quota and "10 in all" in quota
    assert 'id="task-refusal"' in page and "runs are entered by teams" in page and 'name="run"' not in page
