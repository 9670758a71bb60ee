"""Users from before allauth keep logging in and their API tokens keep working (accounts/0003).

The database is taken back to the state before the data migration, a user
and a token are made there the old way, and the migration is run forward.
"""

import pytest
from django.contrib.auth.hashers import make_password
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.models import ApiToken

BEFORE = ("accounts", "0002_cache_table")
PASSWORD = "an old account's passphrase 1"


def _before() -> list[tuple[str, str]]:
    """Every app at its latest migration, except accounts just before the data migration."""
    graph = MigrationExecutor(connection).loader.graph
    # The move of profiles and tokens into accounts (submissions/0007) depends on accounts/0004: undone too,
    # and so is every migration of any app that depends on one undone (the sandbox's, say): each app goes back
    # to its latest migration that needs none of them, or to none at all.
    before = {"accounts": BEFORE, "submissions": ("submissions", "0006_ladder_release")}
    undone = set()
    for app, name in before.values():
        undone |= set(graph.backwards_plan((app, name))) - {(app, name)}
    targets = []
    for app, name in graph.leaf_nodes():
        if app in before:
            targets.append(before[app])
            continue
        chain = [node for node in graph.forwards_plan((app, name)) if node[0] == app and node not in undone]
        targets.append(chain[-1] if chain else (app, None))
    return targets


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return MigrationExecutor(connection)


@pytest.mark.slow  # > 2 s (docs/testing.md)
@pytest.mark.django_db(transaction=True)
def test_an_old_user_and_token_work_after_the_migration(client):
    targets = _before()
    executor = _migrate(targets)
    old = executor.loader.project_state([t for t in targets if t[1]]).apps
    User = old.get_model("auth", "User")
    user = User.objects.create(username="olduser", email="Old.User@Example.org", password=make_password(PASSWORD))
    twin = User.objects.create(username="oldtwin", email="old.user@example.org", password=make_password(PASSWORD))
    User.objects.create(username="nomail", email="", password=make_password(PASSWORD))
    old.get_model("submissions", "Profile").objects.create(user_id=user.pk, display_name="Old User")
    key = "lxb_an-old-token-made-before-allauth-0123456789"
    old.get_model("submissions", "ApiToken").objects.create(
        user_id=user.pk, name="script", prefix=key[:12], key_hash=ApiToken.hash_key(key))

    _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    from allauth.account.models import EmailAddress

    address = EmailAddress.objects.get(user_id=user.pk)
    assert (address.email, address.primary, address.verified) == ("old.user@example.org", True, False)
    assert not EmailAddress.objects.filter(user_id=twin.pk).exists()  # one account per mailbox
    assert EmailAddress.objects.count() == 1

    response = client.post(reverse("account_login"), {"login": "olduser", "password": PASSWORD})
    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(user.pk)
    assert client.get(reverse("accounts:profile")).status_code == 200
    client.logout()
    response = client.post(reverse("account_login"), {"login": "old.user@example.org", "password": PASSWORD})
    assert response.status_code == 302

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    response = api.get(reverse("api:submissions"), {"mine": 1})
    assert response.status_code == 200
