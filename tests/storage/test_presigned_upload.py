"""A run too large for the proxy goes straight to object storage: a presigned POST, then the upload names its key.

moto's server is the bucket (a real process, boto3 unpatched); the file is POSTed to the slot's address with its
signed form fields over HTTP by urllib, as any client would; the upload that names the key gets the same checks
and storage as any other. The slot itself is an upload's door (issue #36): given only where an upload would be
taken, throttled like one, bounded in size by its signed policy and again at completion, one submission at most,
and nothing of it left in the bucket once it is used, refused or expired.

moto does not enforce a POST policy's conditions (it stores what it is sent): the storage's own refusal of a body
larger than ``content-length-range`` is AWS's and MinIO's; here the signed policy is read back, and the size check
at completion refuses (and removes) what a storage that enforced nothing accepted.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
import uuid
from datetime import timedelta

import pytest
from allauth.account.models import EmailAddress
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.terms import terms_accept
from catalogue.models import Split
from catalogue.services import data_terms_publish
from submissions.models import Submission, UploadSlot
from submissions.services import presigned, submission_score_now
from submissions.tasks import sweep_upload_slots
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


def ask_slot(api, name="bm25.trec", *, dataset="tiny", split="dev", **extra):
    return api.post("/api/v1/uploads/", {"file_name": name, "dataset": dataset, "split": split}, format="json",
                    **extra)


def slot(api, name="bm25.trec", **kwargs) -> dict:
    response = ask_slot(api, name, **kwargs)
    assert response.status_code == 201, response.content
    return response.json()


def form_body(fields: dict, data: bytes) -> tuple[str, bytes]:
    """The slot's fields, then the file as the last field (S3 reads no field after it)."""
    boundary = f"lexboard-test-{uuid.uuid4().hex}"
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
             for k, v in fields.items()]
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="run"\r\n'
                 "Content-Type: application/octet-stream\r\n\r\n".encode() + data + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return f"multipart/form-data; boundary={boundary}", b"".join(parts)


def send(given: dict, data: bytes) -> None:
    """As a browser form or ``curl -F`` does: POST the signed fields and the file to the slot's address."""
    ctype, body = form_body(given["upload_fields"], data)
    request = urllib.request.Request(given["upload_url"], data=body, method="POST", headers={"Content-Type": ctype})
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status in (200, 201, 204)


def upload(api, key: str, *, split="dev"):
    return api.post("/api/v1/submissions/from-upload", {"dataset": "tiny", "split": split, "system_name": "big",
                                                        "upload_key": key}, format="json")


def incoming(bucket) -> list[str]:
    return bucket.keys("private/incoming/")


def test_a_run_sent_to_a_slot_is_checked_stored_and_scored(api, alice, tiny_dataset, s3_run_storage):
    given = slot(api)
    assert given["upload_key"].startswith(f"incoming/{alice.pk}/") and "policy" in given["upload_fields"]
    send(given, run_bytes(PERFECT))
    response = upload(api, given["upload_key"])
    assert response.status_code == 202, response.content
    submission = submission_score_now(response.json()["id"])
    assert submission.status == Submission.Status.SCORED and submission.original_name == "bm25.trec"
    assert submission.results.get().scores["R@10"] == 1.0
    assert UploadSlot.objects.get().submission == submission
    keys = s3_run_storage.keys()
    assert not [k for k in keys if "/incoming/" in k], keys  # the incoming object is removed once copied
    assert [k for k in keys if k.startswith("private/")], keys


def test_a_key_not_yours_or_not_uploaded_is_refused(api, bob, tiny_dataset, s3_run_storage):
    given = slot(api)
    other = token_client(bob)
    send(given, run_bytes(PERFECT))
    response = upload(other, given["upload_key"])
    assert response.status_code == 400 and "not one this site gave you" in response.json()["error"]["message"]
    empty = slot(api)
    response = upload(api, empty["upload_key"])
    assert response.status_code == 400 and "Nothing was uploaded" in response.json()["error"]["message"]
    assert not Submission.objects.exists()
    send(empty, run_bytes(PERFECT))  # the slot stayed open: sent now, it is taken
    assert upload(api, empty["upload_key"]).status_code == 202


def test_a_bad_file_in_the_bucket_is_refused_with_its_lines_and_removed(api, tiny_dataset, s3_run_storage):
    given = slot(api, "broken.trec")
    send(given, b"q1 Q0 d1 1 notanumber run\n")
    response = upload(api, given["upload_key"])
    assert response.status_code == 400 and response.json()["error"]["details"][0]["line"] == 1
    assert incoming(s3_run_storage) == []
    assert UploadSlot.objects.get().state == UploadSlot.State.REFUSED


def test_without_object_storage_there_is_no_slot(api, tiny_dataset):
    response = ask_slot(api, "run.trec")
    assert response.status_code == 409 and "run_file" in response.json()["error"]["message"]
    assert api.get("/api/v1/uploads/").status_code == 409
    response = upload(api, "incoming/1/" + "0" * 32 + "/run.trec")
    assert response.status_code == 409
    assert not UploadSlot.objects.exists()


