"""Data terms: a version is never edited, accepted once per version before a download or an upload, on every
door (the file links, the upload form, the API, fusion, images), recorded and exported by curators as CSV."""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from urllib.parse import quote

import pytest
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiToken, TermsAcceptance
from accounts.terms import TermsChanged, terms_accept, terms_pending
from campaigns.models import Phase
from campaigns.services import team_create
from catalogue.models import DataTerms
from catalogue.services import data_terms_publish
from submissions.errors import TermsRequired
from submissions.models import Submission
from submissions.selectors import submission_quota
from submissions.services import submission_create, upload_precheck
from submissions.services.fusion import FusionRefused, fusion_create
from tests.submissions.conftest import GOOD_RUN, METADATA

pytestmark = pytest.mark.django_db

TOPICS = "topics-test.tsv.gz"


def run(n: int = 0) -> SimpleUploadedFile:
    return SimpleUploadedFile("run.txt", GOOD_RUN.replace(" sys\n", f" s{n}\n").encode())


@pytest.fixture
def terms(tiny_dataset) -> DataTerms:
    return data_terms_publish(dataset=tiny_dataset, title="Tiny licence", text="Research use only.\n\nNo redistribution.")


def file_url(dataset, name=TOPICS) -> str:
    return reverse("leaderboard:dataset_file", args=[dataset.slug, name])


def terms_url(dataset) -> str:
    return reverse("leaderboard:data_terms", args=[dataset.slug])


# --- the record --------------------------------------------------------------------------------------------


def test_a_version_is_never_edited_and_new_text_is_a_new_version(tiny_dataset, terms, alice):
    assert terms.version == 1
    terms.text = "Anything goes."
    with pytest.raises(ValidationError):
        terms.save()
    assert DataTerms.objects.get(pk=terms.pk).text == "Research use only.\n\nNo redistribution."
    assert data_terms_publish(dataset=tiny_dataset, title="Tiny licence",
                              text="Research use only.\n\nNo redistribution.").pk == terms.pk  # no change: no version
    second = data_terms_publish(dataset=tiny_dataset, title="Tiny licence", text="Research use only, v2.")
    assert second.version == 2 and DataTerms.objects.filter(dataset=tiny_dataset).count() == 2


def test_accepting_is_once_per_version_and_a_new_version_asks_again(tiny_dataset, terms, alice):
    assert terms_pending(user=alice, dataset=tiny_dataset).terms == terms
    first = terms_accept(user=alice, dataset=tiny_dataset, version=1)
    assert terms_accept(user=alice, dataset=tiny_dataset, version=1).pk == first.pk
    assert (first.version, first.username, first.email, first.team) == (1, "alice", alice.email, "")
    assert terms_pending(user=alice, dataset=tiny_dataset) is None
    data_terms_publish(dataset=tiny_dataset, title="Tiny licence", text="Version two.")
    pending = terms_pending(user=alice, dataset=tiny_dataset)
    assert pending.terms.version == 2 and pending.accepted_before == 1
    assert "They changed since you accepted version 1" in pending.message
    with pytest.raises(TermsChanged):  # the text read was version 1: not what is in force
        terms_accept(user=alice, dataset=tiny_dataset, version=1)
    terms_accept(user=alice, dataset=tiny_dataset, version=2)
    assert list(TermsAcceptance.objects.filter(user=alice).order_by("version").values_list("version", flat=True)) == [
        1, 2]


def test_the_team_an_account_acts_for_is_recorded(tiny_dataset, terms, alice, client):
    now = timezone.now()
    phase = Phase.objects.create(split=tiny_dataset.splits.get(name="test"), title="Tiny task",
                                 opens_at=now - timedelta(days=1), closes_at=now + timedelta(days=1))
    team_create(phase=phase, user=alice, name="Red")
    client.force_login(alice)
    client.post(terms_url(tiny_dataset), {"version": 1, "next": "/"})
    assert TermsAcceptance.objects.get(user=alice).team == "Red"


# --- downloads ---------------------------------------------------------------------------------------------


def test_a_download_asks_to_log_in_then_for_the_terms_then_serves_the_file(client, tiny_dataset, terms, alice):
    response = client.get(file_url(tiny_dataset))
    assert response.status_code == 302 and reverse("account_login") in response["Location"]
    client.force_login(alice)
    response = client.get(file_url(tiny_dataset))
    assert response.status_code == 302
    assert response["Location"] == f"{terms_url(tiny_dataset)}?next={quote(file_url(tiny_dataset), safe='')}"
    page = client.get(response["Location"]).content.decode()
    assert "No redistribution." in page and "I accept version 1" in page
    accepted = client.post(terms_url(tiny_dataset), {"version": 1, "next": file_url(tiny_dataset)})
    assert accepted.status_code == 302 and accepted["Location"] == file_url(tiny_dataset)
    download = client.get(file_url(tiny_dataset))
    assert download.status_code == 200 and download["Content-Type"] == "application/gzip"
    data_terms_publish(dataset=tiny_dataset, title="Tiny licence", text="Version two.")
    assert client.get(file_url(tiny_dataset)).status_code == 302  # asked again


