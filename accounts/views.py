"""Account pages of our own: the profile with its API tokens, and participation requests.

Sign-up, log-in, e-mail verification and password reset are django-allauth's
views (under /accounts/, with our templates in templates/account and
templates/allauth).
"""

from __future__ import annotations

from allauth.account.models import EmailAddress
from allauth.socialaccount.models import SocialAccount
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import IntegrityError
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from catalogue.models import Split

from .forms import ParticipationRequestForm, ProfileForm, TokenCreateForm
from .models import ApiToken, ParticipantApproval, Profile
from .policy import email_refusal


def _profile_of(user) -> Profile:
    # Users made by createsuperuser, the admin or a social sign-in have no profile yet.
    profile, _ = Profile.objects.get_or_create(user=user)
    return profile


def _render_profile(request, *, form=None, token_form=None, new_key: str = "", new_token=None, status: int = 200):
    profile = _profile_of(request.user)
    tokens = ApiToken.objects.filter(user=request.user, revoked_at__isnull=True).order_by("-created_at")
    response = render(
        request,
        "accounts/profile.html",
        {
            "profile": profile,
            "form": form or ProfileForm(instance=profile),
            "token_form": token_form or TokenCreateForm(),
            "tokens": tokens,
            "new_key": new_key,
            "new_token": new_token,
            "api_docs_url": reverse("api:docs"),
            "email_addresses": EmailAddress.objects.filter(user=request.user).order_by("-primary", "email"),
            "approvals": ParticipantApproval.objects.filter(user=request.user).select_related("dataset", "split"),
            # Splits may ask for an ORCID-linked account (policy.orcid_refusal): the link, where ORCID is set up.
            "orcid_enabled": "orcid" in settings.SOCIALACCOUNT_PROVIDERS,
            "orcid_ids": list(SocialAccount.objects.filter(user=request.user, provider="orcid")
                              .values_list("uid", flat=True)),
        },
        status=status,
    )
    # The page may show a fresh key: no cache may keep a copy.
    response["Cache-Control"] = "no-store"
    return response


@login_required
def profile(request):
    """Edit the display name and affiliation; list, create and revoke API tokens."""
    if request.method == "POST":
        form = ProfileForm(request.POST, instance=_profile_of(request.user))
        if form.is_valid():
            form.save()
            messages.success(request, "Profile saved.")
            return redirect("accounts:profile")
        return _render_profile(request, form=form, status=400)
    return _render_profile(request)


@login_required
@require_POST
def token_create(request):
    """Create a token and show its key in this response only (only its hash is stored)."""
    token_form = TokenCreateForm(request.POST)
    if not token_form.is_valid():
        return _render_profile(request, token_form=token_form, status=400)
    token, key = token_form.save(user=request.user)
    return _render_profile(request, new_key=key, new_token=token)


@login_required
@require_POST
def token_revoke(request, token_id: int):
    """Revoke one of the user's own tokens; another user's token id is simply not found."""
    token = get_object_or_404(ApiToken, pk=token_id, user=request.user, revoked_at__isnull=True)
    ApiToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())
    messages.success(request, f"Token “{token.name}” ({token.prefix}…) revoked: scripts using it are now refused.")
    return redirect("accounts:profile")


@login_required
def participation(request, split_id: int):
    """Where a participant stands on a split that needs a curator's approval, and the form to ask for it."""
    split = get_object_or_404(Split.objects.select_related("dataset"), pk=split_id, dataset__is_published=True)
    approval = ParticipantApproval.for_split(user=request.user, split=split)
    form = ParticipationRequestForm(request.POST or None)
    if request.method == "POST" and split.approval_required and approval is None and form.is_valid():
        try:
            ParticipantApproval.objects.create(
                user=request.user, dataset=split.dataset, split=split, message=form.cleaned_data["message"]
            )
        except IntegrityError:  # a second click: the first request stands
            pass
        messages.success(request, f"Request sent: a curator of {split.dataset.name} will look at it.")
        return redirect("accounts:participation", split_id=split.pk)
    return render(
        request,
        "accounts/participation.html",
        {
            "split": split,
            "approval": approval,
            "form": form,
            "refusal": None if request.user.is_staff else email_refusal(user=request.user, split=split),
        },
    )
