"""Test users as the site makes them: hidden splits take uploads from verified e-mail addresses only."""

from __future__ import annotations

from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model

PASSWORD = "correct horse battery staple"


def verified(user):
    """A participant who clicked the mailed link (accounts.policy: hidden splits need a verified address)."""
    EmailAddress.objects.update_or_create(
        user=user, email=user.email, defaults={"primary": True, "verified": True}
    )
    return user


def participant(username: str, password: str = PASSWORD, **fields):
    """A new account with a verified address ``<username>@example.org``."""
    user = get_user_model().objects.create_user(username, f"{username}@example.org", password, **fields)
    return verified(user)
