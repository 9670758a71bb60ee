"""The database cache table of the embedded default (``settings.CACHES`` without ``CACHE_URL``).

Rate-limit counters and cached pages must be shared by every web process, so
without Redis they live in this table. It is created whatever the cache
setting is now, so switching a deployment to the embedded default later needs
no extra command. Reversing leaves the table (it holds nothing to keep).
"""

from django.core.management.commands.createcachetable import Command as CreateCacheTable
from django.db import migrations

TABLE = "lexboard_cache"


def create_cache_table(apps, schema_editor):
    command = CreateCacheTable()
    command.verbosity = 0
    command.create_table(schema_editor.connection.alias, TABLE, dry_run=False)


class Migration(migrations.Migration):
    dependencies = [("accounts", "0001_initial")]

    operations = [migrations.RunPython(create_cache_table, migrations.RunPython.noop, elidable=False)]
