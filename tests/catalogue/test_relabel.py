"""A database built by the code of 6 December 2026, before the app labels became their packages' names, migrated
by today's code (#40): every row kept, content types, permissions and admin history follow, and it happens once.

The old code is the repository's own commit ``BEFORE`` (``git archive``, run with this checkout's virtualenv):
it migrates a new database and loads the demo, and gives a curator a permission of the catalogue, a group a
permission of the shared tasks and the admin's history an entry about a dataset. Today's ``manage.py migrate``
then runs on the same database (catalogue/relabel.py, catalogue/management/commands/migrate.py), on SQLite and,
when the suite runs on PostgreSQL, on a PostgreSQL database of its own.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest
from django.conf import settings

pytestmark = pytest.mark.slow  # > 2 s (docs/testing.md): the old code migrates and loads the demo

ROOT = Path(__file__).resolve().parents[2]
#: main before the labels changed (the merge of #37's noisy margin and the registry test, 6 December 2026)
BEFORE = "8a6eb60"
RENAMED = {"leaderboard_": "catalogue_", "sharedtasks_": "campaigns_"}

SEED = """
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth.models import Group, Permission, User
from django.contrib.contenttypes.models import ContentType
from catalogue.models import Dataset

curator = User.objects.create_user("curator-before", password="!", is_staff=True)
curator.user_permissions.add(Permission.objects.get(content_type__app_label="leaderboard", codename="change_dataset"))
organisers = Group.objects.create(name="organisers-before")
organisers.permissions.add(Permission.objects.get(content_type__app_label="sharedtasks", codename="change_phase"))
curator.groups.add(organisers)
dataset = Dataset.objects.order_by("pk").first()
LogEntry.objects.create(user=curator, content_type=ContentType.objects.get_for_model(Dataset), object_id=str(dataset.pk),
                        object_repr=str(dataset), action_flag=CHANGE, change_message="before the labels changed")
"""

COUNTS = """
import json
from django.db import connection
with connection.cursor() as cursor:
    counts = {}
    for table in connection.introspection.table_names():
        cursor.execute(f"SELECT COUNT(*) FROM {connection.ops.quote_name(table)}")
        counts[table] = cursor.fetchone()[0]
print(json.dumps(counts))
"""

AFTER = """
import json
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.contrib.contenttypes.models import ContentType
from django.db import connection
curator = User.objects.get(username="curator-before")
entry = LogEntry.objects.get(change_message="before the labels changed")
with connection.cursor() as cursor:
    cursor.execute("SELECT DISTINCT app FROM django_migrations")
    recorded = sorted(row[0] for row in cursor.fetchall())
