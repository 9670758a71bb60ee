"""Who may upload where: accounts.policy.upload_refusal, the one question the upload checks ask."""

import pytest
from allauth.account.models import EmailAddress
from django.urls import reverse
from django.utils import timezone

from accounts.models import ParticipantApproval
from accounts.policy import upload_refusal
from catalogue.models import Benchmark, Dataset, Split

pytestmark = pytest.mark.django_db


@pytest.fixture
def dataset():
    bench = Benchmark.objects.create(slug="b", name="B")
    return Dataset.objects.create(benchmark=bench, slug="d", name="D", language="fr", measures=["R@10"],
                                  primary_measure="R@10")


@pytest.fixture
def hidden(dataset):
    return Split.objects.create(dataset=dataset, name="test", kind="test", hidden=True)


@pytest.fixture
def public(dataset):
    return Split.objects.create(dataset=dataset, name="dev", kind="dev", hidden=False)


def _address(user, verified):
    """The user's one address (the fixtures' users have a verified one), verified or not."""
    EmailAddress.objects.update_or_create(user=user, defaults={"email": user.email, "primary": True, "verified": verified})


def test_an_unverified_account_cannot_upload_to_a_hidden_split(alice, hidden):
    _address(alice, verified=False)
    refusal = upload_refusal(user=alice, split=hidden)
    assert refusal.startswith("Verify your e-mail address before uploading to d/test")
    assert "we sent a link to alice@example.org" in refusal
    assert reverse("account_email") in refusal  # where to send it again


def test_a_verified_account_may(alice, hidden):
    _address(alice, verified=True)
    assert upload_refusal(user=alice, split=hidden) is None


def test_an_account_without_an_address_is_told_to_add_one(alice, hidden):
    EmailAddress.objects.filter(user=alice).delete()
    refusal = upload_refusal(user=alice, split=hidden)
    assert "your account has none" in refusal and reverse("account_email") in refusal


def test_public_splits_need_no_verified_address_by_default(alice, public):
    _address(alice, verified=False)
    assert upload_refusal(user=alice, split=public) is None


def test_the_curator_decides_per_split(alice, hidden, public):
    _address(alice, verified=False)
    public.verified_email = Split.VerifiedEmail.ALWAYS
    assert upload_refusal(user=alice, split=public) is not None
    hidden.verified_email = Split.VerifiedEmail.NEVER
    assert upload_refusal(user=alice, split=hidden) is None


def test_staff_upload_without_either_check(staff, hidden):
    hidden.approval_required = True
    assert upload_refusal(user=staff, split=hidden) is None


def test_approval_asked_for_waiting_then_approved(alice, bob, hidden):
    _address(alice, verified=True)
    hidden.approval_required = True
    hidden.save()
    page = reverse("accounts:participation", args=[hidden.pk])
    refusal = upload_refusal(user=alice, split=hidden)
    assert "needs a curator's approval" in refusal and page in refusal

    approval = ParticipantApproval.objects.create(user=alice, dataset=hidden.dataset, split=hidden)
    refusal = upload_refusal(user=alice, split=hidden)
    assert "is waiting for a curator's approval" in refusal

    approval.approved_at, approval.approved_by = timezone.now(), bob
    approval.save()
    assert upload_refusal(user=alice, split=hidden) is None


def test_an_approval_for_the_dataset_covers_its_splits(alice, hidden, public):
    _address(alice, verified=True)
    for split in (hidden, public):
        split.approval_required = True
    ParticipantApproval.objects.create(user=alice, dataset=hidden.dataset, approved_at=timezone.now())
    assert upload_refusal(user=alice, split=hidden) is None
    assert upload_refusal(user=alice, split=public) is None


def test_the_email_comes_before_the_approval(alice, hidden):
    EmailAddress.objects.filter(user=alice).delete()
    hidden.approval_required = True
    assert upload_refusal(user=alice, split=hidden).startswith("Uploading to d/test needs a verified e-mail")


def test_a_participant_asks_for_approval_and_sees_it_waiting(client, alice, hidden):
    _address(alice, verified=True)
    hidden.approval_required = True
    hidden.save()
    client.force_login(alice)
    url = reverse("accounts:participation", args=[hidden.pk])
    assert "Ask for approval" in client.get(url).content.decode()
    response = client.post(url, {"message": "PhD student at KU Leuven, BM25 + dense."})
    assert response.status_code == 302
    approval = ParticipantApproval.objects.get(user=alice)
    assert (approval.split, approval.message) == (hidden, "PhD student at KU Leuven, BM25 + dense.")
    page = client.get(url).content.decode()
    assert "Waiting for approval" in page
    client.post(url, {"message": "again"})
    assert ParticipantApproval.objects.filter(user=alice).count() == 1
    assert "waiting for a curator" in client.get(reverse("accounts:profile")).content.decode()


def test_curators_approve_in_the_admin(client, alice, staff, hidden):
    approval = ParticipantApproval.objects.create(user=alice, dataset=hidden.dataset, split=hidden)
    client.force_login(staff)
    response = client.post(reverse("admin:accounts_participantapproval_changelist"),
                           {"action": "approve", "_selected_action": [approval.pk]})
    assert response.status_code == 302
    approval.refresh_from_db()
    assert approval.approved and approval.approved_by == staff


def test_the_split_admin_shows_the_options(client, staff, hidden):
    client.force_login(staff)
    page = client.get(reverse("admin:catalogue_split_change", args=[hidden.pk])).content.decode()
    assert "Who may upload" in page and 'name="verified_email"' in page and 'name="approval_required"' in page


# --- an ORCID-linked account (the OAuth dance itself: tests/accounts/test_orcid.py) ------------------------------


def test_a_split_asking_for_orcid_refuses_an_account_without_one_and_says_why(alice, hidden, staff):
    from allauth.socialaccount.models import SocialAccount

    hidden.orcid_required = True
    hidden.save()
    refusal = upload_refusal(user=alice, split=hidden)
    # This site (the tests' settings) has no ORCID keys: nobody could link an iD, and the refusal says so.
    assert "needs an account linked to an ORCID iD" in refusal and "LEXBOARD_ORCID_CLIENT_ID" in refusal
    SocialAccount.objects.create(user=alice, provider="orcid", uid="0000-0002-1825-0097")
    assert upload_refusal(user=alice, split=hidden) is None
    assert upload_refusal(user=staff, split=hidden) is None  # curators upload baselines
