"""The curators' admin for submissions: lists render, actions go through the services."""

from __future__ import annotations

import json

import pytest
from django.contrib import admin
from django.forms.models import model_to_dict
from django.urls import reverse

from accounts.models import ApiToken
from leaderboard.selectors import leaderboard_rows
from submissions import services
from submissions.admin import SubmissionAdmin
from submissions.models import Result, Submission

from .conftest import GOOD_RUN, METADATA, upload

pytestmark = pytest.mark.django_db


@pytest.fixture
def scored(alice, test_split):
    submission = services.submission_create(user=alice, split=test_split, upload=upload(GOOD_RUN), metadata=METADATA)
    services.submission_score(submission.pk)
    return Submission.objects.get(pk=submission.pk)


def test_the_admin_lists_render_for_staff(client, staff, scored):
    ApiToken.issue(user=staff, name="ci")
    client.force_login(staff)
    for app, model in (("submissions", "submission"), ("submissions", "result"), ("submissions", "statusevent"),
                       ("accounts", "profile"), ("accounts", "apitoken")):
        response = client.get(reverse(f"admin:{app}_{model}_changelist"))
        assert response.status_code == 200, model
    page = client.get(reverse("admin:submissions_submission_change", args=[scored.pk]))
    assert page.status_code == 200
    result = Result.objects.get()
    page = client.get(reverse("admin:submissions_result_change", args=[result.pk])).content.decode()
    assert "per_query" not in page


def test_the_token_admin_shows_the_prefix_never_the_hash(client, staff):
    token, key = ApiToken.issue(user=staff, name="ci")
    client.force_login(staff)
    page = client.get(reverse("admin:accounts_apitoken_change", args=[token.pk])).content.decode()
    assert token.prefix in page
    assert token.key_hash not in page and key not in page


def test_the_rescore_and_hide_actions(client, staff, scored, django_capture_on_commit_callbacks):
    client.force_login(staff)
    url = reverse("admin:submissions_submission_changelist")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        client.post(url, {"action": "rescore", "_selected_action": [scored.pk]})
    assert Submission.objects.get(pk=scored.pk).status == Submission.Status.QUEUED
    assert len(callbacks) == 1
    client.post(url, {"action": "hide", "_selected_action": [scored.pk]})
    assert Submission.objects.get(pk=scored.pk).hidden_by_curator is True
    client.post(url, {"action": "unhide", "_selected_action": [scored.pk]})
    assert Submission.objects.get(pk=scored.pk).hidden_by_curator is False


def test_the_admin_is_staff_only(client, alice):
    client.force_login(alice)
    response = client.get(reverse("admin:submissions_submission_changelist"))
    assert response.status_code == 302


def test_hiding_an_entry_in_its_change_form_takes_it_off_the_leaderboard_at_once(scored, staff, test_split, rf):
    """The change form (not only the list's action) must make the cached leaderboard stale, and save only
    what the curator changed: the status and progress are the workers'."""
    scored.visibility = Submission.Visibility.PUBLIC
    scored.save(update_fields=["visibility"])
    test_split.bump_cache_version()
    test_split.refresh_from_db()
    assert [r.submission_id for r in leaderboard_rows(split=test_split)] == [scored.pk]  # cached now
    read_by_admin = Submission.objects.get(pk=scored.pk)
    Submission.objects.filter(pk=scored.pk).update(progress=0.5)  # a worker, meanwhile
    request = rf.post("/admin/")
    request.user = staff
    model_admin = SubmissionAdmin(Submission, admin.site)
    form_class = model_admin.get_form(request, read_by_admin, change=True)
    data = {k: json.dumps(v) if isinstance(v, dict | list) else v
            for k, v in model_to_dict(read_by_admin, fields=form_class.base_fields).items() if v is not None}
    data["fusion_of"] = []
    data["hidden_by_curator"] = True
    form = form_class(data, instance=read_by_admin)
    assert form.is_valid(), form.errors
    model_admin.save_model(request, form.save(commit=False), form, change=True)
    test_split.refresh_from_db()
    assert leaderboard_rows(split=test_split) == []
    assert Submission.objects.get(pk=scored.pk).progress == 0.5
