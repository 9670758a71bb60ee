"""``python manage.py create_api_token USERNAME [--name NAME]``: print a new API key for scripts.

Only the key goes to standard output, so ``TOKEN=$(python manage.py
create_api_token alice)`` works; what it is for goes to standard error.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from accounts.models import ApiToken


class Command(BaseCommand):
    help = "Create an API token for USERNAME and print its key (shown only this once)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="cli", help="A name to remember where the token is used (default: cli).")

    def handle(self, *args, username: str, name: str, **options):
        User = get_user_model()
        try:
            user = User.objects.get(**{User.USERNAME_FIELD: username})
        except User.DoesNotExist:
            raise CommandError(f"No user called {username!r}. Create it first (sign up, or createsuperuser).") from None
        if not user.is_active:
            raise CommandError(f"The user {username!r} is inactive: its tokens would be refused.")
        token, key = ApiToken.issue(user=user, name=name)
        self.stderr.write(f"Token {token.name!r} ({token.prefix}…) for {username}; the key is shown only once:")
        self.stdout.write(key)
