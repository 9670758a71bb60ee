"""Who may upload to a split: one question, asked before an upload costs anything.

The upload checks (web form, API and command-line client all go through
``submission_create``) call :func:`upload_refusal` and refuse with its text.
A split's curator decides (``Split.verified_email``, ``Split.approval_required``):

* **verified e-mail** — on by default for hidden splits. With allauth's
  unique, canonical addresses (accounts/emails.py) every verified account is
  a different mailbox, so per-account quotas are per verified identity.
* **curator approval** — off by default; the participant asks on the site,
  a curator approves in the admin.
* **an ORCID-linked account** — off by default (``Split.orcid_required``):
  the account must be linked to an ORCID iD through allauth's ORCID sign-in
  (``/accounts/orcid/login/?process=connect``); an iD links to one account
  only, so every identity is a researcher's iD.

Staff upload without either: they are the curators (baselines, checks).
"""

from __future__ import annotations

from allauth.account.models import EmailAddress
from allauth.socialaccount.models import SocialAccount
from django.conf import settings
from django.urls import reverse

from catalogue.models import Split

from .models import ParticipantApproval


def upload_refusal(*, user, split: Split) -> str | None:
    """Why ``user`` may not upload to ``split`` yet, and what to do about it; ``None`` when they may."""
    if not user.is_authenticated:
        return f"Log in to upload: {reverse('account_login')}"
    if user.is_staff:
        return None
    return (email_refusal(user=user, split=split) or orcid_refusal(user=user, split=split)
            or approval_refusal(user=user, split=split))


def email_refusal(*, user, split: Split) -> str | None:
    """The refusal for want of a verified e-mail address, when ``split`` requires one."""
    if not split.requires_verified_email or EmailAddress.objects.filter(user=user, verified=True).exists():
        return None
    manage = reverse("account_email")
    address = EmailAddress.objects.filter(user=user).order_by("-primary", "pk").first()
    if address is None:
        return (
            f"Uploading to {split} needs a verified e-mail address and your account has none: "
            f"add one at {manage}, then click the link we send to it."
        )
    return (
        f"Verify your e-mail address before uploading to {split}: we sent a link to {address.email}. "
        f"No mail (check the spam folder)? Send it again from {manage}, where you can also change the address."
    )


def approval_refusal(*, user, split: Split) -> str | None:
    """The refusal for want of a curator's approval, when ``split`` requires one."""
    if not split.approval_required:
        return None
    approval = ParticipantApproval.for_split(user=user, split=split)
    page = reverse("accounts:participation", args=[split.pk])
    if approval is None:
        return (
            f"Uploading to {split} needs a curator's approval of participants: "
            f"ask for it at {page}; you can upload once a curator approves."
        )
    if not approval.approved:
        return (
            f"Your request to take part in {split} (sent {approval.requested_at:%Y-%m-%d}) is waiting for "
            f"a curator's approval; you can upload once it is approved ({page})."
        )
    return None


def orcid_refusal(*, user, split: Split) -> str | None:
    """The refusal for want of an account linked to an ORCID iD, when ``split`` requires one."""
    if not split.orcid_required or SocialAccount.objects.filter(user=user, provider="orcid").exists():
        return None
    if "orcid" not in settings.SOCIALACCOUNT_PROVIDERS:  # the deployment set no ORCID keys: nobody can link one
        return (f"Uploading to {split} needs an account linked to an ORCID iD, and this site has no ORCID sign-in "
                "configured yet: ask the curators to set it up (LEXBOARD_ORCID_CLIENT_ID) or to lift the rule.")
    link = reverse("orcid_login") + "?process=connect"
    return (f"Uploading to {split} needs an account linked to an ORCID iD: link yours at {link} "
            "(you sign in at ORCID; we keep only your iD, and an iD links to one account).")
