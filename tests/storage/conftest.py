"""An S3-compatible server for the object-storage tests: moto's standalone server, a real process.

django-storages and boto3 talk HTTP to it exactly as to AWS S3 or MinIO; nothing
in boto3 is patched. ``s3_bucket`` gives each test a fresh bucket,
``s3_run_storage`` stores this process's uploads in it (the web side), and
``s3_worker`` starts a real Celery worker whose settings point at the same
bucket through the environment (``LEXBOARD_S3_*``) and whose local data folder
is empty: it can only score what it reads from the bucket.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass

import pytest

from tests.ports import free_port

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "lexboard-test", "AWS_SECRET_ACCESS_KEY": "lexboard-test-secret",
               "AWS_DEFAULT_REGION": "us-east-1"}



@dataclass
class Bucket:
    endpoint: str
    name: str
    client: object

    def keys(self, prefix: str = "") -> list[str]:
        listing = self.client.list_objects_v2(Bucket=self.name, Prefix=prefix)
        return sorted(item["Key"] for item in listing.get("Contents", []))

    def settings_env(self) -> dict[str, str]:
        """The environment that switches a process's settings to this bucket (lexboard/settings/base.py)."""
        return {"LEXBOARD_S3_BUCKET": self.name, "LEXBOARD_S3_ENDPOINT_URL": self.endpoint,
                "LEXBOARD_S3_REGION": "us-east-1", "LEXBOARD_S3_ADDRESSING_STYLE": "path", **CREDENTIALS}


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory):
    """moto's server on a free port of 127.0.0.1 for the session."""
    pytest.importorskip("moto.server", reason="moto[server] is in requirements-dev.txt")
    port = free_port()
    server = shutil.which("moto_server", path=os.path.dirname(sys.executable)) or shutil.which("moto_server")
    command = [server] if server else [sys.executable, "-m", "moto.server"]
    log_path = tmp_path_factory.mktemp("moto") / "moto.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen([*command, "-H", "127.0.0.1", "-p", str(port)], stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2).close()
            break
        except urllib.error.HTTPError:
            break  # it answers
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"moto's server did not start:\n{log_path.read_text(errors='replace')[-3000:]}") from None
            time.sleep(0.2)
    yield endpoint
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()


@pytest.fixture
def s3_bucket(s3_endpoint, monkeypatch) -> Bucket:
    """A fresh private bucket; the credentials are in this process's environment for boto3."""
    import boto3

    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    name = f"lexboard-test-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=name)
    return Bucket(endpoint=s3_endpoint, name=name, client=client)


@pytest.fixture
def s3_run_storage(s3_bucket, private_data_dir):
    """This process stores and reads runs in the bucket, with the options the settings give the "private" storage.

    The run_file field binds its storage when the model is defined (as in
    ``tests/conftest.py::run_storage_at``), so the field's storage is swapped.
    """
    from storages.backends.s3 import S3Storage

    from submissions.models import Submission

    field = Submission._meta.get_field("run_file")
    saved = field.storage
    field.storage = S3Storage(bucket_name=s3_bucket.name, endpoint_url=s3_bucket.endpoint, region_name="us-east-1",
                              addressing_style="path", default_acl="private", file_overwrite=False,
                              location="private")
    try:
        yield s3_bucket
    finally:
        field.storage = saved


@pytest.fixture
def s3_queue(worker_queue):
    """A queue of these tests' own for the duration: the session's worker (local files) must not take their tasks."""
    from tests.fixtures_worker import send_to

    queue = f"{worker_queue}-s3-{uuid.uuid4().hex[:8]}"
    send_to(queue)
    try:
        yield queue
    finally:
        send_to(worker_queue)


@pytest.fixture
def s3_worker(django_db_setup, django_db_blocker, s3_bucket, s3_queue, tmp_path):
    """A real worker reading runs from the bucket only: its own data folder is empty and stays so."""
    from django.db import connection

    from tests.fixtures_worker import database_url, start_worker

    with django_db_blocker.unblock():
        url = database_url(connection.settings_dict)
    empty = tmp_path / "worker-data-folder"
    empty.mkdir()
    worker = start_worker(database=url, queue=s3_queue, data_dir=empty, log_path=tmp_path / "s3-worker.log",
                          extra_env={**s3_bucket.settings_env(), "LEXBOARD_DATA_DIR": str(empty)})
    worker.data_dir = empty
    yield worker
    worker.stop()
