"""Wait until the database answers; with --migrate, apply migrations under a lock.

With --migrate and ``LEXBOARD_S3_CREATE_BUCKET=1`` it also creates the
object-storage bucket when it does not exist yet (a fresh MinIO or test S3
server); against AWS, create the bucket yourself and leave this off.

Run by docker/entrypoint.sh before every role, so a container that starts
before PostgreSQL is ready waits instead of crashing in a restart loop. The
PostgreSQL advisory lock lets several web replicas start at once without two
of them migrating at the same time.
"""

from __future__ import annotations

import os
import sys
import time

MIGRATION_LOCK_ID = 7_146_291_005  # any constant shared by every web container of the deployment


def ensure_bucket(*, deadline: float) -> bool:
    """Create the bucket of the "private" storage if missing, waiting for the server to answer."""
    from botocore.exceptions import BotoCoreError, ClientError
    from django.conf import settings
    from django.core.files.storage import storages

    if not settings.LEXBOARD_S3_BUCKET:
        print("wait_for_db: LEXBOARD_S3_CREATE_BUCKET=1 but LEXBOARD_S3_BUCKET is empty", file=sys.stderr)
        return False
    bucket = storages["private"].bucket
    while True:
        try:
            bucket.meta.client.head_bucket(Bucket=bucket.name)
            return True
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchBucket"):
                bucket.create()
                print(f"wait_for_db: created the bucket {bucket.name}", file=sys.stderr)
                return True
            error = exc
        except BotoCoreError as exc:  # the server is not up yet
            error = exc
        if time.monotonic() > deadline:
            print(f"wait_for_db: the object storage did not answer: {error}", file=sys.stderr)
            return False
        print("wait_for_db: waiting for the object storage...", file=sys.stderr)
        time.sleep(2)


def main(argv: list[str]) -> int:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexboard.settings.production")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.db.utils import Error as DatabaseError

    patience = float(os.environ.get("LEXBOARD_DB_WAIT_SECONDS", "90"))
    deadline = time.monotonic() + patience
    while True:
        try:
            connection.ensure_connection()
            break
        except DatabaseError as exc:
            if time.monotonic() > deadline:
                print(f"wait_for_db: the database did not answer within {patience:.0f}s: {exc}", file=sys.stderr)
                return 1
            print("wait_for_db: waiting for the database...", file=sys.stderr)
            connection.close()
            time.sleep(2)

    if "--migrate" in argv and os.environ.get("LEXBOARD_S3_CREATE_BUCKET") == "1":
        if not ensure_bucket(deadline=time.monotonic() + patience):
            return 1

    if "--migrate" in argv:
        postgres = connection.vendor == "postgresql"
        if postgres:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_lock(%s)", [MIGRATION_LOCK_ID])
        try:
            call_command("migrate", interactive=False, verbosity=1)
        finally:
            if postgres:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s)", [MIGRATION_LOCK_ID])
    connection.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
