"""Token authentication for the API: ``Authorization: Token <key>`` or ``Bearer <key>``.

Keys are checked through :meth:`ApiToken.authenticate`, which compares hashes
(only the hash is stored) and ignores revoked tokens and inactive users.
"""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from .models import ApiToken

KEYWORDS = ("token", "bearer")


class ApiTokenAuthentication(authentication.BaseAuthentication):
    """Authenticate a request by the API token in its ``Authorization`` header.

    A request without the header is left to the next authenticator (the
    browser session); a header with a wrong or revoked key is refused at once,
    so a script learns its token is bad instead of silently acting as
    anonymous.
    """

    keyword = "Token"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].decode("latin-1").lower() not in KEYWORDS:
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed(
                "Malformed Authorization header: send 'Authorization: Token <key>' with the key from your profile page."
            )
        try:
            key = header[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("The API token contains characters a token never has.") from None
        token = ApiToken.authenticate(key)
        if token is None:
            raise exceptions.AuthenticationFailed(
                "Invalid or revoked API token: create a new one on your profile page (/accounts/profile/)."
            )
        return token.user, token

    def authenticate_header(self, request) -> str:
        # Makes DRF answer 401 (with WWW-Authenticate) rather than 403 to a
        # request that did not authenticate.
        return self.keyword


class ApiTokenScheme(OpenApiAuthenticationExtension):
    """Describe the token scheme in the OpenAPI schema."""

    target_class = "accounts.authentication.ApiTokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Token <key>` (or `Bearer <key>`), with a key created on your profile page "
            "or by `python manage.py create_api_token USERNAME`.",
        }