print(json.dumps({
    "perms": sorted(curator.get_all_permissions()),
    "entry": entry.content_type.app_label + "." + entry.content_type.model,
    "entry_object": entry.get_edited_object().slug,
    "labels": sorted(set(ContentType.objects.values_list("app_label", flat=True))),
    "recorded": recorded,
}))
"""


def manage(tree: Path, env: dict, *args: str) -> str:
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=tree, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def shell(tree: Path, env: dict, code: str) -> object:
    return json.loads(manage(tree, env, "shell", "-c", code).strip().splitlines()[-1])


@pytest.fixture(scope="module")
def old_tree(tmp_path_factory) -> Path:
    tree = tmp_path_factory.mktemp("before") / "lexboard"
    tree.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", BEFORE], capture_output=True)
    if archive.returncode != 0:
        pytest.skip(f"commit {BEFORE} is not in this clone (a shallow clone?): {archive.stderr.decode()[:200]}")
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    return tree


def backends() -> list[str]:
    return ["sqlite", "postgresql"] if settings.DATABASES["default"]["ENGINE"].endswith("postgresql") else ["sqlite"]


@pytest.fixture(params=backends())
def database(request, tmp_path):
    """(DATABASE_URL of a new database of its own, its var folder)."""
    var = tmp_path / "var"
    if request.param == "sqlite":
        yield f"sqlite:///{var / 'before.sqlite3'}", var
        return
    default = settings.DATABASES["default"]
    name = f"lex_relabel_{uuid.uuid4().hex[:8]}"
    server = f"postgres://{default['USER']}@{default['HOST'] or '127.0.0.1'}:{default['PORT'] or 5432}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{server}/{name}", var
    finally:
        with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        shutil.rmtree(var, ignore_errors=True)


def test_a_database_of_the_old_labels_keeps_every_row_and_its_permissions_follow(old_tree, database):
    url, var = database
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DJANGO_", "LEXBOARD_")) and k not in ("CELERY_BROKER_URL", "CACHE_URL")}
    env.update(DATABASE_URL=url, LEXBOARD_VAR_DIR=str(var), DJANGO_SETTINGS_MODULE="lexboard.settings")
    manage(old_tree, env, "migrate", "--noinput", "-v", "0")
    manage(old_tree, env, "load_demo")
    shell(old_tree, env, SEED + "\nprint('null')")
    before = shell(old_tree, env, COUNTS)
    assert isinstance(before, dict) and before["leaderboard_dataset"] > 0 and before["submissions_submission"] > 0

    out = manage(ROOT, env, "migrate", "--noinput")
    assert "Relabelled: app label leaderboard -> catalogue" in out and "sharedtasks -> campaigns" in out, out
    after = shell(ROOT, env, COUNTS)
    assert isinstance(after, dict)
    expected = {}
    for table, count in before.items():
        if table == "django_migrations":  # grows by today's new migrations
            continue
        prefix = next((old for old in RENAMED if table.startswith(old)), None)
        expected[RENAMED[prefix] + table[len(prefix):] if prefix else table] = count
    assert {t: after.get(t) for t in expected} == expected  # every table, every row
    assert not [t for t in after if t.startswith(tuple(RENAMED))]
    assert after["django_migrations"] > before["django_migrations"]

    state = shell(ROOT, env, AFTER)
    assert isinstance(state, dict)
    assert {"catalogue.change_dataset", "campaigns.change_phase"} <= set(state["perms"])
    assert state["entry"] == "catalogue.dataset" and state["entry_object"]
    assert "leaderboard" not in state["labels"] and "sharedtasks" not in state["labels"]
    assert {"catalogue", "campaigns"} <= set(state["labels"])
    assert "leaderboard" not in state["recorded"] and "sharedtasks" not in state["recorded"]

    again = manage(ROOT, env, "migrate", "--noinput")  # once: the second time there is nothing to move
    assert "Relabelled" not in again and "No migrations to apply" in again


ARCHIVED_COUNTS = """
import json
from django.apps import apps
labels = ["catalogue.Dataset", "catalogue.Split", "catalogue.QrelsVersion", "submissions.Submission",
          "submissions.Result"]
print(json.dumps({label: apps.get_model(label)._base_manager.count() for label in labels}))
"""


def test_an_archive_the_old_code_wrote_imports_here(old_tree, tmp_path):
    """Format 1 (records under the labels of that time) is read by today's importer, hidden material included."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DJANGO_", "LEXBOARD_")) and k not in ("CELERY_BROKER_URL", "CACHE_URL")}
    env.update(DJANGO_SETTINGS_MODULE="lexboard.settings")
    old = {**env, "DATABASE_URL": f"sqlite:///{tmp_path / 'old' / 'db.sqlite3'}", "LEXBOARD_VAR_DIR": str(tmp_path / "old")}
    new = {**env, "DATABASE_URL": f"sqlite:///{tmp_path / 'new' / 'db.sqlite3'}", "LEXBOARD_VAR_DIR": str(tmp_path / "new")}
    archive, key = tmp_path / "demo-format-1.tar.gz", tmp_path / "archive.key"
    manage(old_tree, old, "migrate", "--noinput", "-v", "0")
    manage(old_tree, old, "load_demo")
    manage(old_tree, old, "export_benchmark", "--generate-key", str(key))
    manage(old_tree, old, "export_benchmark", "demo", "-o", str(archive), "--key-file", str(key))
    manifest = json.loads(subprocess.run(["tar", "-xzOf", str(archive), "manifest.json"], capture_output=True,
                                         check=True).stdout)
    assert manifest["format_version"] == 1 and "leaderboard" in manifest["schema"]
    written = {m["label"]: m["records"] for m in manifest["models"]}

    manage(ROOT, new, "migrate", "--noinput", "-v", "0")
    manage(ROOT, new, "import_benchmark", str(archive), "--key-file", str(key))
    counts = shell(ROOT, new, ARCHIVED_COUNTS)
    assert isinstance(counts, dict)
    for label, count in counts.items():
        then = written.get(label, written.get(label.replace("catalogue.", "leaderboard.")))
        assert count == then, (label, count, then)
