"""Content-Security-Policy and the other security headers, on our pages and the admin."""

from __future__ import annotations

import re

import pytest
from django.test import Client

STRICT = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "frame-ancestors 'none'; base-uri 'self'; form-action 'self'"
)


def _inline_scripts_and_styles(html: str) -> list[str]:
    """What a strict policy would block: inline <script> bodies, style="" attributes, on*= handlers."""
    found = []
    for match in re.finditer(r"<script\b([^>]*)>(.*?)</script>", html, re.S | re.I):
        attrs, body = match.groups()
        if "src=" in attrs or re.search(r"type=[\"']application/(ld\+)?json", attrs):
            continue
        if body.strip():
            found.append(match.group(0)[:120])
    found += [m.group(0) for m in re.finditer(r"<[^>]+\sstyle=\"[^\"]*\"", html)]
    found += [m.group(0)[:120] for m in re.finditer(r"<[^>]+\son[a-z]+=", html, re.I)]
    return found


@pytest.mark.django_db
def test_it_sends_a_strict_content_security_policy_on_the_home_page():
    response = Client().get("/")
    assert response.status_code == 200
    assert response["Content-Security-Policy"] == STRICT
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"


@pytest.mark.django_db
def test_it_serves_the_home_page_without_inline_script_or_style():
    html = Client().get("/").content.decode()
    assert _inline_scripts_and_styles(html) == []


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["leaderboard:docs", "account_login", "account_signup", "account_reset_password", "api:docs"])
def test_it_serves_every_public_page_under_the_strict_policy_without_inline_code(name):
    from django.urls import reverse

    url = reverse(name)
    response = Client().get(url)
    assert response.status_code == 200, url
    assert response["Content-Security-Policy"] == STRICT
    assert _inline_scripts_and_styles(response.content.decode()) == [], url


@pytest.mark.django_db
def test_it_keeps_the_strict_policy_on_the_admin_which_needs_no_inline_script(staff):
    client = Client()
    client.force_login(staff)
    for url in ("/admin/login/", "/admin/", "/admin/auth/user/", f"/admin/auth/user/{staff.pk}/change/"):
        response = client.get(url)
        assert response.status_code in (200, 302), url
        assert response["Content-Security-Policy"] == STRICT, url
        if response.status_code == 200:
            assert _inline_scripts_and_styles(response.content.decode()) == [], url


def test_it_lets_a_view_set_its_own_policy(rf, settings):
    from django.http import HttpResponse

    from lexboard.middleware import ContentSecurityPolicyMiddleware

    def view(request):
        response = HttpResponse("x")
        response["Content-Security-Policy"] = "default-src 'none'"
        return response

    response = ContentSecurityPolicyMiddleware(view)(rf.get("/anything/"))
    assert response["Content-Security-Policy"] == "default-src 'none'"


def test_it_applies_a_per_path_policy_from_settings(rf, settings):
    from django.http import HttpResponse

    from lexboard.middleware import ContentSecurityPolicyMiddleware

    settings.LEXBOARD_CSP_PATH_POLICIES = [("/api/v1/docs/", "default-src 'self'; style-src 'self' 'unsafe-inline'")]
    middleware = ContentSecurityPolicyMiddleware(lambda request: HttpResponse("x"))
    assert "unsafe-inline" in middleware(rf.get("/api/v1/docs/"))["Content-Security-Policy"]
    assert middleware(rf.get("/"))["Content-Security-Policy"] == STRICT