# --- the slot is an upload's door: the same checks, the same throttle ---------------------------------------------


def _direct(api, *, split: str):
    return api.post("/api/v1/submissions/", {"dataset": "tiny", "split": split, "system_name": "direct",
                                             "run_file": SimpleUploadedFile("run.trec", run_bytes(PERFECT))},
                    format="multipart")


def _same_refusal(api, *, split: str, status: int, words: str) -> None:
    """The slot is refused as a direct upload to the split is, with the same message, and no slot is made."""
    before = UploadSlot.objects.count()
    refused, direct = ask_slot(api, split=split), _direct(api, split=split)
    assert refused.status_code == direct.status_code == status, (refused.content, direct.content)
    assert refused.json()["error"]["message"] == direct.json()["error"]["message"]
    assert words in refused.json()["error"]["message"]
    assert UploadSlot.objects.count() == before


def test_a_slot_only_for_an_account_that_may_upload_to_the_split_now(tiny_dataset, s3_run_storage, django_user_model,
                                                                     alice, own_cache_namespace):
    unverified = django_user_model.objects.create_user("mallory", "mallory@example.org", "correct horse battery")
    EmailAddress.objects.create(user=unverified, email=unverified.email, primary=True, verified=False)
    # The hidden split asks a verified address: no slot before the link is clicked.
    _same_refusal(token_client(unverified), split="test", status=403, words="mallory@example.org")
    api = token_client(alice)
    # The data terms not accepted: no slot.
    data_terms_publish(dataset=tiny_dataset, title="Tiny licence", text="Research use only.")
    _same_refusal(api, split="dev", status=403, words="Tiny licence")
    terms_accept(user=alice, dataset=tiny_dataset, version=1)
    # The split closed: no slot.
    Split.objects.filter(dataset=tiny_dataset, name="dev").update(accepts_submissions=False)
    _same_refusal(api, split="dev", status=409, words="does not accept submissions")
    Split.objects.filter(dataset=tiny_dataset, name="dev").update(accepts_submissions=True, daily_limit=1)
    # The quota used up: no slot.
    assert _direct(api, split="dev").status_code == 202
    _same_refusal(api, split="dev", status=429, words="")
    assert incoming(s3_run_storage) == []


def test_slots_are_throttled_per_account_and_per_ipv6_64_and_held_few_at_a_time(tiny_dataset, s3_run_storage, alice,
                                                                                 bob, settings, own_cache_namespace):
    settings.LEXBOARD_UPLOAD_RATE = "3/h"
    settings.LEXBOARD_UPLOAD_NETWORK_RATE = "4/h"
    settings.LEXBOARD_UPLOAD_OPEN_SLOTS = 0
    a, b = token_client(alice), token_client(bob)
    here = {"REMOTE_ADDR": "2001:db8:36:4::1"}
    assert [ask_slot(a, **here).status_code for _ in range(4)] == [201, 201, 201, 429]  # per account
    # bob, from another address of the same /64: its network has one slot left (bob's own budget has three).
    there = {"REMOTE_ADDR": "2001:db8:36:4:ffff::2"}
    assert [ask_slot(b, **there).status_code for _ in range(2)] == [201, 429]
    assert ask_slot(b, REMOTE_ADDR="2001:db8:36:5::1").status_code == 201  # the next /64 is another client
    assert UploadSlot.objects.count() == 5
    # A few slots at a time per account, used or not, until their hour is over (a spent slot's key still takes a
    # file until then: the policy cannot be revoked).
    settings.LEXBOARD_UPLOAD_RATE = settings.LEXBOARD_UPLOAD_NETWORK_RATE = "0/h"
    settings.LEXBOARD_UPLOAD_OPEN_SLOTS = 3
    assert ask_slot(b).status_code == 201
    UploadSlot.objects.filter(user=bob).update(state=UploadSlot.State.REFUSED)
    response = ask_slot(b)
    assert response.status_code == 429, response.content
    assert "3 upload slots whose address is still valid" in response.json()["error"]["message"]
    assert response["Retry-After"]
    UploadSlot.objects.filter(user=bob).update(expires_at=timezone.now())  # their hour over: a slot again
    assert ask_slot(b).status_code == 201


# --- the size bound: signed into the policy, checked again at completion ---------------------------------------


