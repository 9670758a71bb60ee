"""ensure_local_admin creates the local superuser once and never touches it again."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def test_it_creates_admin_once_and_prints_the_password_once(capsys, client):
    call_command("ensure_local_admin")
    out = capsys.readouterr().out
    password = re.search(r"password: (\S+)", out).group(1)
    assert "http://127.0.0.1:" in out and "/admin/" in out
    admin = get_user_model().objects.get(username="admin")
    assert admin.is_superuser and admin.is_staff and admin.check_password(password)
    assert client.login(username="admin", password=password)

    call_command("ensure_local_admin")
    out = capsys.readouterr().out
    assert out.strip() == "admin account exists (password printed at first run)"
    assert password not in out
    admin.refresh_from_db()
    assert admin.check_password(password)


def test_it_never_overwrites_an_existing_account(capsys):
    user = get_user_model().objects.create_user("admin", password="chosen by the owner")
    call_command("ensure_local_admin")
    user.refresh_from_db()
    assert user.check_password("chosen by the owner") and not user.is_superuser
    assert "exists" in capsys.readouterr().out
