"""``manage.py ensure_local_admin``: a superuser ``admin`` for a local install, made once.

The password is random and printed only when the account is created (the run
command calls this at every start); an existing account is never changed, so
a password the owner set stays theirs.
"""

from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import IntegrityError, transaction


class Command(BaseCommand):
    help = "Create the local superuser 'admin' with a random password (printed once); never overwrite it."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="admin")
        parser.add_argument(
            "--url",
            default=settings.LEXBOARD_SITE_URL.rstrip("/") + "/admin/",
            help="the admin login URL to print (default: LEXBOARD_SITE_URL's /admin/)",
        )

    def handle(self, *args, **opts):
        User = get_user_model()
        username = opts["username"]
        if User.objects.filter(username=username).exists():
            self.stdout.write(f"{username} account exists (password printed at first run)")
            return
        password = secrets.token_urlsafe(12)
        try:
            with transaction.atomic():
                User.objects.create_superuser(username, f"{username}@localhost", password)
        except IntegrityError:  # another process created it at the same moment
            self.stdout.write(f"{username} account exists (password printed at first run)")
            return
        self.stdout.write(self.style.SUCCESS("created the local admin account — it is printed only this once:"))
        self.stdout.write(f"  login:    {opts['url']}")
        self.stdout.write(f"  user:     {username}")
        self.stdout.write(f"  password: {password}")
