"""A run too large for the proxy goes straight to object storage: a presigned PUT, then the upload names its key.

moto's server is the bucket (a real process, boto3 unpatched); the file is PUT to the presigned address over HTTP
by urllib, as any client would; the upload that names the key gets the same checks and storage as any other.
"""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest
from rest_framework.test import APIClient

from submissions.models import Submission
from submissions.services import submission_score_now
from tests.api.conftest import PERFECT, run_bytes

pytestmark = [pytest.mark.e2e, pytest.mark.django_db]


def token_client(user) -> APIClient:
    from accounts.models import ApiToken

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=user, name='t')[1]}")
    return client


@pytest.fixture
def api(alice, own_cache_namespace, private_run_storage):
    return token_client(alice)


def slot(api, name="bm25.trec") -> dict:
    response = api.post("/api/v1/uploads/", {"file_name": name}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def put(url: str, data: bytes) -> None:
    """As ``curl --upload-file`` does: the bytes, no content type (urllib would call them a form, which S3 signs)."""
    request = urllib.request.Request(url, data=data, method="PUT", headers={"Content-Type": ""})
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200


def upload(api, key: str):
    return api.post("/api/v1/submissions/from-upload", {"dataset": "tiny", "split": "dev", "system_name": "big",
                                                        "upload_key": key}, format="json")


def test_a_run_put_to_a_presigned_address_is_checked_stored_and_scored(api, alice, tiny_dataset, s3_run_storage):
    given = slot(api)
    assert given["upload_key"].startswith(f"incoming/{alice.pk}/") and "Signature=" in given["upload_url"]
    put(given["upload_url"], run_bytes(PERFECT))
    response = upload(api, given["upload_key"])
    assert response.status_code == 202, response.content
    submission = submission_score_now(response.json()["id"])
    assert submission.status == Submission.Status.SCORED and submission.original_name == "bm25.trec"
    assert submission.results.get().scores["R@10"] == 1.0
    keys = s3_run_storage.keys()
    assert not [k for k in keys if "/incoming/" in k], keys  # the incoming object is removed once copied
    assert [k for k in keys if k.startswith("private/")], keys


def test_a_key_not_yours_or_not_uploaded_is_refused(api, bob, tiny_dataset, s3_run_storage):
    given = slot(api)
    other = token_client(bob)
    put(given["upload_url"], run_bytes(PERFECT))
    response = upload(other, given["upload_key"])
    assert response.status_code == 400 and "not one this site gave you" in response.json()["error"]["message"]
    empty = slot(api)
    response = upload(api, empty["upload_key"])
    assert response.status_code == 400 and "Nothing was uploaded" in response.json()["error"]["message"]
    assert not Submission.objects.exists()


def test_a_bad_file_in_the_bucket_is_refused_with_its_lines(api, tiny_dataset, s3_run_storage):
    given = slot(api, "broken.trec")
    put(given["upload_url"], b"q1 Q0 d1 1 notanumber run\n")
    response = upload(api, given["upload_key"])
    assert response.status_code == 400 and response.json()["error"]["details"][0]["line"] == 1


def test_without_object_storage_there_is_no_slot(api, tiny_dataset):
    response = api.post("/api/v1/uploads/", {"file_name": "run.trec"}, format="json")
    assert response.status_code == 409 and "run_file" in response.json()["error"]["message"]
    response = upload(api, "incoming/1/" + "0" * 32 + "/run.trec")
    assert response.status_code == 409




# --- the command-line client: `submit --direct`, and what a 413 says ----------------------------------------------


def cli(*argv):
    import io

    from lexboard_cli import client as lexclient

    out, err = io.StringIO(), io.StringIO()
    code = lexclient.main([str(a) for a in argv], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def run_path(tmp_path):
    path = tmp_path / "big run.trec"  # a space: the slot's file name is made safe by the client
    path.write_bytes(run_bytes(PERFECT))
    return path


@pytest.mark.django_db(transaction=True)
def test_the_client_sends_a_run_direct_to_the_bucket(live_server, alice, tiny_dataset, s3_run_storage, run_path,
                                                     own_cache_namespace, unread_queue):
    from accounts.models import ApiToken

    token = ApiToken.issue(user=alice, name="cli")[1]
    code, out, err = cli("submit", "--direct", "--url", live_server.url, "--token", token, "--dataset", "tiny",
                         "--split", "dev", "--run", run_path, "--system-name", "direct", "--latency-ms", "12.5",
                         "--used-training-data")
    assert code == 0, err
    submission = Submission.objects.get(pk=int(out.split()[1]))
    assert submission.original_name == "big_run.trec" and submission.latency_ms == 12.5
    assert submission.training_data == "train_split"  # the deprecated flag, still taken
    assert submission_score_now(submission.pk).results.get().scores["R@10"] == 1.0
    assert not [k for k in s3_run_storage.keys() if "/incoming/" in k]


@pytest.mark.django_db(transaction=True)
def test_without_object_storage_the_client_says_to_send_it_in_the_body(live_server, alice, tiny_dataset, run_path,
                                                                        private_run_storage, own_cache_namespace,
                                                                        unread_queue):
    from accounts.models import ApiToken

    token = ApiToken.issue(user=alice, name="cli")[1]
    code, _, err = cli("submit", "--direct", "--url", live_server.url, "--token", token, "--dataset", "tiny",
                       "--run", run_path, "--system-name", "direct")
    assert code == 2 and "HTTP 409" in err and "submit without --direct" in err and "run_file" not in err
    assert not Submission.objects.exists()


class BodyLimitProxy:
    """A proxy with a body limit, as nginx's ``client_max_body_size``: a larger request gets nginx's 413 in the
    API's error shape (the message of docker/nginx/lexboard.conf); the others go on to the site."""

    def __init__(self, upstream: str, limit: int):
        import http.server
        import re
        import threading
        from pathlib import Path

        conf = (Path(__file__).resolve().parents[2] / "docker/nginx/lexboard.conf").read_text()
        message = re.search(r'"~\^413 "\s+"([^"]+)"', conf).group(1)
        body413 = (f'{{"error": {{"message": "{message}", "details": [{{"line": null, "reason": "answered by the '
                   'proxy (nginx), not by the application: status 413"}]}}\n').encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def _any(self):
                length = int(self.headers.get("Content-Length") or 0)
                if length > limit:
                    self.rfile.read(length)  # read and dropped, as nginx's lingering close does
                    self.send_response(413)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body413)))
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(body413)
                    return
                data = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                request = urllib.request.Request(upstream + self.path, data=data, headers=headers,
                                                 method=self.command)
                try:
                    with urllib.request.urlopen(request, timeout=30) as response:
                        status, answer, ctype = response.status, response.read(), response.headers["Content-Type"]
                except urllib.error.HTTPError as exc:
                    status, answer, ctype = exc.code, exc.read(), exc.headers["Content-Type"]
                self.send_response(status)
                self.send_header("Content-Type", ctype or "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            do_GET = do_POST = do_PUT = do_PATCH = _any

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def small_proxy(live_server):
    proxy = BodyLimitProxy(live_server.url, limit=200)
    yield proxy
    proxy.close()


@pytest.mark.django_db(transaction=True)
def test_a_413_says_whether_direct_would_take_the_run(small_proxy, alice, tiny_dataset, run_path, s3_bucket,
                                                      private_run_storage, own_cache_namespace, unread_queue):
    from accounts.models import ApiToken

    token = ApiToken.issue(user=alice, name="cli")[1]
    argv = ("submit", "--url", small_proxy.url, "--token", token, "--dataset", "tiny", "--split", "dev",
            "--run", run_path, "--system-name", "too big for the proxy")
    # No object storage here: --direct cannot help, and the message says what can.
    code, _, err = cli(*argv)
    assert code == 2 and "HTTP 413" in err and "larger than the 210 MiB" in err
    assert "no object storage for large runs (so --direct cannot help)" in err
    # With the runs in the bucket: the same command with --direct.
    from storages.backends.s3 import S3Storage

    field = Submission._meta.get_field("run_file")
    saved, field.storage = field.storage, S3Storage(
        bucket_name=s3_bucket.name, endpoint_url=s3_bucket.endpoint, region_name="us-east-1",
        addressing_style="path", default_acl="private", file_overwrite=False, location="private")
    try:
        code, _, err = cli(*argv)
        assert code == 2 and "HTTP 413" in err and "run the same command with --direct" in err
        code, out, err = cli(*argv, "--direct")
        assert code == 0, err
    finally:
        field.storage = saved
    assert Submission.objects.count() == 1