def test_a_script_downloads_with_its_token_once_the_terms_are_accepted(client, tiny_dataset, terms, alice):
    key = ApiToken.issue(user=alice, name="script")[1]
    refused = client.get(file_url(tiny_dataset), HTTP_AUTHORIZATION=f"Token {key}")
    assert refused.status_code == 403 and "version 1" in refused.content.decode()
    assert client.get(file_url(tiny_dataset), HTTP_AUTHORIZATION="Token nope").status_code == 401
    terms_accept(user=alice, dataset=tiny_dataset, version=1)
    assert client.get(file_url(tiny_dataset), HTTP_AUTHORIZATION=f"Token {key}").status_code == 200


def test_next_never_leaves_the_site(client, tiny_dataset, terms, alice):
    client.force_login(alice)
    response = client.post(terms_url(tiny_dataset), {"version": 1, "next": "https://evil.example/"})
    assert response["Location"] == tiny_dataset.get_absolute_url()


def test_staff_and_datasets_without_terms_download_without_asking(client, tiny_dataset, staff, alice):
    client.force_login(alice)
    assert client.get(file_url(tiny_dataset)).status_code == 200  # no terms yet
    data_terms_publish(dataset=tiny_dataset, title="Tiny licence", text="Research use only.")
    client.force_login(staff)
    assert client.get(file_url(tiny_dataset)).status_code == 200


def test_the_dataset_page_names_the_terms_and_old_versions_stay_readable(client, tiny_dataset, terms):
    page = client.get(tiny_dataset.get_absolute_url()).content.decode()
    assert "Tiny licence, version 1" in page
    data_terms_publish(dataset=tiny_dataset, title="Tiny licence", text="Version two.")
    page = client.get(tiny_dataset.get_absolute_url()).content.decode()
    assert "Tiny licence, version 2" in page  # the anonymous page cache saw the change
    old = client.get(reverse("leaderboard:data_terms_version", args=[tiny_dataset.slug, 1])).content.decode()
    assert "No redistribution." in old and "replaced" in old


# --- uploads -----------------------------------------------------------------------------------------------


def test_an_upload_is_refused_before_a_slot_is_used(tiny_dataset, terms, alice):
    test_split = tiny_dataset.splits.get(name="test")
    with pytest.raises(TermsRequired) as refused:
        submission_create(user=alice, split=test_split, upload=run(), metadata=METADATA)
    assert "\u201cTiny licence\u201d, version 1" in refused.value.message
    assert terms_url(tiny_dataset) in refused.value.message
    assert not Submission.objects.exists() and submission_quota(user=alice, split=test_split).total_used == 0
    with pytest.raises(TermsRequired):
        upload_precheck(user=alice, split=test_split)  # a container image: refused before it is stored
    terms_accept(user=alice, dataset=tiny_dataset, version=1)
    submission_create(user=alice, split=test_split, upload=run(), metadata=METADATA)


def test_curators_baselines_need_no_acceptance(tiny_dataset, terms, staff):
    split = tiny_dataset.splits.get(name="dev")
    submission_create(user=staff, split=split, upload=run(), metadata=METADATA, is_baseline=True)


def test_a_fusion_is_refused_until_the_terms_are_accepted(tiny_dataset, alice):
    split = tiny_dataset.splits.get(name="dev")
    parts = [submission_create(user=alice, split=split, upload=run(i), metadata=METADATA, enqueue=False)
             for i in (1, 2)]
    data_terms_publish(dataset=tiny_dataset, title="Tiny licence", text="Research use only.")
    with pytest.raises(FusionRefused) as refused:
        fusion_create(user=alice, parts=parts, method="rrf", k=60)
    assert refused.value.status == 403 and "version 1" in refused.value.message


def test_the_upload_form_sends_to_the_terms_and_back(client, tiny_dataset, terms, alice):
    client.force_login(alice)
    upload_page = reverse("participants:upload", args=[tiny_dataset.slug]) + "?split=dev"
    response = client.get(upload_page)
    assert response.status_code == 302 and response["Location"].startswith(terms_url(tiny_dataset))
    back = client.post(terms_url(tiny_dataset), {"version": 1, "next": upload_page})
    assert back["Location"] == upload_page
    assert client.get(upload_page).status_code == 200


# --- the API -----------------------------------------------------------------------------------------------


@pytest.fixture
def api(alice) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=alice, name='t')[1]}")
    return client


def api_upload(api, n=0):
    return api.post("/api/v1/submissions/", {"dataset": "tiny", "split": "dev", "system_name": "x",
                                             "run_file": run(n)}, format="multipart")


