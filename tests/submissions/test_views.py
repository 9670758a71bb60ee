"""The participant's pages through the Django test client."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from submissions import disclosure, services
from submissions.models import Submission

from .conftest import GOOD_RUN, METADATA, upload

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery staple"


def make(user, split, **kwargs) -> Submission:
    return services.submission_create(
        user=user, split=split, upload=upload(GOOD_RUN), metadata={**METADATA, **kwargs}
    )


def upload_url(split) -> str:
    return reverse("participants:upload", args=[split.dataset.slug]) + f"?split={split.name}"


def form_data(content=GOOD_RUN, **overrides) -> dict:
    return {"run": upload(content), "system_name": "BM25", "family": "lexical", "visibility": "public", **overrides}


def test_the_upload_page_sends_anonymous_visitors_to_log_in(client, test_split):
    response = client.get(upload_url(test_split))
    assert response.status_code == 302
    assert reverse("account_login") in response["Location"]


def test_the_upload_page_shows_the_scheme_the_format_and_the_quota(client, alice, test_split):
    client.force_login(alice)
    response = client.get(upload_url(test_split))
    assert response.status_code == 200
    body = response.content.decode()
    assert "<code>d1</code>" in body  # the dataset's docid example
    assert "q1 Q0 d1 1 14.2 my-system" in body
    assert "5 of 5 submissions left" in body
    assert 'enctype="multipart/form-data"' in body


def test_the_upload_page_defaults_to_the_hidden_test_split(client, alice, test_split):
    client.force_login(alice)
    response = client.get(reverse("participants:upload", args=[test_split.dataset.slug]))
    assert response.context["split"] == test_split


def test_an_upload_lands_on_the_status_page(client, alice, test_split):
    client.force_login(alice)
    response = client.post(upload_url(test_split), form_data())
    submission = Submission.objects.get()
    assert response.status_code == 302
    assert response["Location"] == submission.get_absolute_url()
    assert submission.user == alice and submission.split == test_split
    page = client.get(response["Location"])
    assert page.status_code == 200
    assert 'data-status-url="' + reverse("participants:status", args=[submission.pk]) in page.content.decode()
    assert "js/status.js" in page.content.decode()


def test_a_refused_file_is_shown_as_a_form_error_with_line_and_reason(client, alice, test_split):
    client.force_login(alice)
    response = client.post(upload_url(test_split), form_data(GOOD_RUN + "q3 Q0 d11 3 abc sys\n"))
    assert response.status_code == 400
    body = response.content.decode()
    assert "line 9" in body
    assert not Submission.objects.exists()


def test_the_form_lists_a_problem_of_many_lines_once_with_its_lines_and_count(client, alice, test_split):
    client.force_login(alice)
    run = "".join(f"q{i % 3 + 1},Q0,d{i},1,0.5,sys\n" for i in range(2000))
    response = client.post(upload_url(test_split), form_data(run))
    assert response.status_code == 400
    body = response.content.decode()
    fixes = re.search(r'<ul class="refusal-lines">(.*?)</ul>', body, re.S).group(1)
    assert fixes.count("<li>") == 1, fixes  # one line of "What to fix", not one per line of the file
    assert "all 2,000 lines: comma- or semicolon-separated — use spaces or tabs" in body
    assert "2,000 lines (1, 2, 3, 4, 5, …); line 1: expected 6 columns" in body
    assert not Submission.objects.exists()


def test_a_full_quota_is_refused_with_the_next_time(client, alice, test_split):
    test_split.daily_limit = 1
    test_split.save()
    client.force_login(alice)
    client.post(upload_url(test_split), form_data())
    response = client.post(upload_url(test_split), form_data())
    assert response.status_code == 400
    assert "Your next submission will be accepted from" in response.content.decode()
    assert Submission.objects.count() == 1


def test_uploads_need_the_csrf_token(alice, test_split):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    response = client.post(upload_url(test_split), form_data())
    assert response.status_code == 403
    assert not Submission.objects.exists()


def test_withdraw_needs_the_csrf_token(alice, test_split):
    submission = make(alice, test_split)
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    assert client.post(reverse("participants:withdraw", args=[submission.pk])).status_code == 403
    assert Submission.objects.get(pk=submission.pk).withdrawn_at is None


def test_another_users_private_submission_is_a_404(client, alice, bob, test_split):
    submission = make(alice, test_split, visibility="private")
    client.force_login(bob)
    for name in ("detail", "status", "edit", "resubmit"):
        assert client.get(reverse(f"participants:{name}", args=[submission.pk])).status_code == 404, name
    assert client.post(reverse("participants:withdraw", args=[submission.pk])).status_code == 404
    assert client.post(reverse("participants:visibility", args=[submission.pk]),
                       {"visibility": "public"}).status_code == 404
    assert Submission.objects.get(pk=submission.pk).visibility == "private"


def test_a_private_submission_is_a_404_for_anonymous_visitors(client, alice, test_split):
    submission = make(alice, test_split, visibility="private")
    assert client.get(reverse("participants:detail", args=[submission.pk])).status_code == 404


def test_the_owner_and_staff_see_a_private_submission(client, alice, staff, test_split):
    submission = make(alice, test_split, visibility="private")
    for user in (alice, staff):
        client.force_login(user)
        assert client.get(reverse("participants:detail", args=[submission.pk])).status_code == 200


def test_a_public_submission_is_visible_to_anyone_but_only_the_owner_can_change_it(client, alice, bob, test_split):
    submission = make(alice, test_split)
    assert client.get(reverse("participants:detail", args=[submission.pk])).status_code == 200
    client.force_login(bob)
    assert client.get(reverse("participants:edit", args=[submission.pk])).status_code == 404


def test_the_status_json(client, alice, test_split):
    submission = make(alice, test_split)
    client.force_login(alice)
    data = client.get(reverse("participants:status", args=[submission.pk])).json()
    assert data["status"] == "queued" and data["is_final"] is False
    services.submission_score(submission.pk)
    data = client.get(reverse("participants:status", args=[submission.pk])).json()
    assert data["status"] == "scored" and data["progress"] == 1.0 and data["is_final"] is True


def test_a_scored_submission_shows_its_scores_formatted_by_the_dataset(client, alice, test_split):
    submission = make(alice, test_split)
    services.submission_score(submission.pk)
    response = client.get(reverse("participants:detail", args=[submission.pk]))
    body = response.content.decode()
    result = submission.results.get()
    # A hidden split: its primary measure only, on its grid (3 evaluated topics: 50 points).
    assert disclosure.formatter(test_split)(result.scores["R@10"]) in body and "MAP@10" not in body.split("scores-title")[1]
    assert "ANALYSES" not in body and "{#" not in body  # the marked block is a template comment


def test_a_failed_submission_shows_its_lines_and_a_resubmit_form(client, alice, test_split):
    submission = make(alice, test_split)
    submission.mark_failed(kind="input", message="The run file cannot be scored.",
                           details=[{"line": 7, "reason": "the score 'abc' is not a number"}])
    client.force_login(alice)
    body = client.get(reverse("participants:detail", args=[submission.pk])).content.decode()
    assert "<td>7</td>" in body and "is not a number" in body
    assert reverse("participants:resubmit", args=[submission.pk]) in body


def test_resubmitting_through_the_page(client, alice, test_split):
    submission = make(alice, test_split)
    submission.mark_failed(kind="input", message="bad")
    client.force_login(alice)
    corrected = GOOD_RUN.replace(" sys\n", " fixed\n")
    response = client.post(reverse("participants:resubmit", args=[submission.pk]), {"run": upload(corrected)})
    new = Submission.objects.exclude(pk=submission.pk).get()
    assert response["Location"] == new.get_absolute_url()
    assert new.replaces_id == submission.pk


def test_my_submissions_lists_only_mine_with_actions(client, alice, bob, test_split):
    mine = make(alice, test_split, system_name="Mine")
    make(bob, test_split, system_name="Theirs")
    services.submission_score(mine.pk)
    client.force_login(alice)
    response = client.get(reverse("participants:mine"))
    body = response.content.decode()
    assert "Mine" in body and "Theirs" not in body
    assert reverse("participants:withdraw", args=[mine.pk]) in body
    assert reverse("participants:visibility", args=[mine.pk]) in body


def test_my_submissions_needs_a_login(client):
    assert client.get(reverse("participants:mine")).status_code == 302


def test_the_owner_can_edit_make_private_and_withdraw(client, alice, test_split):
    submission = make(alice, test_split)
    client.force_login(alice)
    data = {"system_name": "BM25 tuned", "family": "lexical", "visibility": "anonymous"}
    response = client.post(reverse("participants:edit", args=[submission.pk]), data)
    assert response.status_code == 302
    submission.refresh_from_db()
    assert (submission.system_name, submission.visibility) == ("BM25 tuned", "anonymous")
    client.post(reverse("participants:visibility", args=[submission.pk]), {"visibility": "private"})
    assert Submission.objects.get(pk=submission.pk).visibility == "private"
    client.post(reverse("participants:withdraw", args=[submission.pk]))
    assert Submission.objects.get(pk=submission.pk).withdrawn_at is not None


def test_withdraw_only_accepts_post(client, alice, test_split):
    submission = make(alice, test_split)
    client.force_login(alice)
    assert client.get(reverse("participants:withdraw", args=[submission.pk])).status_code == 405


def test_a_next_parameter_cannot_send_the_user_elsewhere(client, alice, test_split):
    submission = make(alice, test_split)
    client.force_login(alice)
    response = client.post(reverse("participants:withdraw", args=[submission.pk]), {"next": "https://evil.example/"})
    assert response["Location"] == reverse("participants:mine")
