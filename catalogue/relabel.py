"""A database from before 6 December 2026 carried over to the app labels it has now (#40).

Until then the catalogue's app label was ``leaderboard``, the shared tasks' ``sharedtasks`` and the leaderboards'
(which hold no table) ``boards``; each app's label is now its package's name. A label names three things in the
database: the app's migration history (``django_migrations.app``), its content types (and through their ids its
permissions, group permissions and admin log entries) and, by Django's default, its tables (``<label>_<model>``,
many-to-many tables included). ``relabel`` moves all three for each old label, in one transaction, before
``migrate`` reads the history (``catalogue/management/commands/migrate.py``): the rows stay where they are, ids
and foreign keys with them.

It moves a label only when the database has migrations recorded under the old label and none under the new one,
so it runs once (a new database, or one already moved, is left as it is); the ``leaderboard`` label, which is now
the leaderboards' own, had recorded no migration of theirs at that date. Tested with a database built by the code
of that date (tests/catalogue/test_relabel.py).
"""

from __future__ import annotations

from django.db import transaction
from django.db.backends.base.base import BaseDatabaseWrapper

#: (old label, label now), in the order they are moved.
RELABELLED = (("leaderboard", "catalogue"), ("sharedtasks", "campaigns"))


def relabel(connection: BaseDatabaseWrapper) -> list[str]:
    """Move every old label's history, content types and tables to its label now; what was moved, one line each."""
    tables = connection.introspection.table_names()
    if "django_migrations" not in tables:
        return []  # a new database: migrate creates everything under the labels of now
    moved: list[str] = []
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        for old, new in RELABELLED:
            cursor.execute("SELECT COUNT(*) FROM django_migrations WHERE app = %s", [old])
            (recorded,) = cursor.fetchone()
            cursor.execute("SELECT COUNT(*) FROM django_migrations WHERE app = %s", [new])
            (already,) = cursor.fetchone()
            if not recorded or already:
                continue
            cursor.execute("UPDATE django_migrations SET app = %s WHERE app = %s", [new, old])
            if "django_content_type" in tables:
                cursor.execute("UPDATE django_content_type SET app_label = %s WHERE app_label = %s", [new, old])
            renamed = [(name, new + name[len(old):]) for name in tables if name.startswith(f"{old}_")]
            for before, after in renamed:
                cursor.execute(f"ALTER TABLE {connection.ops.quote_name(before)} "
                               f"RENAME TO {connection.ops.quote_name(after)}")
            moved.append(f"app label {old} -> {new}: {recorded} migrations recorded, {len(renamed)} tables renamed")
    return moved