def test_the_slot_signs_its_size_bound_and_the_completion_refuses_and_removes_a_larger_file(
        api, tiny_dataset, s3_run_storage, settings):
    settings.LEXBOARD_MAX_UPLOAD_BYTES = 1000
    given = slot(api)
    assert given["max_bytes"] == 1000
    policy = json.loads(base64.b64decode(given["upload_fields"]["policy"]))
    assert ["content-length-range", 1, 1000] in policy["conditions"]
    assert {"key": "private/" + given["upload_key"]} in policy["conditions"]
    expires = timezone.datetime.fromisoformat(policy["expiration"].replace("Z", "+00:00"))
    assert timedelta(minutes=59) < expires - timezone.now() <= timedelta(hours=1)
    assert api.get("/api/v1/uploads/").json()["max_bytes"] == 1000
    # A storage that enforced nothing (moto) took 2000 bytes: the completion reads the size the bucket holds.
    send(given, run_bytes(PERFECT) + b"#" * 2000)
    response = upload(api, given["upload_key"])
    assert response.status_code == 400, response.content
    message = response.json()["error"]["message"]
    assert "the limit is 1,000 bytes" in message and "removed" in message
    assert incoming(s3_run_storage) == [] and not Submission.objects.exists()


# --- one slot, one submission ------------------------------------------------------------------------------------


def test_one_slot_makes_one_submission(api, tiny_dataset, s3_run_storage):
    given = slot(api)
    send(given, run_bytes(PERFECT))
    first = upload(api, given["upload_key"])
    assert first.status_code == 202
    send(given, run_bytes(PERFECT) + b"# another run\n")  # the policy still signs a second body until its hour
    again = upload(api, given["upload_key"])
    assert again.status_code == 409, again.content
    assert f"already made submission {first.json()['id']}" in again.json()["error"]["message"]
    assert Submission.objects.count() == 1
    presigned.slots_sweep()  # the second body is gone at the next sweep
    assert incoming(s3_run_storage) == []


def test_a_completion_while_another_is_making_the_submission_is_refused(api, tiny_dataset, s3_run_storage,
                                                                       monkeypatch):
    given = slot(api)
    send(given, run_bytes(PERFECT))
    second = []
    make = presigned.submission_create

    def racing(**kwargs):  # the second request arrives while the first is inside submission_create
        second.append(upload(api, given["upload_key"]))
        return make(**kwargs)

    monkeypatch.setattr(presigned, "submission_create", racing)
    first = upload(api, given["upload_key"])
    assert first.status_code == 202, first.content
    assert second[0].status_code == 409 and "Another request" in second[0].json()["error"]["message"]
    assert Submission.objects.count() == 1


def test_a_slot_names_one_submission_in_the_database_too(api, alice, tiny_dataset, s3_run_storage):
    given = slot(api)
    send(given, run_bytes(PERFECT))
    submission = Submission.objects.get(pk=upload(api, given["upload_key"]).json()["id"])
    other = UploadSlot.objects.create(key="incoming/x", user=alice, split=submission.split, max_bytes=1,
                                      expires_at=timezone.now())
    with pytest.raises(IntegrityError), transaction.atomic():
        UploadSlot.objects.filter(pk=other.pk).update(submission=submission)


# --- nothing left behind --------------------------------------------------------------------------------------


def test_nothing_is_left_behind_after_refusal_expiry_and_the_sweep(api, alice, tiny_dataset, s3_run_storage,
                                                                   settings):
    settings.LEXBOARD_UPLOAD_OPEN_SLOTS = 4
    refused, unused, never, late = (slot(api, f"{name}.trec") for name in ("refused", "unused", "never", "late"))
    send(refused, b"not a run\n")
    assert upload(api, refused["upload_key"]).status_code == 400
    assert incoming(s3_run_storage) == []  # removed at the refusal, not at the sweep
    send(unused, run_bytes(PERFECT))
    send(late, run_bytes(PERFECT))
    orphan = f"private/incoming/{alice.pk}/{'f' * 32}/nobody.trec"  # an object no slot names
    s3_run_storage.client.put_object(Bucket=s3_run_storage.name, Key=orphan, Body=b"x")
    assert sweep_upload_slots() == {"expired": 0, "removed": 1}  # open slots keep their objects
    assert len(incoming(s3_run_storage)) == 2
    # The hour and the completion's grace over: the late completion is refused and its file removed at once...
    past = timezone.now() - timedelta(seconds=presigned.SLOT_SECONDS + presigned.COMPLETE_GRACE_SECONDS + 1)
    UploadSlot.objects.filter(key__in=[unused["upload_key"], late["upload_key"], never["upload_key"]]).update(
        created_at=past, expires_at=past + timedelta(seconds=presigned.SLOT_SECONDS))
    response = upload(api, late["upload_key"])
    assert response.status_code == 409 and "expired" in response.json()["error"]["message"]
    assert len(incoming(s3_run_storage)) == 1
    # ... and the sweep expires the unused ones and removes what they hold.
    assert sweep_upload_slots() == {"expired": 2, "removed": 1}
    assert incoming(s3_run_storage) == []
    assert set(UploadSlot.objects.values_list("state", flat=True)) == {"refused", "expired"}
    assert settings.CELERY_BEAT_SCHEDULE["sweep-upload-slots"]["task"] == "submissions.sweep_upload_slots"




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
