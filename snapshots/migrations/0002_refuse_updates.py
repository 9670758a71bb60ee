"""The database refuses an UPDATE of a snapshot row, whatever code (or raw SQL) sends it.

DELETE is refused by the model, its manager and the protected foreign keys; not here, so that a test
database can still be emptied between tests (SQLite's flush deletes rows one table at a time).
"""

from django.db import migrations

_SQLITE = (
    "CREATE TRIGGER snapshots_snapshot_immutable BEFORE UPDATE ON snapshots_snapshot "
    "BEGIN SELECT RAISE(ABORT, 'a snapshot cannot be changed once it is made'); END;"
)
_POSTGRES = (
    "CREATE OR REPLACE FUNCTION snapshots_snapshot_immutable() RETURNS trigger AS $$ "
    "BEGIN RAISE EXCEPTION 'a snapshot cannot be changed once it is made'; END; $$ LANGUAGE plpgsql; "
    "CREATE TRIGGER snapshots_snapshot_immutable BEFORE UPDATE ON snapshots_snapshot "
    "FOR EACH ROW EXECUTE FUNCTION snapshots_snapshot_immutable();"
)
_DROP = {
    "sqlite": "DROP TRIGGER IF EXISTS snapshots_snapshot_immutable;",
    "postgresql": "DROP TRIGGER IF EXISTS snapshots_snapshot_immutable ON snapshots_snapshot; "
                  "DROP FUNCTION IF EXISTS snapshots_snapshot_immutable();",
}


def forwards(apps, schema_editor):
    sql = {"sqlite": _SQLITE, "postgresql": _POSTGRES}.get(schema_editor.connection.vendor)
    if sql:
        schema_editor.execute(sql)


def backwards(apps, schema_editor):
    sql = _DROP.get(schema_editor.connection.vendor)
    if sql:
        schema_editor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [("snapshots", "0001_initial")]

    operations = [migrations.RunPython(forwards, backwards)]
