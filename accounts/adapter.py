"""How Lexboard adapts django-allauth: the client address, log-in lock-outs, sign-ups per address, e-mail spelling.

* Every allauth rate limit keys on :func:`lexboard.client_ip.client_address`
  (one setting, ``LEXBOARD_TRUSTED_PROXY_COUNT``, for allauth's limits and
  ours), an IPv6 address by its network (allauth truncates to
  ``ALLAUTH_RATE_LIMIT_IPV6_PREFIX``, our keys through ``client_network``: the
  same ``LEXBOARD_IPV6_PREFIX``).
* Failed log-ins count per (address, login) and per address
  (``ACCOUNT_RATE_LIMITS["login_failed"]``); allauth's own key is the login
  alone, which would let a guesser anywhere lock the owner out of their right
  password everywhere.
* Sign-ups: only created accounts count against the address
  (``ACCOUNT_RATE_LIMITS["lexboard_signup"]``), so a form with a typo costs
  nothing; past the limit the sign-up page says when to come back.
* Addresses are stored in their canonical spelling (accounts/emails.py), so
  ``ACCOUNT_UNIQUE_EMAIL`` means one account per mailbox.
"""

from __future__ import annotations

from typing import Any

from allauth.account.adapter import DefaultAccountAdapter
from allauth.core import ratelimit
from django.http import HttpRequest

from lexboard.client_ip import client_address, client_network

from .emails import canonical_email

SIGNUP_ACTION = "lexboard_signup"


class AccountAdapter(DefaultAccountAdapter):
    def get_client_ip(self, request: HttpRequest) -> str:
        return client_address(request)

    def _get_login_attempts_cache_key(self, request: HttpRequest, **credentials: Any) -> str:
        # allauth 65.22 names its per-login key here (failures, and the reset after a new password).
        return f"{client_network(request)}|{super()._get_login_attempts_cache_key(request, **credentials)}"

    def is_open_for_signup(self, request: HttpRequest) -> bool:
        """Closed to an address that created ``LEXBOARD_SIGNUP_RATE`` accounts already (GET shows the form)."""
        return bool(ratelimit.consume(request, action=SIGNUP_ACTION, dry_run=True))

    def save_user(self, request, user, form, commit=True):
        ratelimit.consume(request, action=SIGNUP_ACTION)
        return super().save_user(request, user, form, commit=commit)

    def clean_email(self, email: str) -> str:
        return canonical_email(super().clean_email(email))