def test_the_api_refuses_with_the_dataset_the_version_and_where_to_accept(api, tiny_dataset, terms):
    response = api_upload(api)
    assert response.status_code == 403
    error = response.json()["error"]
    assert error["terms"] == {"dataset": "tiny", "version": 1, "title": "Tiny licence",
                              "url": "http://testserver/d/tiny/terms/",
                              "accept": "http://testserver/api/v1/datasets/tiny/terms/accept"}
    assert "http://testserver/d/tiny/terms/" in error["message"] and "--accept-terms" in error["message"]
    assert not Submission.objects.exists()
    body = api.get("/api/v1/datasets/tiny/terms").json()
    assert (body["version"], body["text"], body["accepted_at"]) == (1, "Research use only.\n\nNo redistribution.", None)
    assert api.get("/api/v1/datasets/tiny/files").json()["terms"]["accepted"] is False
    assert APIClient().get("/api/v1/datasets/tiny/files").json()["terms"]["accepted"] is None
    assert api.post("/api/v1/datasets/tiny/terms/accept", {"version": 2}, format="json").status_code == 409
    assert api.post("/api/v1/datasets/tiny/terms/accept", ["x"], format="json").status_code == 400
    accepted = api.post("/api/v1/datasets/tiny/terms/accept", {"version": 1}, format="json")
    assert accepted.status_code == 200 and accepted.json()["version"] == 1
    assert api.get("/api/v1/datasets/tiny/terms").json()["accepted_at"] is not None
    assert api_upload(api).status_code == 202


def test_anonymous_callers_cannot_accept(tiny_dataset, terms):
    assert APIClient().post("/api/v1/datasets/tiny/terms/accept", {"version": 1}, format="json").status_code == 401


# --- curators ----------------------------------------------------------------------------------------------


def test_curators_export_the_acceptances_as_csv(client, tiny_dataset, terms, alice, bob, staff):
    terms_accept(user=alice, dataset=tiny_dataset, version=1)
    TermsAcceptance.objects.create(user=bob, terms=terms, dataset=tiny_dataset, version=1, username="bob",
                                   email="bob@example.org", team="=HYPERLINK(1)")
    client.force_login(staff)
    changelist = reverse("admin:accounts_termsacceptance_changelist")
    assert "alice" in client.get(changelist).content.decode()
    ids = list(TermsAcceptance.objects.values_list("pk", flat=True))
    response = client.post(changelist, {"action": "export_csv", "_selected_action": ids})
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0] == ["dataset", "version", "title", "account", "email", "team", "accepted_at_utc"]
    assert sorted(r[3] for r in rows[1:]) == ["alice", "bob"]
    assert ["tiny", "1", "Tiny licence", "alice", alice.email, ""] == next(r for r in rows if r[3] == "alice")[:6]
    assert next(r for r in rows if r[3] == "bob")[5] == "'=HYPERLINK(1)"  # no formula in a curator's spreadsheet
    client.force_login(alice)
    assert client.post(changelist, {"action": "export_csv", "_selected_action": ids}).status_code == 302  # to log in


def test_curators_add_a_version_in_the_admin_and_cannot_edit_one(client, tiny_dataset, terms, staff):
    client.force_login(staff)
    add = reverse("admin:catalogue_dataterms_add")
    response = client.post(add, {"dataset": tiny_dataset.pk, "title": "Tiny licence", "text": "Version two."})
    assert response.status_code == 302
    assert list(DataTerms.objects.filter(dataset=tiny_dataset).values_list("version", flat=True)) == [2, 1]
    change = reverse("admin:catalogue_dataterms_change", args=[terms.pk])
    client.post(change, {"dataset": tiny_dataset.pk, "title": "Changed", "text": "Changed."})
    terms.refresh_from_db()
    assert terms.text == "Research use only.\n\nNo redistribution."
    assert client.get(reverse("admin:catalogue_dataterms_delete", args=[terms.pk])).status_code == 403


def test_the_add_form_starts_from_the_text_in_force(client, tiny_dataset, terms, staff):
    """docs/operations.md: "to change the terms, add a version (the add form starts from the text in force)" — from
    the list's "Add" button (which names no dataset) as from a version's page."""
    client.force_login(staff)
    add = reverse("admin:catalogue_dataterms_add")
    chooser = client.get(add)  # the list's Add button: which dataset first
    html = chooser.content.decode()
    assert chooser.status_code == 200 and '<select name="dataset" id="id_dataset" required>' in html
    assert f'<option value="{tiny_dataset.pk}">' in html and "version 1 in force" in html
    form = client.get(add, {"dataset": tiny_dataset.pk})
    fields = form.context["adminform"].form
    assert fields["text"].value() == terms.text and fields["title"].value() == terms.title
    assert terms.text in form.content.decode().replace("&#x27;", "'")
    amended = terms.text + "\n\nCite the dataset's paper."
    assert client.post(add, {"dataset": tiny_dataset.pk, "title": terms.title, "text": amended}).status_code == 302
    v2 = DataTerms.objects.get(dataset=tiny_dataset, version=2)
    assert v2.text == amended
    # An old version's page leads to the next version, starting from the text in force (version 2's).
    old = client.get(reverse("admin:catalogue_dataterms_change", args=[terms.pk])).content.decode()
    assert f'href="{add}?dataset={tiny_dataset.pk}"' in old and "add version 3</a>, starting from version 2" in old
    assert client.get(add, {"dataset": tiny_dataset.pk}).context["adminform"].form["text"].value() == amended
