"""A split that asks for an ORCID-linked account, with the whole OAuth dance against a local ORCID.

``OrcidStub`` is a real HTTP server on 127.0.0.1 implementing the three
endpoints allauth's ORCID provider calls: ``/oauth/authorize`` (the person
signs in and is sent back with a code), ``/oauth/token`` (the site trades the
code and its secret for a token and the iD) and ``/v3.0/<iD>/record`` (the
public record). A gunicorn of its own runs with ORCID's keys and
``LEXBOARD_ORCID_URL``/``LEXBOARD_ORCID_API_URL`` pointing at it. Before the
link, an upload to the split is refused with the link to make; after it, the
same upload is accepted. Nothing is mocked.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ORCID_ID = "0000-0002-1825-0097"
CLIENT_ID = "APP-LEXBOARDTEST"
SECRET = "stub-secret"


class OrcidStub(ThreadingHTTPServer):
    """ORCID's authorize, token and record endpoints, answering one person (``ORCID_ID``)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.codes: dict[str, str] = {}  # code -> redirect_uri it was given for
        self.calls: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: OrcidStub

    def log_message(self, *args) -> None:  # quiet: the test reads ``calls``
        pass

    def _json(self, status: int, payload: dict) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        self.server.calls.append(f"GET {url.path}")
        if url.path == "/oauth/authorize":
            if query.get("client_id") != CLIENT_ID or query.get("response_type") != "code":
                return self._json(400, {"error": "invalid_request"})
            code = f"code-{len(self.server.codes) + 1}"
            self.server.codes[code] = query["redirect_uri"]
            target = query["redirect_uri"] + "?" + urllib.parse.urlencode({"code": code, "state": query["state"]})
            self.send_response(302)
            self.send_header("Location", target)
            self.end_headers()
            return None
        if url.path == f"/v3.0/{ORCID_ID}/record":
            return self._json(200, {
                "orcid-identifier": {"uri": f"https://orcid.org/{ORCID_ID}", "path": ORCID_ID, "host": "orcid.org"},
                "person": {"name": {"given-names": {"value": "Josiah"}, "family-name": {"value": "Carberry"}},
                           "emails": {"email": []}}})
        return self._json(404, {"error": "not found"})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
        self.server.calls.append(f"POST {self.path}")
        if self.path != "/oauth/token":
            return self._json(404, {"error": "not found"})
        redirect = self.server.codes.pop(form.get("code", ""), None)
        if (form.get("client_id"), form.get("client_secret")) != (CLIENT_ID, SECRET) or redirect is None \
                or form.get("redirect_uri") != redirect or form.get("grant_type") != "authorization_code":
            return self._json(400, {"error": "invalid_grant"})
        return self._json(200, {"access_token": "stub-token", "token_type": "bearer", "refresh_token": "r",
                                "expires_in": 3600, "scope": "/authenticate", "name": "Josiah Carberry",
                                "orcid": ORCID_ID})


@pytest.fixture
def orcid_stub():
    stub = OrcidStub()
    thread = threading.Thread(target=stub.serve_forever, daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        stub.shutdown()
        stub.server_close()


@pytest.fixture
def orcid_site(transactional_db, orcid_stub, private_data_dir, worker_queue, private_run_storage, tmp_path):
    """A gunicorn with ORCID sign-in configured against the stub, on the test database."""
    from django.conf import settings
    from django.db import connection

    from tests.fixtures_site import serve_site
    from tests.fixtures_worker import database_url

    with serve_site(database_url=database_url(connection.settings_dict), data_dir=private_data_dir,
                    worker_queue=worker_queue, var_dir=settings.VAR_DIR, folder=tmp_path,
                    LEXBOARD_ORCID_CLIENT_ID=CLIENT_ID, LEXBOARD_ORCID_SECRET=SECRET,
                    LEXBOARD_ORCID_URL=orcid_stub.url, LEXBOARD_ORCID_API_URL=orcid_stub.url) as site:
        yield site


@pytest.fixture
def orcid_split(transactional_db):
    from catalogue.models import Benchmark, Dataset, Split, Topic
    from catalogue.services import corpus_set, qrels_version_add

    bench = Benchmark.objects.create(slug="orcid-bench", name="ORCID benchmark")
    ds = Dataset.objects.create(benchmark=bench, slug="orcid", name="ORCID", language="fr", docid_example="d1",
                                measures=["R@10"], primary_measure="R@10")
    corpus_set(dataset=ds, ids=[f"d{i}" for i in range(1, 11)])
    split = Split.objects.create(dataset=ds, name="test", kind="test", hidden=True, min_coverage=0,
                                 orcid_required=True, daily_limit=0, total_limit=0)
    Topic.objects.create(split=split, qid="q1", text="Question one?")
    qrels_version_add(split=split, qrels={"q1": {"d1": 1}})
    return split


def _upload(site, token: str) -> requests.Response:
    files = {"run_file": ("run.txt", b"q1 Q0 d1 1 1.0 mine\n", "text/plain")}
    return requests.post(f"{site.url}/api/v1/submissions/", headers={"Authorization": f"Token {token}"},
                         data={"dataset": "orcid", "split": "test", "system_name": "mine"}, files=files, timeout=30)


def test_an_orcid_linked_account_is_required_and_linking_one_through_orcid_lifts_the_refusal(
        orcid_site, orcid_stub, orcid_split, alice):
    from allauth.socialaccount.models import SocialAccount
    from django.conf import settings
    from django.test import Client

    from accounts.models import ApiToken

    _, token = ApiToken.issue(user=alice)
    refused = _upload(orcid_site, token)
    assert refused.status_code == 403, refused.text
    assert "needs an account linked to an ORCID iD" in refused.text
    assert "/accounts/orcid/login/?process=connect" in refused.text

    # Alice links her iD: the site sends her to ORCID, ORCID back with a code, the site trades it for her iD.
    client = Client()
    client.force_login(alice)
    browser = requests.Session()
    browser.cookies.set(settings.SESSION_COOKIE_NAME, client.cookies[settings.SESSION_COOKIE_NAME].value)
    start = f"{orcid_site.url}/accounts/orcid/login/?process=connect"
    assert "/accounts/orcid/login/?process=connect" in browser.get(f"{orcid_site.url}/accounts/profile/", timeout=30).text
    page = browser.get(start, timeout=30)
    assert page.status_code == 200, page.text[-2000:]
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    done = browser.post(start, data={"csrfmiddlewaretoken": csrf}, headers={"Referer": start}, timeout=30)
    assert done.status_code == 200, done.text[-2000:]
    assert orcid_stub.calls == ["GET /oauth/authorize", "POST /oauth/token", f"GET /v3.0/{ORCID_ID}/record"]
    linked = SocialAccount.objects.get(provider="orcid")
    assert linked.user_id == alice.pk and linked.uid == ORCID_ID

    accepted = _upload(orcid_site, token)
    assert accepted.status_code == 202, accepted.text
    profile = browser.get(f"{orcid_site.url}/accounts/profile/", timeout=30).text
    assert f'href="https://orcid.org/{ORCID_ID}"' in profile  # the profile shows the linked iD
